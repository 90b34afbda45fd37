#!/bin/sh
# Installs PGlite, its pgvector extension and pglite-server (the PostgreSQL wire protocol
# over a socket) from npm, at the versions in tests/pg/package.json, into
# build/js/pglite of the source tree (or $1), once. Idempotent and safe to run
# concurrently (flock). Prints the path of pglite-server.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-$here/../../build/js/pglite}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
server="$dest/node_modules/@electric-sql/pglite-socket/dist/scripts/server.js"
want=$(cksum <"$here/package.json")

installed() { [ -f "$server" ] && [ "$(cat "$dest/.installed" 2>/dev/null)" = "$want" ]; }

if installed; then echo "$server"; exit 0; fi
command -v npm >/dev/null 2>&1 || { echo "setup.sh: npm is needed (Debian: apt-get install nodejs npm)" >&2; exit 1; }
exec 9>"$dest/.lock"
flock 9
if ! installed; then
    cp "$here/package.json" "$dest/package.json"
    if ! (cd "$dest" && npm install --no-audit --no-fund --loglevel=error) >"$dest/npm.log" 2>&1; then
        cat "$dest/npm.log" >&2
        echo "setup.sh: npm install failed" >&2
        exit 1
    fi
    [ -f "$server" ] || { echo "setup.sh: $server missing after install" >&2; exit 1; }
    echo "$want" >"$dest/.installed"
fi
echo "$server"
