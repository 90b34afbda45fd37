#!/bin/sh
# Installs playwright-core (the version in tests/ui/package.json; no browser:
# the tests drive Debian's chromium) into a cache folder outside the
# repository, once. Idempotent. Prints the folder.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir="${MNEMO_JS_CACHE:-$HOME/.cache/mnemo-test}/ui"
mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9
if ! cmp -s "$here/package.json" "$dir/package.json" || [ ! -d "$dir/node_modules/playwright-core" ]; then
    cp "$here/package.json" "$dir/package.json"
    # playwright-core downloads no browser on install; PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD makes sure.
    (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund --silent >&2)
fi
cp "$here/ui.mjs" "$dir/ui.mjs"
echo "$dir"
