#!/bin/sh
# Read replicas (docs/scaling.md, section 3): a Debian PostgreSQL 15 primary
# and two streaming hot standbys made from it with pg_basebackup, in
# scratch clusters on loopback.
#
#   1. replication lag while a sync of N notes writes to the primary: each
#      standby's distance in bytes and pg_stat_replication's replay_lag,
#      sampled every 100 ms, the largest of each, and how long the standbys
#      take to replay everything once the sync is done;
#   2. searches per second of PROCS client processes, each with its own
#      handle searching back to back for SECONDS (build/bench/readbench),
#      against the primary alone, with 1 replica and with 2
#      (store.readDsns).
#
#   make bench && bench/pgreplica.sh [N [PROCS [SECONDS]]]
#
# N defaults to 10000, PROCS to 4, SECONDS to 10. All servers share this
# machine's cores, so more replicas add no CPU here: the numbers show the
# cost of routing, not the gain of more machines. Work files go to
# $BENCH_DIR (default /tmp/mnemo-bench); servers are stopped at exit.
set -eu
cd "$(dirname "$0")/.."
n=${1:-10000}
procs=${2:-4}
secs=${3:-10}
DIR=${BENCH_DIR:-/tmp/mnemo-bench}
B=$PWD/build
ws=$DIR/ws$n
q=$DIR/ws$n.queries
PGBIN=/usr/lib/postgresql/15/bin
mkdir -p "$DIR"
[ -x "$B/bench/readbench" ] || { echo "no $B/bench/readbench: run make bench" >&2; exit 1; }
[ -d "$ws" ] || "$B/bench/gen" "$ws" "$n" >/dev/null

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"\
     "$(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -sr)"

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

run=""
if [ "$(id -u)" = 0 ]; then run="setpriv --reuid=nobody --regid=nogroup --clear-groups"; fi
base=$DIR/pgrepl-$n
rm -rf "$base"; mkdir -p "$base"
[ -z "$run" ] || chown nobody "$base"
export PGPASSWORD=x

start() { # NAME PORT [postgres -c ...]: starts the cluster in $base/NAME, waits until ready
    name=$1; port=$2; shift 2
    $run "$PGBIN/postgres" -D "$base/$name" -p "$port" -k "$base" -c listen_addresses=127.0.0.1 \
        -c wal_level=replica -c hot_standby=on -c shared_buffers=256MB "$@" \
        >"$base/$name.log" 2>&1 &
    pids="$pids $!"
    until pg_isready -q -h 127.0.0.1 -p "$port"; do sleep 0.1; done
}

# The primary: replication allowed from loopback.
echo x >"$base/.pw"; chmod 644 "$base/.pw"
$run "$PGBIN/initdb" -D "$base/primary" -U postgres --pwfile="$base/.pw" -A scram-sha-256 >/dev/null
echo "host replication all 127.0.0.1/32 scram-sha-256" >>"$base/primary/pg_hba.conf"
pport=$(freeport)
start primary "$pport"
purl="postgres://postgres:x@127.0.0.1:$pport/postgres?sslmode=disable"

# Two standbys, each named (cluster_name) so that pg_stat_replication tells
# them apart.
rurls=""
for i in 1 2; do
    $run "$PGBIN/pg_basebackup" -D "$base/replica$i" -R -X stream -c fast \
        -d "host=127.0.0.1 port=$pport user=postgres sslmode=disable"
    port=$(freeport)
    start "replica$i" "$port" -c "cluster_name=replica$i"
    rurls="$rurls postgres://postgres:x@127.0.0.1:$port/postgres?sslmode=disable"
done
set -- $rurls
r1=$1; r2=$2

lagsql="SELECT application_name, pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint,
        round(coalesce(extract(epoch FROM replay_lag) * 1000, 0))::bigint
        FROM pg_stat_replication ORDER BY 1"

echo "== replication lag during a sync of $n notes"
mnemo() { "$B/mnemo" --workspace "$ws" --db "$DIR/ws$n-repl.sqlite" --store "$purl" \
              --set tenant=bench --set provider=none "$@"; }
s=$(date +%s.%N)
mnemo index >/dev/null &
sync=$!
: >"$base/lag.log"
while kill -0 "$sync" 2>/dev/null; do
    psql -X -At -F ' ' "$purl" -c "$lagsql" >>"$base/lag.log" 2>/dev/null || true
    sleep 0.1
done
wait "$sync"
e=$(date +%s.%N)
# Caught up: every standby has replayed the primary's position at the end.
end=$(psql -X -At "$purl" -c "SELECT pg_current_wal_lsn()")
c0=$(date +%s.%N)
for u in "$r1" "$r2"; do
    until [ "$(psql -X -At "$u" -c "SELECT pg_last_wal_replay_lsn() >= '$end'::pg_lsn")" = t ]; do
        sleep 0.02
    done
done
c1=$(date +%s.%N)
echo "sync: $(python3 -c "print(round($e - $s, 1))") s, $(wc -l <"$base/lag.log") samples"
awk '{ if ($2 > b[$1]) b[$1] = $2; if ($3 > t[$1]) t[$1] = $3; s[$1] += $2; c[$1]++ }
     END { for (k in b) printf "%s: largest lag %d bytes, largest replay_lag %d ms, mean lag %d bytes\n",
           k, b[k], t[k], c[k] ? s[k] / c[k] : 0 }' "$base/lag.log" | sort
echo "standbys caught up $(python3 -c "print(round(($c1 - $c0) * 1000))") ms after the sync"
psql -X -q "$purl" -c "VACUUM ANALYZE"
end=$(psql -X -At "$purl" -c "SELECT pg_current_wal_lsn()")
for u in "$r1" "$r2"; do
    until [ "$(psql -X -At "$u" -c "SELECT pg_last_wal_replay_lsn() >= '$end'::pg_lsn")" = t ]; do
        sleep 0.05
    done
done

echo "== searches per second, $procs processes, $secs s each"
rb() { # LABEL [--set ...]
    label=$1; shift
    printf '%-22s ' "$label"
    "$B/bench/readbench" "$ws" "$DIR/ws$n-repl.sqlite" "$q" --procs "$procs" --seconds "$secs" \
        --warmup 1 --set "store=$purl" --set tenant=bench --set provider=none "$@"
}
rb "primary alone"
rb "primary + 1 replica" --set "store.readDsns=$r1"
rb "primary + 2 replicas" --set "store.readDsns=$r1,$r2"
