#!/bin/sh
# Screenshots of the memory browser (docs/ui.md): each view at 1280 and 390 px
# wide, as PNGs into OUTDIR (default /tmp/mnemo-ui-shots), over a generated
# workspace (bench/gen, 300 notes) with 150 stored facts (bench/ui-facts.mjs).
# Needs chromium and node; playwright-core comes from tests/ui/setup.sh.
#
#   bench/ui-shots.sh [OUTDIR]
set -eu
cd "$(dirname "$0")/.."
out=${1:-/tmp/mnemo-ui-shots}
make -s build/mnemo build/bench/gen >/dev/null
pw=$(tests/ui/setup.sh)
work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
build/bench/gen "$work/ws" 300 7 >/dev/null
node bench/ui-facts.mjs 150 14 >"$work/facts.jsonl"
m="build/mnemo --workspace $work/ws --db $work/index.sqlite"
$m memory import "$work/facts.jsonl" >/dev/null
$m serve --listen 127.0.0.1:0 2>"$work/serve.log" &
pid=$!
for _ in $(seq 100); do
    port=$(sed -n 's/.*"url":"http:\/\/127.0.0.1:\([0-9]*\)".*/\1/p' "$work/index.sqlite.serve.pid" 2>/dev/null || true)
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { cat "$work/serve.log" >&2; exit 1; }
mkdir -p "$out"
PLAYWRIGHT_CORE="$pw/node_modules/playwright-core/index.mjs" \
    node bench/ui-shots.mjs "http://127.0.0.1:$port" "$out"
ls -l "$out"
