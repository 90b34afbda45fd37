#!/bin/sh
# The memory browser's first load over a large memory (docs/ui.md): a generated
# workspace of NOTES notes (bench/gen, default 10000) and FACTS stored facts
# (bench/ui-facts.mjs, default 100000), served by mnemo serve; the page is
# loaded in headless chromium with a cold profile (bench/ui-load.mjs) and a
# small table printed: bytes transferred by the first load and a reload, the
# time from a search to its first result (median and 95th percentile over 20
# queries), and the time the facts and overview views take to show.
# Run it on an idle machine; it builds what it needs first.
#
#   bench/ui-load.sh [NOTES] [FACTS]
set -eu
cd "$(dirname "$0")/.."
notes=${1:-10000}
facts=${2:-100000}
make -s build/mnemo build/bench/gen >/dev/null
pw=$(tests/ui/setup.sh)
work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
echo "generating $notes notes and $facts facts in $work ..." >&2
build/bench/gen "$work/ws" "$notes" 1 >/dev/null
node bench/ui-facts.mjs "$facts" 52 >"$work/facts.jsonl"
m="build/mnemo --workspace $work/ws --db $work/index.sqlite"
$m memory import "$work/facts.jsonl" >/dev/null
$m index --quiet
$m serve --listen 127.0.0.1:0 2>"$work/serve.log" &
pid=$!
port=
for _ in $(seq 600); do
    port=$(sed -n 's/.*"url":"http:\/\/127.0.0.1:\([0-9]*\)".*/\1/p' "$work/index.sqlite.serve.pid" 2>/dev/null || true)
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { cat "$work/serve.log" >&2; exit 1; }
PLAYWRIGHT_CORE="$pw/node_modules/playwright-core/index.mjs" \
    node bench/ui-load.mjs "http://127.0.0.1:$port" "$work/ws.queries" "$notes" "$facts"
