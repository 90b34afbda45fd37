#!/usr/bin/env python3
"""Retrieval quality of `mnemo search` on the BEIR SciFact benchmark.

Builds a workspace with one note per abstract (memory/doc/<_id>.md), indexes
it once, runs every test query through `mnemo search --json` as a separate
process and reports nDCG@10 (the BEIR headline metric), Recall@100 and MRR@10.
Published BM25 baselines score nDCG@10 0.665-0.679 on SciFact.

A note may be split into several chunks, so several results may share a path:
a document's rank is that of its first (best-scoring) chunk.

Standard library only. Example:

    make build/mnemo
    python3 bench/scifact.py
    python3 bench/scifact.py --set bm25K1=1.2 --set bm25B=0.75 --per-query /tmp/pq.tsv
"""
import argparse
import concurrent.futures
import gzip
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_DATA = os.path.normpath(os.path.join(REPO, "..", "shared", "data", "scifact"))
DEFAULT_MNEMO = os.path.join(REPO, "build", "mnemo")
DOC_PREFIX = "memory/doc/"
MARKER = ".scifact-bench"  # marks a work dir this script created, safe to reuse


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="nDCG@10 / Recall@100 / MRR@10 of mnemo search on BEIR SciFact")
    p.add_argument("--data", default=DEFAULT_DATA,
                   help="SciFact directory: corpus.jsonl.gz, queries.jsonl, qrels/test.tsv "
                        "(default: %(default)s)")
    p.add_argument("--mnemo", default=DEFAULT_MNEMO, help="mnemo binary (default: %(default)s)")
    p.add_argument("--work", help="work directory (default: a fresh temporary directory, "
                                  "removed afterwards unless --keep)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="passed to every mnemo invocation as --set KEY=VALUE (repeatable)")
    p.add_argument("--max-results", type=int, default=100, metavar="N",
                   help="results requested per query, 1..100 (default: %(default)s)")
    p.add_argument("--min-score", default="0", metavar="X",
                   help="passed to search as --min-score X; 'config' leaves mnemo's minScore "
                        "(0.35 by default), which cuts the ranked list short "
                        "(default: %(default)s, i.e. the full ranking)")
    p.add_argument("--jobs", type=int, default=2, help="parallel searches (default: %(default)s)")
    p.add_argument("--per-query", metavar="FILE",
                   help="write per-query metrics as TSV (sorted by query id)")
    a = p.parse_args(argv)
    if not 1 <= a.max_results <= 100:
        p.error("--max-results must be 1..100")
    for s in a.sets:
        if "=" not in s:
            p.error("--set expects KEY=VALUE, got %r" % s)
    if a.min_score != "config":
        try:
            v = float(a.min_score)
        except ValueError:
            p.error("--min-score expects a number 0..1 or 'config'")
        if not 0 <= v <= 1:
            p.error("--min-score expects a number 0..1 or 'config'")
    if a.jobs < 1:
        p.error("--jobs must be >= 1")
    return a


# ----------------------------------------------------------------------
# Data

def load_corpus(path):
    docs = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                docs.append((str(d["_id"]), d.get("title") or "", d.get("text") or ""))
    return docs


def load_queries(path):
    qs = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                qs[str(d["_id"])] = d["text"]
    return qs


def load_qrels(path):
    """{query id: {doc id: grade}}, in file order; the first line is a header."""
    qrels = {}
    with open(path, encoding="utf-8") as f:
        next(f, None)
        for line in f:
            parts = line.split()
            if len(parts) < 3:
                continue
            qid, did, grade = parts[0], parts[1], int(parts[2])
            qrels.setdefault(qid, {})[did] = grade
    return qrels


def doc_id_from_path(path):
    """memory/doc/<id>.md -> <id>; None for anything else."""
    if path.startswith(DOC_PREFIX) and path.endswith(".md"):
        return path[len(DOC_PREFIX):-3]
    return None


# ----------------------------------------------------------------------
# Metrics

def ndcg_at(ranked, judged, k=10):
    dcg = sum((2 ** judged.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall(ranked, judged):
    rel = {d for d, g in judged.items() if g > 0}
    return len(rel.intersection(ranked)) / len(rel) if rel else 0.0


def first_relevant(ranked, judged):
    """1-based rank of the first relevant doc, or 0."""
    for i, d in enumerate(ranked):
        if judged.get(d, 0) > 0:
            return i + 1
    return 0


# ----------------------------------------------------------------------
# mnemo

def mnemo_base(args, ws, db):
    cmd = [args.mnemo, "--workspace", ws, "--db", db]
    for s in args.sets:
        cmd += ["--set", s]
    return cmd


def clean_env():
    # Only what is passed on the command line configures mnemo.
    return {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}


def search_argv(args, ws, db, query):
    cmd = mnemo_base(args, ws, db) + ["search", "--json", "--max-results", str(args.max_results)]
    if args.min_score != "config":
        cmd += ["--min-score", args.min_score]
    return cmd + ["--", query]


def run_search(args, ws, db, env, query):
    """Returns (ranked doc ids, raw result count, seconds, error or None)."""
    argv = search_argv(args, ws, db, query)
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       stdin=subprocess.DEVNULL)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        msg = p.stderr.decode("utf-8", "replace").strip() or "exit %d" % p.returncode
        return [], 0, dt, msg
    try:
        results = json.loads(p.stdout)["results"]
    except (ValueError, KeyError, TypeError) as e:
        return [], 0, dt, "bad JSON: %s" % e
    ranked, seen = [], set()
    for r in results:
        did = doc_id_from_path(r.get("path", ""))
        if did is not None and did not in seen:
            seen.add(did)
            ranked.append(did)
    return ranked, len(results), dt, None


def effective_config(args, ws, db, env):
    p = subprocess.run(mnemo_base(args, ws, db) + ["config", "show"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        return {}
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {}


# ----------------------------------------------------------------------

def prepare_work(args):
    if args.work:
        work = os.path.abspath(args.work)
        if os.path.isdir(work) and os.listdir(work) and \
                not os.path.exists(os.path.join(work, MARKER)):
            sys.exit("scifact: %s is not empty and was not made by this script; "
                     "pick another --work" % work)
        os.makedirs(work, exist_ok=True)
        created = False
    else:
        work = tempfile.mkdtemp(prefix="mnemo-scifact-")
        created = True
    open(os.path.join(work, MARKER), "w").close()
    # Start from scratch: a stale note or index would skew the numbers.
    shutil.rmtree(os.path.join(work, "ws"), ignore_errors=True)
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(os.path.join(work, "index.sqlite" + suffix))
        except FileNotFoundError:
            pass
    return work, created


def write_workspace(ws, docs):
    d = os.path.join(ws, "memory", "doc")
    os.makedirs(d)
    for did, title, text in docs:
        if not did or "/" in did or did.startswith("."):
            sys.exit("scifact: unusable document id %r" % did)
        with open(os.path.join(d, did + ".md"), "w", encoding="utf-8") as f:
            f.write("# %s\n\n%s\n" % (title, text))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    args.mnemo = os.path.abspath(args.mnemo)
    if not os.access(args.mnemo, os.X_OK):
        sys.exit("scifact: %s is not executable (build it: make build/mnemo)" % args.mnemo)
    data = os.path.abspath(args.data)
    docs = load_corpus(os.path.join(data, "corpus.jsonl.gz"))
    queries = load_queries(os.path.join(data, "queries.jsonl"))
    qrels = load_qrels(os.path.join(data, "qrels", "test.tsv"))
    missing = [q for q in qrels if q not in queries]
    if missing:
        sys.exit("scifact: %d qrels queries have no text, e.g. %s" % (len(missing), missing[0]))
    doc_ids = {d[0] for d in docs}
    unknown = sum(1 for j in qrels.values() for d in j if d not in doc_ids)
    qids = sorted(qrels, key=lambda q: (len(q), q))

    work, created = prepare_work(args)
    ws = os.path.join(work, "ws")
    db = os.path.join(work, "index.sqlite")
    env = clean_env()
    try:
        write_workspace(ws, docs)

        t0 = time.perf_counter()
        p = subprocess.run(mnemo_base(args, ws, db) + ["index", "--quiet"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           stdin=subprocess.DEVNULL)
        index_s = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit("scifact: index failed (exit %d): %s"
                     % (p.returncode, p.stderr.decode("utf-8", "replace").strip()))
        cfg = effective_config(args, ws, db, env)

        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
            futs = {q: ex.submit(run_search, args, ws, db, env, queries[q]) for q in qids}
            out = {q: f.result() for q, f in futs.items()}
        search_wall = time.perf_counter() - t0
    finally:
        if created and not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    rows, errors = [], []
    for q in qids:
        ranked, nraw, dt, err = out[q]
        if err:
            errors.append((q, err))
        judged = qrels[q]
        fr = first_relevant(ranked, judged)
        rows.append({
            "qid": q,
            "ndcg10": ndcg_at(ranked, judged, 10),
            "recall100": recall(ranked[:100], judged),
            "rr10": 1.0 / fr if 0 < fr <= 10 else 0.0,
            "first_rel": fr,
            "n_rel": sum(1 for g in judged.values() if g > 0),
            "n_docs": len(ranked),
            "n_results": nraw,
            "seconds": dt,
            "error": err or "",
            "query": queries[q],
        })

    n = len(rows)
    mean = lambda k: sum(r[k] for r in rows) / n if n else 0.0
    lat = sorted(r["seconds"] for r in rows)

    if args.per_query:
        cols = ["qid", "ndcg10", "recall100", "rr10", "first_rel", "n_rel", "n_docs",
                "n_results", "seconds", "error", "query"]
        with open(args.per_query, "w", encoding="utf-8") as f:
            f.write("\t".join(cols) + "\n")
            for r in rows:
                vals = []
                for c in cols:
                    v = r[c]
                    if isinstance(v, float):
                        v = "%.4f" % v if c != "seconds" else "%.3f" % v
                    vals.append(str(v).replace("\t", " ").replace("\n", " "))
                f.write("\t".join(vals) + "\n")

    repro = shlex.join([os.path.basename(sys.executable) or "python3",
                        os.path.relpath(os.path.abspath(__file__))] +
                       (sys.argv[1:] if argv is None else list(argv)))
    print("SciFact (BEIR, test split) - mnemo keyword search")
    print("  mnemo        %s" % args.mnemo)
    if cfg:
        shown = {k: json.dumps(cfg.get(k)) for k in ("bm25K1", "bm25B", "chunkTokens",
                                                     "chunkOverlap", "language", "stopWords",
                                                     "minScore")}
        if args.min_score != "config":
            shown["minScore"] = args.min_score + " (--min-score)"
        print("  config       " + " ".join("%s=%s" % kv for kv in shown.items()))
    print("  docs         %d" % len(docs))
    print("  queries      %d%s" % (n, "  (%d judged pairs name unknown docs)" % unknown
                                    if unknown else ""))
    print("  index time   %.2f s" % index_s)
    print("  search       %.1f ms mean per process (median %.1f, p95 %.1f), %.1f s wall, "
          "%d workers, --max-results %d"
          % (1000 * mean("seconds"), 1000 * lat[n // 2] if n else 0,
             1000 * lat[min(n - 1, int(0.95 * n))] if n else 0, search_wall, args.jobs,
             args.max_results))
    print("  docs/query   %.1f distinct docs from %.1f results (mean)"
          % (mean("n_docs"), mean("n_results")))
    if errors:
        print("  ERRORS       %d queries failed, e.g. %s: %s"
              % (len(errors), errors[0][0], errors[0][1]))
    print("  nDCG@10      %.4f" % mean("ndcg10"))
    print("  Recall@100   %.4f" % mean("recall100"))
    print("  MRR@10       %.4f" % mean("rr10"))
    print("  nDCG@10 = 0  %d queries" % sum(1 for r in rows if r["ndcg10"] == 0))
    if args.per_query:
        print("  per-query    %s" % args.per_query)
    if args.keep or not created:
        print("  work dir     %s" % work)
    print("  reproduce    %s" % repro)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
