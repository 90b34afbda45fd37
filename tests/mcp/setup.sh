#!/bin/sh
# Installs the MCP SDK client used by the tests into a cache folder (once).
# Prints the folder. Needs node and npm (Debian: apt install nodejs npm).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir="${MNEMO_JS_CACHE:-$HOME/.cache/mnemo-test}/mcp"
mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9
if ! cmp -s "$here/package.json" "$dir/package.json" || [ ! -d "$dir/node_modules/@modelcontextprotocol/sdk" ]; then
    cp "$here/package.json" "$dir/package.json"
    (cd "$dir" && npm install --no-audit --no-fund --silent >&2)
fi
cp "$here/sdk_client.mjs" "$dir/sdk_client.mjs"
echo "$dir"
