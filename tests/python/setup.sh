#!/bin/sh
# Keeps what tests/test_python.c needs, outside the repository, once: the wheels of
# tests/python/requirements.txt (setuptools, wheel, pytest and what pytest needs),
# downloaded from PyPI into ${MNEMO_JS_CACHE:-$HOME/.cache/mnemo-test}/python/wheels,
# and the path of the Python interpreter to make virtual environments with
# (MNEMO_TEST_PYTHON, default python3; it needs the venv module: Debian python3-venv).
# Idempotent: a second run checks the stamp and returns. Prints the cache folder.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${MNEMO_JS_CACHE:-${HOME:?}/.cache/mnemo-test}/python
py=${MNEMO_TEST_PYTHON:-python3}
req="$here/requirements.txt"
stamp="$cache/.installed"
want="$(command -v "$py" || echo "$py") $(grep -v '^#' "$req" | tr '\n' ' ')"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$(cat "$cache/python" 2>/dev/null)" ]; then
    echo "$cache"
    exit 0
fi
command -v "$py" >/dev/null 2>&1 || { echo "setup.sh: $py is needed (Debian: apt-get install python3 python3-venv python3-dev)" >&2; exit 1; }
mkdir -p "$cache/wheels"
rm -f "$stamp"
# The interpreter itself, not a shim: tests run with HOME in a folder of their own.
"$py" -c 'import sys, venv; print(sys.executable)' >"$cache/python" || {
    echo "setup.sh: $py has no venv module (Debian: apt-get install python3-venv)" >&2; exit 1; }
if ! "$(cat "$cache/python")" -m pip download --disable-pip-version-check -q -d "$cache/wheels" \
    -r "$req" >"$cache/pip.log" 2>&1; then
    cat "$cache/pip.log" >&2
    echo "setup.sh: pip download failed" >&2
    exit 1
fi
echo "$want" >"$stamp"
echo "$cache"
