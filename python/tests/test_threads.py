"""Threads: separate handles search in parallel with the same results as one
thread; a shared handle takes turns; the GIL is released while the library works."""
import threading
import time

import mnemo
from conftest import write_workspace

QUERIES = ["postgres migration", "gateway latency", "kafka redis", "rollback", "alpha bravo",
           "incident review", "terraform", "backup restore cluster"]


def run_threads(n, target):
    errors = []

    def wrap(i):
        try:
            target(i)
        except BaseException as e:  # noqa: B902 - reported below
            errors.append(e)

    ts = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def test_separate_handles_match_serial(indexed):
    ws, db = indexed
    with mnemo.open(ws, db) as m:
        serial = {q: [r.to_dict() for r in m.search(q)] for q in QUERIES}
    got = {}

    def worker(i):
        with mnemo.open(ws, db) as m:
            for _ in range(25):
                for q in QUERIES[i % 2::2]:
                    got.setdefault((i, q), [r.to_dict() for r in m.search(q)])
                    assert [r.to_dict() for r in m.search(q)] == serial[q]

    run_threads(4, worker)
    assert len(got) == 4 * len(QUERIES) // 2


def test_shared_handle(indexed):
    ws, db = indexed
    with mnemo.open(ws, db) as m:
        serial = {q: [r.to_dict() for r in m.search(q)] for q in QUERIES}

        def worker(i):
            for _ in range(20):
                for q in QUERIES:
                    assert [r.to_dict() for r in m.search(q)] == serial[q]

        run_threads(4, worker)


def test_gil_released_while_indexing(tmp_path):
    ws = write_workspace(str(tmp_path / "big"), n_notes=1500, lines=20)
    done = threading.Event()
    count = 0
    took = []

    def index():
        with mnemo.open(ws, str(tmp_path / "big.sqlite")) as m:
            t0 = time.perf_counter()
            m.index()
            took.append(time.perf_counter() - t0)
        done.set()

    t = threading.Thread(target=index)
    t.start()
    while not done.is_set():
        count += 1
    t.join()
    # The counting loop ran all along: with the GIL held by the index run it
    # could not have run at all while the library worked.
    assert took and took[0] > 0.05
    assert count > 10000, (count, took)
