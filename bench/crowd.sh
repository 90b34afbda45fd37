#!/bin/sh
# A crowd on mnemo serve, all from 127.0.0.1: how long /health takes a new
# client on a fresh connection, alone and then beside 1,000 idle keep-alive
# connections and 300 that send their request a byte every 100 ms.
#   make bench && bench/crowd.sh [IDLE SLOW]      (default: 1000 300)
set -eu
cd "$(dirname "$0")/.."
idle=${1:-1000}
slow=${2:-300}
dir=$(mktemp -d /tmp/mnemo-crowd.XXXXXX)
mkdir -p "$dir/ws"
printf '# Memory\n\n- The crowd benchmark.\n' >"$dir/ws/MEMORY.md"
port=$((20000 + $$ % 20000))
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"\
     "load $(cut -d' ' -f1-3 /proc/loadavg)"
# The idle connections are to stay for the run: a keep-alive time longer than it.
build/mnemo --workspace "$dir/ws" --db "$dir/db.sqlite" serve --listen 127.0.0.1:$port \
    --no-watch --keepalive-timeout 60 2>"$dir/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
i=0
until curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 600 ] || { cat "$dir/serve.log" >&2; exit 1; }
    sleep 0.1
done
echo "alone:"
build/bench/loadbench --port $port --path /health --fresh --clients 1 --seconds 10
echo "beside $idle idle and $slow slow connections:"
build/bench/loadbench --port $port --path /health --fresh --clients 1 --seconds 10 \
    --idle "$idle" --slow "$slow"
