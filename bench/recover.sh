#!/bin/bash
# Salvage from damaged memory stores: mnemo memory recover against SQLite's
# own recovery (the sqlite3 shell's .recover) on the same damaged copies.
#
#   make && SQLITE3=SHELL bench/recover.sh [COPIES] [SEED]   (200 copies, seed 1)
#
# Builds a store of 605 memories (a generated export, imported; a tenth of
# the texts are long enough to spill onto overflow pages), then makes
# COPIES damaged copies of it, a quarter in each class:
#   flips      10 random bytes anywhere, each XORed with a random non-zero byte
#   page       one page (4 KiB at a page boundary, page 1 included) of random bytes
#   zeroed     one page of zeros
#   cut        the file cut at a random 50-95 % of its length
# and reads each back both ways:
#   .recover   SHELL COPY .recover | sqlite3 OUT; the count is the distinct
#              ids among the rows of OUT's memories table and the rows of
#              lost_and_found with the 19 values of a memories row whose
#              id (c1) is text: every row SQLite's recovery read that could
#              be a memory, wherever it put it.
#   mnemo      mnemo memory recover COPY into a new, empty store; the count
#              is what it reports as recovered (distinct ids).
# Prints a markdown table: per class, the rows each read in all, the
# copies where mnemo read fewer than .recover, and what mnemo reported
# skipped where it read fewer than the 605 rows of the store. Copies
# where mnemo read fewer than .recover, or lost rows and reported none
# skipped, are kept in $BENCH_DIR (worse-*, silent-*).
#
# .recover needs a shell built with the sqlite_dbpage table: the sqlite3 of
# Debian 12 has none (its .recover fails, "no such table: sqlite_dbpage").
# Give one in $SQLITE3, e.g. built from Debian's source package (a deb-src
# line in apt's sources):
#   apt-get source sqlite3 && cd sqlite3-3.40.1 && ./configure && make sqlite3
# The plain sqlite3 on the PATH loads the SQL it prints. Work files go to
# $BENCH_DIR (default /tmp/mnemo-recover). Rows are counted, not time: a
# busy machine gives the same table.
set -u
cd "$(dirname "$0")/.."
M=$PWD/build/mnemo
S=${SQLITE3:-sqlite3}
D=${BENCH_DIR:-/tmp/mnemo-recover}
N=${1:-200}
RANDOM=${2:-1}
if ! "$S" :memory: 'SELECT count(*) FROM sqlite_dbpage' >/dev/null 2>&1; then
    echo "$S has no sqlite_dbpage, so no .recover: set SQLITE3 (see the top of $0)" >&2
    exit 2
fi
[ -x "$M" ] || { echo "build mnemo first: make" >&2; exit 2; }
rm -rf "$D"
mkdir -p "$D/ws"
echo "# notes" > "$D/ws/MEMORY.md"

# The store: 605 memories, one history event each.
awk -v seed="${2:-1}" 'BEGIN {
    srand(seed)
    split("heron garden deploy friday kite lantern tea coffee python rust sqlite page " \
          "tree leaf river stone cloud violet maple autumn", w, " ")
    split("preference technical project decision rule relationship", cat, " ")
    for (i = 0; i < 605; i++) {
        id = ""
        for (k = 0; k < 32; k++) id = id sprintf("%x", int(rand() * 16))
        id = substr(id, 1, 8) "-" substr(id, 9, 4) "-" substr(id, 13, 4) "-" \
             substr(id, 17, 4) "-" substr(id, 21, 12)
        words = i % 10 == 0 ? 400 + int(rand() * 1200) : 5 + int(rand() * 60)
        t = "memory " i ":"
        for (k = 0; k < words; k++) t = t " " w[1 + int(rand() * 20)]
        printf "{\"id\":\"%s\",\"text\":\"%s\",\"category\":\"%s\",", id, t, cat[1 + i % 6]
        printf "\"created_at\":\"2026-01-01T00:00:00Z\",\"updated_at\":\"2026-01-01T00:00:00Z\","
        printf "\"history\":[{\"event\":\"ADD\",\"old_text\":null,\"new_text\":\"%s\",", t
        printf "\"at\":\"2026-01-01T00:00:00Z\",\"detail\":null}]}\n"
    }
}' > "$D/memories.jsonl"
"$M" -w "$D/ws" --db "$D/src.sqlite" memory import "$D/memories.jsonl" >/dev/null || exit 1
STORE=$D/src.memories.sqlite
sqlite3 "$STORE" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
TOTAL=$(sqlite3 "$STORE" 'SELECT count(*) FROM memories')
SIZE=$(stat -c %s "$STORE")
PAGE=$(sqlite3 "$STORE" 'PRAGMA page_size')
PAGES=$((SIZE / PAGE))
echo "store: $TOTAL memories, $PAGES pages of $PAGE bytes, freelist $(sqlite3 "$STORE" 'PRAGMA freelist_count');" \
     "$(uname -m), $("$S" -version | cut -d' ' -f1) for .recover, $N copies"

# Random numbers are drawn in this shell, never in $(...): bash seeds
# RANDOM anew in a subshell, and the copies would differ from run to run.
big() { R=$(( (RANDOM << 15 | RANDOM) % $1 )); } # R = 0..N-1, N up to 2^30
put() { # FILE OFFSET HEX... : writes the bytes at OFFSET
    local f=$1 off=$2; shift 2
    printf "$(printf '\\x%s' "$@")" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
}
damage() { # CLASS FILE
    local f=$2 i b hex bytes=()
    case $1 in
    flips)
        for i in $(seq 1 10); do
            big "$SIZE"
            b=$(od -An -tu1 -j "$R" -N1 "$f" | tr -d ' ')
            printf -v hex '%02x' $(( b ^ (1 + RANDOM % 255) ))
            put "$f" "$R" "$hex"
        done ;;
    page)
        big "$PAGES"
        for i in $(seq 1 "$PAGE"); do printf -v hex '%02x' $((RANDOM % 256)); bytes+=("$hex"); done
        put "$f" $((R * PAGE)) "${bytes[@]}" ;;
    zeroed)
        big "$PAGES"
        dd if=/dev/zero of="$f" bs="$PAGE" seek="$R" count=1 conv=notrunc status=none ;;
    cut)
        truncate -s $(( SIZE * (50 + RANDOM % 46) / 100 )) "$f" ;;
    esac
}
by_recover() { # COPY -> rows of memories SQLite's .recover reads
    rm -f "$D/out.db"
    "$S" "$1" .recover 2>/dev/null | sqlite3 "$D/out.db" >/dev/null 2>&1
    local q="SELECT id FROM memories" lf="SELECT c1 FROM lost_and_found WHERE nfield = 19 AND typeof(c1) = 'text'"
    sqlite3 "$D/out.db" "SELECT 1 FROM memories LIMIT 0" >/dev/null 2>&1 || q="SELECT NULL WHERE 0"
    sqlite3 "$D/out.db" "SELECT 1 FROM lost_and_found LIMIT 0" >/dev/null 2>&1 || lf="SELECT NULL WHERE 0"
    sqlite3 "$D/out.db" "SELECT count(DISTINCT id) FROM ($q UNION ALL $lf)" 2>/dev/null || echo 0
}
by_mnemo() { # COPY -> "recovered skipped"
    rm -rf "$D/fresh" && mkdir -p "$D/fresh/ws" && echo "# notes" > "$D/fresh/ws/MEMORY.md"
    local out
    out=$("$M" -w "$D/fresh/ws" --db "$D/fresh/db.sqlite" memory recover "$1" --json 2>/dev/null)
    echo "$(echo "$out" | grep -o '"recovered":[0-9]*' | cut -d: -f2) $(echo "$out" | grep -o '"damagedPlaces":[0-9]*' | cut -d: -f2)"
}

echo
echo "| class | stores | rows .recover reads | rows mnemo salvages | stores where mnemo < .recover | stores that lost rows: skipped reported |"
echo "|---|---|---|---|---|---|"
for class in flips page zeroed cut; do
    stores=0 rec=0 mne=0 worse=0 lossy=0 told=0 places=0
    for r in $(seq 1 $((N / 4))); do
        cp "$STORE" "$D/copy.sqlite"
        damage "$class" "$D/copy.sqlite"
        a=$(by_recover "$D/copy.sqlite")
        read -r b k <<< "$(by_mnemo "$D/copy.sqlite")"
        b=${b:-0} k=${k:-0}
        stores=$((stores + 1)) rec=$((rec + a)) mne=$((mne + b))
        [ "$b" -lt "$a" ] && { worse=$((worse + 1)); cp "$D/copy.sqlite" "$D/worse-$class-$r.sqlite"; }
        if [ "$b" -lt "$TOTAL" ]; then
            lossy=$((lossy + 1)) places=$((places + k))
            if [ "$k" -gt 0 ]; then told=$((told + 1)); else cp "$D/copy.sqlite" "$D/silent-$class-$r.sqlite"; fi
        fi
    done
    echo "| $class | $stores | $rec | $mne | $worse | $told of $lossy ($places places) |"
done
rm -rf "$D/fresh" "$D/out.db" "$D/copy.sqlite"
