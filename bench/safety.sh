#!/bin/bash
# Hostile runs against the data, each case checked for loss:
#   kill -9 during rebuilds, during memory-add bursts with rebuilds beside
#   them, damaged index and memory-store files, foreign files at the index
#   path, a full disk (a file-size limit) during rebuilds and adds, memory
#   writes beside a rebuild or a transaction on the index, and reads of
#   damaged files (told so, never less). bench/recover.sh sets memory
#   recover beside SQLite's own .recover.
# Prints one table row a class: cases tried, failures, anything lost.
#
#   make && make bench && bench/safety.sh [ROUNDS]       (default 40 a class)
#
# Work files go to $BENCH_DIR (default /tmp/mnemo-safety). Needs sqlite3.
set -u
cd "$(dirname "$0")/.."
M=$PWD/build/mnemo
G=$PWD/build/bench/gen
D=${BENCH_DIR:-/tmp/mnemo-safety}
R=${1:-40}
rm -rf "$D"
mkdir -p "$D"
"$G" "$D/ws" 1500 >/dev/null
DB=$D/idx.sqlite
MEM=$D/idx.memories.sqlite
mn() { "$M" -w "$D/ws" --db "$DB" "$@"; }
rows=()
row() { rows+=("$(printf '| %-44s | %5s | %8s | %-28s |' "$1" "$2" "$3" "$4")"); }
rand() { echo $((RANDOM % $1)); }
shorten() { truncate -s "$(( $(stat -c %s "$1") * $2 / 100 ))" "$1"; } # FILE PERCENT
ok_index() { # the index answers and is whole
    [ "$(sqlite3 "$DB" 'PRAGMA quick_check' 2>/dev/null)" = ok ] &&
        mn search deploy --max-results 1 >/dev/null 2>&1
    local rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 1 ]
}
mem_count() { sqlite3 "$MEM" 'SELECT count(*) FROM memories WHERE deleted_at IS NULL' 2>/dev/null; }

mn index -q || exit 1
for i in $(seq 1 20); do mn memory add "seed fact number $i about the garden" >/dev/null || exit 1; done
t0=$(date +%s%N)
mn index --force -q
build_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "rebuild of $(find "$D/ws" -name '*.md' | wc -l) notes: $build_ms ms; $R rounds a class"

exec 3>&2 2>/dev/null # the shell's notes on killed jobs; the table goes to stdout

# 1. kill -9 at a random moment of index --force
fail=0 lost=0
for r in $(seq 1 "$R"); do
    before=$(mem_count)
    "$M" -w "$D/ws" --db "$DB" index --force -q & p=$! # the process itself, to kill
    sleep "$(awk -v ms="$(rand $((build_ms + 50)))" 'BEGIN{print ms/1000}')"
    kill -9 $p 2>/dev/null; wait $p 2>/dev/null
    ok_index || fail=$((fail + 1))
    after=$(mem_count)
    [ "$after" = "$before" ] || lost=$((lost + before - after))
done
left=$(find "$D" -maxdepth 1 -name 'idx.sqlite.tmp-*' | wc -l)
mn index -q >/dev/null 2>&1
left2=$(find "$D" -maxdepth 1 -name 'idx.sqlite.tmp-*' | wc -l)
row "kill -9 during index --force" "$R" "$fail" "$lost memories; $left temp left, $left2 after a sync"

# 2. kill -9 in memory-add bursts, two writers and a rebuild beside them
fail=0 lost=0 acked=0
for r in $(seq 1 "$R"); do
    : > "$D/acks"
    for w in 1 2; do
        setsid bash -c "for i in \$(seq 1 200); do '$M' -w '$D/ws' --db '$DB' memory add \
            \"burst $r writer $w fact \$i\" --json >> '$D/acks' || exit; done" 2>/dev/null &
        echo $! > "$D/w$w.pid"
    done
    "$M" -w "$D/ws" --db "$DB" index --force -q >/dev/null 2>&1 &
    rb=$!
    sleep "$(awk -v ms="$((100 + $(rand 600)))" 'BEGIN{print ms/1000}')"
    for w in 1 2; do kill -9 -- "-$(cat "$D/w$w.pid")" 2>/dev/null; done
    kill -9 $rb 2>/dev/null
    wait 2>/dev/null
    ids=$(grep -o '"id":"[^"]*"' "$D/acks" | cut -d'"' -f4 | sort -u)
    n=$(echo "$ids" | grep -c .)
    acked=$((acked + n))
    if [ "$n" -gt 0 ]; then
        list=$(echo "$ids" | sed "s/.*/'&'/" | paste -sd, -)
        have=$(sqlite3 "$MEM" "SELECT count(*) FROM memories WHERE id IN ($list)")
        [ "$have" = "$n" ] || lost=$((lost + n - have))
    fi
    ok_index || fail=$((fail + 1))
    [ "$(sqlite3 "$MEM" 'PRAGMA quick_check')" = ok ] || fail=$((fail + 1))
done
row "kill -9 in add bursts (2 writers + rebuild)" "$R" "$fail" "$lost of $acked acknowledged"

# 3. the index cut at a random length, then the recommended fix
fail=0 lost=0
for r in $(seq 1 "$R"); do
    before=$(mem_count)
    mn index -q >/dev/null 2>&1
    shorten "$DB" "$((10 + $(rand 80)))"
    rm -f "$DB-wal" "$DB-shm"
    mn index --force -q >/dev/null 2>&1 || fail=$((fail + 1))
    ok_index || fail=$((fail + 1))
    after=$(mem_count)
    [ "$after" = "$before" ] || lost=$((lost + before - after))
done
rm -f "$DB".damaged-*
row "index cut short, then index --force" "$R" "$fail" "$lost memories"

# 4. a copy of the memory store cut at a random length, then salvage
fail=0 got=0 total=0
mn memory add "one more fact so the store spans pages $(head -c 3000 /dev/zero | tr '\0' x)" >/dev/null
sqlite3 "$MEM" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
for r in $(seq 1 "$R"); do
    cp "$MEM" "$D/cut.sqlite"
    shorten "$D/cut.sqlite" "$((5 + $(rand 90)))"
    out=$("$M" -w "$D/ws" --db "$D/salvage.sqlite" memory recover "$D/cut.sqlite" --json 2>/dev/null)
    rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 5 ] || fail=$((fail + 1))
    n=$(sqlite3 "$D/salvage.memories.sqlite" 'SELECT count(*) FROM memories' 2>/dev/null || echo 0)
    got=$((got + n)); total=$((total + $(mem_count)))
    rm -f "$D"/salvage.* "$D"/cut.sqlite
done
row "memory store cut short, memory recover" "$R" "$fail" "read back $got of $total rows ($((got * 100 / (total > 0 ? total : 1)))%, the rest cut off)"

# 5. foreign files at the index path
fail=0 cases=0
foreign() {
    cases=$((cases + 1))
    rm -f "$D/app.db"
    sqlite3 "$D/app.db" "$1 CREATE TABLE orders(id int); INSERT INTO orders VALUES(42);"
    sum=$(sha256sum < "$D/app.db")
    for cmd in "index" "index --force" "status" "search x" "memory add a fact"; do
        # shellcheck disable=SC2086
        "$M" -w "$D/ws" --db "$D/app.db" $cmd >/dev/null 2>&1
        [ $? -eq 5 ] || fail=$((fail + 1))
    done
    [ "$(sha256sum < "$D/app.db")" = "$sum" ] || fail=$((fail + 1))
}
foreign "CREATE TABLE meta(key text primary key, value text);"
foreign "CREATE TABLE meta(key text primary key, value text); PRAGMA application_id=7;"
foreign "CREATE TABLE chunks(x); CREATE TABLE files(y);"
foreign "PRAGMA application_id=1835953517;"
row "foreign SQLite files at --db (5 commands each)" "$cases" "$fail" "$([ $fail -eq 0 ] && echo "none changed" || echo "CHANGED")"

# 6. a full disk: a file-size limit during rebuilds and memory adds
fail=0 lost=0
size_kb=$(( $(stat -c %s "$DB") / 1024 ))
for r in $(seq 1 "$R"); do
    before=$(mem_count)
    lim=$((size_kb / 10 + $(rand $((size_kb + 1)))))
    (ulimit -f "$lim"; trap '' XFSZ; mn index --force -q) >/dev/null 2>"$D/err"
    rc=$?
    if [ $rc -ne 0 ] && ! grep -q "tmp-" "$D/err"; then fail=$((fail + 1)); fi
    (ulimit -f "$(( $(stat -c %s "$MEM") / 1024 + $(rand 64) ))"; trap '' XFSZ
     for i in $(seq 1 30); do mn memory add "disk fact $r-$i $(head -c 2000 /dev/zero | tr '\0' y)" \
         >/dev/null 2>&1; done)
    ok_index || fail=$((fail + 1))
    after=$(mem_count)
    [ "$after" -ge "$before" ] || lost=$((lost + before - after))
    [ "$(sqlite3 "$MEM" 'PRAGMA quick_check')" = ok ] || fail=$((fail + 1))
done
left=$(find "$D" -maxdepth 1 -name 'idx.sqlite.tmp-*' | wc -l)
row "file-size limit during rebuild and adds" "$R" "$fail" "$lost memories; $left temp left"

# 7. memory writes while the index is rebuilt or held in a transaction
fail=0 lost=0 tries=0
for r in $(seq 1 "$R"); do
    before=$(mem_count)
    if [ $((r % 2)) -eq 0 ]; then
        mn index --force -q >/dev/null 2>&1 &
    else # another process in a transaction on the index for 0.2-1 s
        sqlite3 "$DB" "BEGIN EXCLUSIVE; DELETE FROM meta WHERE key = 'none';
            SELECT 1 FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c
            WHERE x < $((200000 + $(rand 800000)))) SELECT x FROM c) LIMIT 1 OFFSET 10000000;
            COMMIT;" >/dev/null 2>&1 &
    fi
    held=$!
    ok=0
    for i in 1 2 3; do
        tries=$((tries + 1))
        mn --set busyTimeoutMs=2000 memory add "beside a writer $r-$i" >/dev/null 2>&1 &&
            ok=$((ok + 1)) || fail=$((fail + 1))
    done
    wait $held 2>/dev/null
    after=$(mem_count)
    [ "$after" -eq $((before + ok)) ] || lost=$((lost + before + ok - after))
done
row "memory adds beside index --force or a transaction on the index" "$tries" "$fail" "$lost memories"

# 8. a damaged index: told so, never "nothing found"; a plain index mends it
mn index -q >/dev/null 2>&1
sqlite3 "$DB" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
cp "$DB" "$D/good.sqlite"
fail=0 said=0 told_nothing=0 mended=0
pages=$(( $(stat -c %s "$DB") / 4096 ))
for r in $(seq 1 "$R"); do
    cp "$D/good.sqlite" "$DB"
    rm -f "$DB-wal" "$DB-shm" "$DB.suspect"
    dd if=/dev/urandom of="$DB" bs=4096 seek=$((2 + $(rand $((pages - 2))))) \
        count=$((1 + $(rand 6))) conv=notrunc 2>/dev/null
    out=$(mn search deploy -n 3 2>/dev/null)
    rc=$?
    if [ $rc -eq 0 ] && echo "$out" | grep -q '^No results'; then
        told_nothing=$((told_nothing + 1))
        fail=$((fail + 1))
    fi
    [ $rc -eq 5 ] && said=$((said + 1))
    [ $rc -eq 0 ] || [ $rc -eq 5 ] || fail=$((fail + 1))
    mn status --deep >/dev/null 2>&1
    [ $? -eq 5 ] || [ "$(sqlite3 "$DB" 'PRAGMA quick_check' 2>&1)" = ok ] || fail=$((fail + 1))
    mn index -q >/dev/null 2>&1
    if mn status --deep >/dev/null 2>&1 && mn search deploy -n 1 >/dev/null 2>&1; then
        mended=$((mended + 1))
    else
        fail=$((fail + 1))
    fi
done
rm -f "$DB".damaged-*
row "index pages overwritten: search, status --deep, index" "$R" "$fail" "0; $said searches said damaged, $told_nothing said nothing found; $mended mended by a plain index"

# 9. a damaged memory store: told so, never a smaller list
sqlite3 "$MEM" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
cp "$MEM" "$D/goodmem.sqlite"
whole=$(mem_count)
fail=0 said=0 smaller=0
for r in $(seq 1 "$R"); do
    cp "$D/goodmem.sqlite" "$MEM"
    rm -f "$MEM-wal" "$MEM-shm"
    python3 - "$MEM" "$r" <<'PY'
import random, sys
random.seed(int(sys.argv[2]))
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
for _ in range(10):
    i = random.randrange(4096, len(b))
    b[i] ^= random.randrange(1, 256)
open(p, 'wb').write(b)
PY
    out=$(mn memory list --limit 100000 --json 2>/dev/null)
    rc=$?
    if [ $rc -eq 0 ]; then
        n=$(echo "$out" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["memories"]))')
        [ "$n" -ge "$whole" ] || { smaller=$((smaller + 1)); fail=$((fail + 1)); }
    elif [ $rc -eq 5 ]; then
        said=$((said + 1))
    else
        fail=$((fail + 1))
    fi
    mn status >/dev/null 2>&1
    [ $? -eq 5 ] || [ "$(sqlite3 "$MEM" 'PRAGMA quick_check' 2>&1)" = ok ] || fail=$((fail + 1))
done
cp "$D/goodmem.sqlite" "$MEM"
rm -f "$MEM-wal" "$MEM-shm"
row "memory store bytes flipped: list, status" "$R" "$fail" "0; $said lists said damaged, $smaller smaller lists"

echo
echo "| class | cases | failures | lost |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
