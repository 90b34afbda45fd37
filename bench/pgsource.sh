#!/bin/sh
# The database part of an existing-table search (docs/postgres.md) at ROWS
# rows: PGlite with pgvector (tests/pg/setup.sh installs it) holding a
# memory_embeddings table of random DIMS-dimensional vectors with an HNSW
# index and a memory_type_priorities table, then build/bench/pgbench_source.
# The database is kept in DATA, so a second run skips the load.
#
#   bench/pgsource.sh [ROWS [DIMS [DATA]]]      defaults: 100000 1536 build/bench-pg
set -eu
cd "$(dirname "$0")/.."
rows=${1:-100000}
dims=${2:-1536}
data=${3:-build/bench-pg/$rows-$dims}
server=$(sh tests/pg/setup.sh)
make -s build/bench/pgbench_source
mkdir -p "$data"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "${server%%/node_modules/*}" && exec node "$server" -p "$port" -h 127.0.0.1 -d "$(cd "$OLDPWD" && cd "$data" && pwd)" \
    -e @electric-sql/pglite-pgvector:vector) >"$data.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT INT TERM
url="postgres://postgres:x@127.0.0.1:$port/postgres?sslmode=disable"
i=0
until pg_isready -q -h 127.0.0.1 -p "$port"; do
    i=$((i + 1)); [ $i -lt 300 ] || { cat "$data.log"; exit 1; }; sleep 0.1
done
have=$(psql -X -At "$url" -c "SELECT count(*) FROM pg_class WHERE relname = 'memory_embeddings_hnsw'")
if [ "$have" != 1 ]; then
    psql -X -q "$url" -c "CREATE EXTENSION IF NOT EXISTS vector" \
        -c "CREATE TABLE IF NOT EXISTS memory_embeddings (id bigserial PRIMARY KEY, content text NOT NULL, source_type text NOT NULL, embedding vector($dims), created_at timestamptz DEFAULT now(), updated_at timestamptz DEFAULT now())" \
        -c "CREATE TABLE IF NOT EXISTS memory_type_priorities (source_type text PRIMARY KEY, priority numeric(3,2), description text)" \
        -c "INSERT INTO memory_type_priorities VALUES ('note',0.35,''),('value',0.9,''),('episode',0.4,''),('belief',0.7,'') ON CONFLICT DO NOTHING"
    s=$(psql -X -At "$url" -c "SELECT count(*) FROM memory_embeddings")
    while [ "$s" -lt "$rows" ]; do
        e=$((s + 10000 < rows ? s + 10000 : rows))
        psql -X -q "$url" -c "INSERT INTO memory_embeddings (content, source_type, embedding) SELECT 'memory ' || g, (ARRAY['note','value','episode','belief','goal'])[1 + g % 5], (SELECT array_agg(random()::real - 0.5) FROM generate_series(1, $dims + g * 0))::vector FROM generate_series($s + 1, $e) g"
        s=$e
        echo "loaded $s rows" >&2
    done
    echo "building the HNSW index ..." >&2
    psql -X -q "$url" -c "SET maintenance_work_mem = '2000MB'" \
        -c "CREATE INDEX memory_embeddings_hnsw ON memory_embeddings USING hnsw (embedding vector_cosine_ops)"
fi
psql -X -At "$url" -c "SELECT 'rows: ' || count(*) FROM memory_embeddings"
build/bench/pgbench_source "$url" memory_embeddings 300 "$dims"
