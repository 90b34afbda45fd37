#!/bin/sh
# The PostgreSQL backend beside SQLite on the same data (docs/benchmarks.md):
#
#   1. chunks: the bench/run.sh workspace of N notes indexed into SQLite, into
#      Debian's PostgreSQL 15 (keyword only: no pgvector package) and into
#      PGlite with pgvector (hybrid, GloVe static table, HNSW); warm search
#      p50/p99 with build/bench/searchbench on each;
#   2. memories: build/bench/membench with N memories on each backend, and
#      on PostgreSQL again with 4 writers adding at once.
#
#   make bench && bench/pgbackend.sh [N [WHAT]]
#
# N defaults to 100000; WHAT is all (default), keyword, hybrid or memories.
#
# Needs the GloVe table imported as glove20k (docs/semantic.md) for the
# hybrid runs, and tests/pg/setup.sh (PGlite). Work files go to
# $BENCH_DIR (default /tmp/mnemo-bench); servers are stopped at exit.
set -eu
cd "$(dirname "$0")/.."
n=${1:-100000}
what=${2:-all}
DIR=${BENCH_DIR:-/tmp/mnemo-bench}
B=$PWD/build
ws=$DIR/ws$n
q=$DIR/ws$n.queries
PGBIN=/usr/lib/postgresql/15/bin
mkdir -p "$DIR"
[ -d "$ws" ] || "$B/bench/gen" "$ws" "$n" >/dev/null
[ -f "$q" ] || { echo "no $q: run bench/run.sh $n first" >&2; exit 1; }

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

# Debian PostgreSQL 15 in a scratch cluster (as nobody when root).
pg_start() {
    pgdir=$DIR/pg15-$n
    rm -rf "$pgdir"; mkdir -p "$pgdir"
    run=""
    if [ "$(id -u)" = 0 ]; then chown nobody "$pgdir"; run="setpriv --reuid=nobody --regid=nogroup --clear-groups"; fi
    echo x >"$pgdir/.pw"; chmod 644 "$pgdir/.pw"
    $run "$PGBIN/initdb" -D "$pgdir/data" -U postgres --pwfile="$pgdir/.pw" -A scram-sha-256 >/dev/null
    pgport=$(freeport)
    $run "$PGBIN/postgres" -D "$pgdir/data" -p "$pgport" -k "$pgdir" -c listen_addresses=127.0.0.1 \
        -c shared_buffers=1GB -c maintenance_work_mem=1GB >"$pgdir.log" 2>&1 &
    pids="$pids $!"
    until pg_isready -q -h 127.0.0.1 -p "$pgport"; do sleep 0.1; done
    pgurl="postgres://postgres:x@127.0.0.1:$pgport/postgres?sslmode=disable"
}

# PGlite with pgvector (WebAssembly, one connection at a time).
lite_start() {
    server=$(sh tests/pg/setup.sh)
    lport=$(freeport)
    ldir=$DIR/pglite-$n; rm -rf "$ldir"; mkdir -p "$ldir"
    (cd "${server%%/node_modules/*}" && exec node --max-old-space-size=8192 "$server" -p "$lport" \
        -h 127.0.0.1 -d "$ldir" -e @electric-sql/pglite-pgvector:vector) >"$ldir.log" 2>&1 &
    pids="$pids $!"
    until pg_isready -q -h 127.0.0.1 -p "$lport"; do sleep 0.1; done
    liteurl="postgres://postgres:x@127.0.0.1:$lport/postgres?sslmode=disable"
}

index() { # STORE [--set ...]: prints the wall time of a full index
    s=$(date +%s.%N)
    "$B/mnemo" --workspace "$ws" --db "$DIR/ws$n.sqlite" --store "$@" index >/dev/null
    e=$(date +%s.%N)
    echo "index: $(python3 -c "print(round($e - $s, 1))") s"
}

bench() { # LABEL STORE [--set ...]
    label=$1; store=$2; shift 2
    printf '%-34s ' "$label"
    "$B/bench/searchbench" "$ws" "$DIR/ws$n.sqlite" "$q" 300 --set "store=$store" "$@" | grep -E 'p50|p99' | tr '\n' ' '
    echo
}

hyb="--set provider=static --set model=glove20k"
if [ "$what" = all ] || [ "$what" = keyword ]; then
    pg_start
    echo "== $n notes, keyword"
    index "$pgurl"
    # Settle first: autovacuum after a bulk load would share the cores.
    psql -X -q "$pgurl" -c "VACUUM ANALYZE"
    psql -X -At "$pgurl" -c "SELECT 'chunks: ' || count(*) FROM mnemo_chunks"
    bench "SQLite keyword" sqlite --set provider=none
    bench "PostgreSQL 15 keyword" "$pgurl" --set provider=none
fi
if [ "$what" = all ] || [ "$what" = hybrid ]; then
    lite_start
    echo "== $n notes, hybrid (GloVe 100d, HNSW on PGlite)"
    # shellcheck disable=SC2086
    index "$liteurl" $hyb
    # shellcheck disable=SC2086
    bench "SQLite hybrid" sqlite $hyb --set db="$DIR/ws$n-h.sqlite"
    # shellcheck disable=SC2086
    bench "PGlite+pgvector hybrid" "$liteurl" $hyb
fi
if [ "$what" = all ] || [ "$what" = memories ]; then
    [ -n "${pgurl:-}" ] || pg_start
    echo "== $n memories"
    "$B/bench/membench" "$DIR/mem-sqlite" "$n"
    "$B/bench/membench" "$DIR/mem-pg" "$n" --set "store=$pgurl"
    "$B/bench/membench" "$DIR/mem-pg4" "$n" --writers 4 --no-search --set "store=$pgurl"
fi
