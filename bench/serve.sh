#!/bin/sh
# Load on mnemo serve: starts the daemon on a bench workspace, runs
# bench/loadbench with 1, 4 and 16 keep-alive clients, stops it.
#   bench/serve.sh N [--set KEY=VALUE ...]     (after bench/run.sh N)
# e.g. bench/serve.sh 10000 --set provider=static --set model=glove20k
set -eu
n=${1:-10000}
[ $# -gt 0 ] && shift
dir=/tmp/mnemo-bench
bin=build/mnemo
ws=$dir/ws$n
db=$dir/ws$n.serve.sqlite
[ -d "$ws" ] || { echo "no $ws: run bench/run.sh $n first" >&2; exit 2; }
[ -f "$db" ] || cp "$dir/ws$n.sqlite" "$db"
port=$((20000 + $$ % 20000))
"$bin" --workspace "$ws" --db "$db" "$@" serve --listen 127.0.0.1:$port --no-watch \
    2>"$dir/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
i=0
until curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 600 ] || { cat "$dir/serve.log" >&2; exit 1; }
    sleep 0.1
done
curl -s -H 'Content-Type: application/json' -d '{"query":"deploy","maxResults":1}' \
    "http://127.0.0.1:$port/v1/search" | grep -o '"mode":"[a-z]*"'
for c in ${CLIENTS:-1 4 16}; do
    build/bench/loadbench --port $port --clients $c --seconds 5 --queries "$dir/ws$n.queries"
done
