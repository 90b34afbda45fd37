#!/usr/bin/env python3
"""Search latency three ways, over the same queries of a bench workspace:

  in process   mnemo.Mnemo.search from Python (the package in python/)
  process      a `mnemo search --json` process per query
  daemon       `mnemo serve`, POST /v1/search over one keep-alive connection

Prints p50, p90 and p99 per way. Run it on an idle machine, after
`make bench && bench/run.sh 10000` (which writes the workspace, its index and
its queries under /tmp/mnemo-bench) and with the package installed
(pip install ./python):

    python3 bench/python.py [N] [--runs R] [--bin build/mnemo] [--set KEY=VALUE ...]

N is the workspace's size (default 10000); R the passes over the queries
(default 3, after one warm-up pass). --set passes a setting to all three
(e.g. --set provider=static --set model=glove20k). Each way reads the same
copy of the index.
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

import mnemo


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def timed(fn, queries, runs):
    for q in queries:  # warm-up pass: page cache, SQLite's cache, a loaded model
        fn(q)
    out = []
    for _ in range(runs):
        for q in queries:
            t0 = time.perf_counter()
            fn(q)
            out.append((time.perf_counter() - t0) * 1000)
    return out


def settings_dict(sets):
    d = {}
    for s in sets:
        k, _, v = s.partition("=")
        d[k] = v
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bin", default="build/mnemo")
    ap.add_argument("--dir", default=os.environ.get("BENCH_DIR", "/tmp/mnemo-bench"))
    ap.add_argument("--set", action="append", default=[], dest="sets")
    a = ap.parse_args()

    ws = os.path.join(a.dir, f"ws{a.n}")
    src_db = os.path.join(a.dir, f"ws{a.n}.sqlite")
    qfile = os.path.join(a.dir, f"ws{a.n}.queries")
    for p in (ws, src_db, qfile):
        if not os.path.exists(p):
            sys.exit(f"bench/python.py: no {p}: run bench/run.sh {a.n} first")
    db = os.path.join(a.dir, f"ws{a.n}.python.sqlite")
    shutil.copyfile(src_db, db)
    with open(qfile, encoding="utf-8") as f:
        queries = [line.strip() for line in f if line.strip()]
    flags = [x for s in a.sets for x in ("--set", s)]
    rows = []

    # 1. in process
    with mnemo.open(ws, db, **settings_dict(a.sets)) as m:
        m.index()  # a no-op unless the workspace changed
        rows.append(("in process (Python)", timed(m.search, queries, a.runs)))

    # 2. a process per search
    def cli(q):
        subprocess.run([a.bin, "-w", ws, "--db", db, *flags, "search", "--json", q],
                       check=True, stdout=subprocess.DEVNULL)
    rows.append(("process (mnemo search --json)", timed(cli, queries, a.runs)))

    # 3. the daemon over HTTP, one keep-alive connection
    port = 20000 + os.getpid() % 20000
    log = open(os.path.join(a.dir, "python-serve.log"), "w")
    daemon = subprocess.Popen([a.bin, "-w", ws, "--db", db, *flags, "serve", "--listen",
                               f"127.0.0.1:{port}", "--no-watch"], stderr=log)
    try:
        conn = None
        for _ in range(600):
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request("GET", "/health")
                conn.getresponse().read()
                break
            except OSError:
                conn = None
                time.sleep(0.1)
        if conn is None:
            sys.exit("bench/python.py: the daemon did not start (see python-serve.log)")

        def http_search(q):
            conn.request("POST", "/v1/search", body=json.dumps({"query": q}),
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                raise RuntimeError(f"/v1/search: HTTP {r.status}")
        rows.append(("daemon (POST /v1/search, keep-alive)", timed(http_search, queries, a.runs)))
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
        log.close()

    print(f"{a.n} notes, {len(queries)} queries x {a.runs} runs, mnemo {mnemo.version()}")
    print(f"{'':40} {'p50 ms':>9} {'p90 ms':>9} {'p99 ms':>9} {'mean ms':>9}")
    for name, xs in rows:
        print(f"{name:40} {percentile(xs, 50):9.3f} {percentile(xs, 90):9.3f} "
              f"{percentile(xs, 99):9.3f} {statistics.fmean(xs):9.3f}")


if __name__ == "__main__":
    main()
