#!/bin/sh
# Recall nudge benchmark: `mnemo hook claude-code` as Claude Code runs it, a
# fresh process per prompt with the hook's JSON on standard input, against
# the synthetic workspace of bench/run.sh. Reports wall-clock p50/p90/p99 per
# prompt kind, the CPU time (user + system) per run, which other load on the
# machine disturbs far less, and `mnemo --version` as the cost of starting a
# process.
#
#   make bench && bench/run.sh 10000      (once: builds ws10000 and its index)
#   bench/hookbench.sh [NOTES] [RUNS]     (default: 10000 notes, 200 runs)
#
# Work files go to $BENCH_DIR (default /tmp/mnemo-bench); $MNEMO names
# another binary than build/mnemo.
set -eu
cd "$(dirname "$0")/.."
M=${MNEMO:-$PWD/build/mnemo}
DIR=${BENCH_DIR:-/tmp/mnemo-bench}
N=${1:-10000}
RUNS=${2:-200}
WS=$DIR/ws$N
DB=$DIR/ws$N.sqlite
if [ ! -f "$DB" ]; then
    echo "no index at $DB: run bench/run.sh $N first" >&2
    exit 1
fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"\
     "$(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -sr)"
echo "mnemo:   $($M --version), $N notes, $(du -sh "$DB" | cut -f1) index"
python3 - "$M" "$WS" "$DB" "$RUNS" <<'EOF'
import json, resource, subprocess, sys, time

mnemo, ws, db, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
prompts = [
    ("English, 3 terms with hits",
     "Did Priya finish the acme/invoice rollout? Check #961 before we ship."),
    ("Japanese, 3 terms with hits", "キャッシュのデプロイ手順をWangさんに確認して"),
    ("2 terms, no hits", "What is ZanzibarQueue doing in FooService?"),
    ("no candidates (no search)", "deploy the thing please"),
]

def cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime

def measure(argv, stdin_bytes):
    t, c = [], []
    for r in range(runs + 5):
        c0, t0 = cpu(), time.perf_counter()
        p = subprocess.run(argv, input=stdin_bytes, stdout=subprocess.PIPE)
        dt, dc = (time.perf_counter() - t0) * 1000, (cpu() - c0) * 1000
        if p.returncode != 0:
            sys.exit("run failed: %r" % argv)
        if r >= 5:  # warm-up: page cache, not the process
            t.append(dt)
            c.append(dc)
    t.sort()
    c.sort()
    pick = lambda v, q: v[min(len(v) - 1, int(len(v) * q))]
    return "p50 %5.2f ms  p90 %5.2f ms  p99 %5.2f ms  max %6.2f ms  cpu p50 %5.2f ms" % (
        pick(t, 0.5), pick(t, 0.9), pick(t, 0.99), t[-1], pick(c, 0.5)), p.stdout.decode()

hook = [mnemo, "--workspace", ws, "--db", db, "hook", "claude-code"]
print("runs per line: %d, each a fresh process" % runs)
line, _ = measure([mnemo, "--version"], b"")
print("load average: %s" % open("/proc/loadavg").read().split()[0])
print("%-30s %s" % ("process start (--version)", line))
for name, prompt in prompts:
    body = json.dumps({"session_id": "bench", "transcript_path": "/tmp/t.jsonl",
                       "cwd": ws, "hook_event_name": "UserPromptSubmit",
                       "prompt": prompt}).encode()
    line, out = measure(hook, body)
    print("%-30s %s" % (name, line))
    if out:
        ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        print("    " + "\n    ".join(l[:110] for l in ctx.splitlines()))
EOF
