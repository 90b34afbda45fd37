#!/bin/sh
# One large note: a Markdown file of MB megabytes (default 200) made of the
# notes of bench/gen (fresh seeds until it is large enough, cut at a line
# end), indexed from scratch by `mnemo index`. Reports the peak resident
# memory and the time of the index, which streams a note of this size in
# windows, so its memory does not grow with the file.
#
#   make bench && bench/bignote.sh [MB]
#
# Work files go to $BENCH_DIR (default /tmp/mnemo-bench). Needs GNU time
# (/usr/bin/time -v).
set -eu
cd "$(dirname "$0")/.."
M=${MNEMO_BIN:-$PWD/build/mnemo}
G=$PWD/build/bench/gen
mb=${1:-200}
DIR=${BENCH_DIR:-/tmp/mnemo-bench}/bignote
ws=$DIR/ws$mb
db=$DIR/ws$mb.sqlite
note=$ws/memory/big.md
bytes=$((mb * 1000000))
[ -x /usr/bin/time ] || { echo "bignote: needs GNU time at /usr/bin/time" >&2; exit 1; }
if [ ! -f "$note" ]; then
    mkdir -p "$ws/memory"
    part=$DIR/big.part
    : >"$part"
    seed=1
    while [ "$(stat -c %s "$part")" -lt "$bytes" ]; do
        rm -rf "$DIR/gen"
        "$G" "$DIR/gen" 10000 "$seed" >/dev/null
        find "$DIR/gen/memory" -name '*.md' | sort | xargs cat >>"$part"
        seed=$((seed + 1))
    done
    rm -rf "$DIR/gen" "$DIR"/gen.*
    # The first BYTES bytes, without the line they cut.
    head -c "$bytes" "$part" | sed '$d' >"$note"
    rm -f "$part"
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"\
     "$(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -sr)"
echo "mnemo:   $($M --version)"
echo "note:    $(stat -c %s "$note") bytes, $(wc -l <"$note") lines"
rm -f "$db" "$db"-* "$db".lock
export MNEMO_MAX_FILE_BYTES=$((bytes + 100000000))
MNEMO_PROVIDER=none /usr/bin/time -v "$M" -w "$ws" --db "$db" index -q 2>"$DIR/time.txt"
rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$DIR/time.txt")
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$DIR/time.txt")
echo "index:   peak RSS $((rss / 1024)) MB, $wall (m:ss) wall"
"$M" -w "$ws" --db "$db" status | grep -i -m3 'chunks\|files' || true
