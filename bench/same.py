#!/usr/bin/env python3
"""Everything a restructuring must leave unchanged, written to a folder.

    python3 bench/same.py MNEMO OUT [--notes N] [--pg URL [--pgdb NAME]] [--work DIR]

Runs MNEMO (a built `mnemo`) on the bench workspace of N notes (build/bench/gen,
default 2000) with the clock fixed (MNEMO_NOW): the 200 bench queries as
`search --json --explain` (timings stripped), trigger recall for the 200 bench
messages, `status`-free memory work (200 memories imported with fixed ids, 20
added, updated, confirmed, deleted; `memory search` for 50 queries with and
without filters, `memory list`, `recall`, `history`, `export`), all on SQLite
and, with --pg, again on that PostgreSQL server (in a database NAME, default
mnemo_same, made afresh each run; URL names a database the role can create others from).
Memory ids made by `add` are replaced by their order of appearance.

Two binaries are the same when `diff -r OUT1 OUT2` prints nothing. Each file
holds one command's output, prefixed by the command line.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse

CATS = ["identity", "preference", "decision", "technical", "project",
        "relationship", "operational", "rule", "configuration"]

ap = argparse.ArgumentParser()
ap.add_argument("mnemo")
ap.add_argument("out")
ap.add_argument("--notes", type=int, default=2000)
ap.add_argument("--pg", default="")
ap.add_argument("--pgdb", default="mnemo_same")
ap.add_argument("--work", default="/tmp/mnemo-same")
a = ap.parse_args()

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
gen = os.path.join(root, "build", "bench", "gen")
mnemo = os.path.abspath(a.mnemo)
os.makedirs(a.work, exist_ok=True)
ws = os.path.join(a.work, "ws%d" % a.notes)
if not os.path.isdir(ws):
    subprocess.run([gen, ws, str(a.notes)], check=True, stdout=subprocess.DEVNULL)
queries = [q for q in open(ws + ".queries").read().splitlines() if q.strip()]
messages = [q for q in open(ws + ".messages").read().splitlines() if q.strip()]

env = dict(os.environ)
env["MNEMO_NOW"] = "2026-12-01T12:00:00Z"
env.pop("MNEMO_DB", None)
env["XDG_DATA_HOME"] = os.path.join(a.work, "xdg")

ids = {}
uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
timing = re.compile(r'"(ms|seconds|timings?)": *(\{[^{}]*\}|[0-9.e+-]+),? *')


def norm(s):
    def one(mo):
        u = mo.group(0)
        if u.startswith("00000000-"):
            return u
        if u not in ids:
            ids[u] = "id-%d" % len(ids)
        return ids[u]
    s = uuid.sub(one, s)
    return timing.sub("", s)


def run(base, args, out, name, stdin=None):
    p = subprocess.run([mnemo] + base + args, env=env, input=stdin,
                       capture_output=True, text=True)
    with open(os.path.join(out, name), "a") as f:
        f.write(norm("$ mnemo %s\n" % " ".join(args)))
        f.write("exit %d\n" % p.returncode)
        f.write(norm(p.stdout))
        if p.returncode:
            f.write(norm(p.stderr))
    return p


def memories():
    """200 memories with fixed ids, texts drawn from the bench queries."""
    rows = []
    for i in range(200):
        q = queries[i % len(queries)]
        cat = CATS[i % len(CATS)]
        rows.append({
            "id": "00000000-0000-4000-8000-%012d" % i,
            "text": "Remember about %s: note %d says %s matters to %s" % (
                q, i, q.split()[0], "user" if i % 3 else "team"),
            "category": cat,
            "importance": round(0.3 + (i % 7) / 10, 2),
            "user_id": "u%d" % (i % 4),
            "agent_id": "a%d" % (i % 2),
            "created_at": "2026-%02d-%02dT10:00:00Z" % (1 + i % 11, 1 + i % 28),
        })
    return "".join(json.dumps(r) + "\n" for r in rows)


def backend(name, base):
    out = os.path.join(a.out, name)
    os.makedirs(out)
    ids.clear()
    run(base, ["index", "--json"], out, "index")
    for q in queries:
        run(base, ["search", "--json", "--explain", "--", q], out, "search")
    for q in queries[:50]:
        run(base, ["search", "--json", "-n", "3", "--kinds", "notes", "--", q], out, "search-n3")
    for msg in messages:
        run(base, ["recall", "--json", "--triggers", "--", msg], out, "recall-triggers")
    run(base, ["memory", "import", "-"], out, "memory-import", stdin=memories())
    added = []
    for i in range(20):
        p = run(base, ["memory", "add", "--json", "--category", CATS[i % len(CATS)],
                       "--importance", "%.2f" % (0.5 + i / 50),
                       "--", "Added fact %d: %s" % (i, queries[100 + i])], out, "memory-add")
        try:
            added.append(json.loads(p.stdout)["id"])
        except Exception:
            pass
    for i, mid in enumerate(added[:5]):
        run(base, ["memory", "update", "--json", mid, "--text",
                   "Updated fact %d about %s" % (i, queries[150 + i])], out, "memory-update")
        run(base, ["memory", "confirm", "--json", mid], out, "memory-confirm")
        run(base, ["memory", "history", "--json", mid], out, "memory-history")
    for mid in added[5:8]:
        run(base, ["memory", "delete", mid], out, "memory-delete")
        run(base, ["memory", "get", "--json", mid], out, "memory-get")
    for q in queries[:50]:
        run(base, ["memory", "search", "--json", "--", q], out, "memory-search")
        run(base, ["memory", "search", "--json", "--user", "u1", "--categories",
                   "preference,decision", "--", q], out, "memory-search-filtered")
    run(base, ["memory", "list", "--json", "--limit", "500"], out, "memory-list")
    run(base, ["memory", "list", "--json", "--deleted", "--limit", "500"], out, "memory-list")
    run(base, ["memory", "list", "--json", "--filters",
               '{"AND":[{"importance":{"gte":0.5}},{"category":{"in":["project","rule"]}}]}'],
        out, "memory-list")
    for q in queries[:20]:
        run(base, ["search", "--json", "--", q], out, "search-all")
        run(base, ["recall", "--json", "--message", q], out, "recall")
    run(base, ["memory", "export"], out, "memory-export")


if os.path.exists(a.out):
    shutil.rmtree(a.out)
os.makedirs(a.out)
lite = os.path.join(a.work, "lite")
shutil.rmtree(lite, ignore_errors=True)
os.makedirs(lite)
backend("sqlite", ["-w", ws, "--db", os.path.join(lite, "index.sqlite")])
if a.pg:
    for sql in ("DROP DATABASE IF EXISTS %s WITH (FORCE)" % a.pgdb, "CREATE DATABASE " + a.pgdb):
        p = subprocess.run(["psql", "-q", a.pg, "-c", sql], capture_output=True, text=True)
        if p.returncode:
            sys.exit("cannot make a fresh database: " + p.stderr)
    u = urllib.parse.urlsplit(a.pg)
    dsn = urllib.parse.urlunsplit(u._replace(path="/" + a.pgdb))
    backend("postgres", ["-w", ws, "--store", dsn,
                         "--db", os.path.join(lite, "pg-local.sqlite")])
print("wrote", a.out)
