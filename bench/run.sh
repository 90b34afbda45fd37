#!/bin/sh
# Core engine benchmark: synthetic workspaces of 1k, 10k and 100k notes.
# Reports full index time and MB/s, no-op re-sync time, cold search latency
# (each search a fresh `mnemo search` process) and peak memory.
#
#   make bench && bench/run.sh [SIZES...]        (default: 1000 10000 100000)
#
# Work files go to $BENCH_DIR (default /tmp/mnemo-bench).
set -eu
cd "$(dirname "$0")/.."
B=build
M=$PWD/$B/mnemo
L=$PWD/$B/bench/latency
G=$PWD/$B/bench/gen
DIR=${BENCH_DIR:-/tmp/mnemo-bench}
SIZES=${*:-1000 10000 100000}
mkdir -p "$DIR"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"\
     "$(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -sr)"
echo "mnemo:   $($M --version)"
for n in $SIZES; do
    ws=$DIR/ws$n
    db=$DIR/ws$n.sqlite
    if [ ! -d "$ws" ]; then
        rm -rf "$ws"
        "$G" "$ws" "$n" >/dev/null
    fi
    mb=$(find "$ws" -type f -printf "%s\n" | awk "{s += \$1} END {printf \"%.1f\", s / 1e6}")
    echo
    echo "== $n notes, $mb MB of Markdown"
    rm -f "$db" "$db"-*
    "$M" -w "$ws" --db "$db" index -q
    printf "full index (--force):   "
    out=$("$L" -n 5 -w 1 -- "$M" -w "$ws" --db "$db" index --force -q)
    echo "$out"
    p50=$(echo "$out" | sed 's/.*p50 \([0-9.]*\) ms.*/\1/')
    echo "                        $(echo "$mb $p50" | awk '{printf "%.1f MB/s", $1 / ($2 / 1000)}')"
    printf "no-op re-sync:          "
    "$L" -n 10 -w 1 -- "$M" -w "$ws" --db "$db" index -q
    printf "cold search (process):  "
    "$L" -n 200 -w 5 -q "$ws.queries" -- "$M" -w "$ws" --db "$db" search --json {}
    echo "index size:             $(du -sh "$db" | cut -f1)"
done
