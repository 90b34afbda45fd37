"""No leaks over 10,000 calls: Python objects (tracemalloc) and the process (RSS)."""
import gc
import os
import resource
import tracemalloc

import mnemo


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def test_ten_thousand_calls(fresh):
    m, ws, db = fresh
    mem = m.memories.add("The leak test remembers kafka and redis", category="fact")

    def calls(n):
        for i in range(n):
            k = i % 5
            if k == 0:
                m.search("postgres kafka")
            elif k == 1:
                m.search("gateway", kinds="note", max_results=3, explain=True)
            elif k == 2:
                m.memories.get(mem.id)
            elif k == 3:
                m.get("MEMORY.md", from_line=1, lines=5)
            else:
                try:
                    m.search("")
                except mnemo.InvalidArgument:
                    pass

    calls(1000)  # warm up: caches, the SQLite page cache
    gc.collect()
    rss0 = rss_bytes()
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    calls(10000)
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    rss1 = rss_bytes()
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    assert grown < 256 * 1024, snap1.compare_to(snap0, "lineno")[:10]
    assert rss1 - rss0 < 16 * 1024 * 1024, (rss0, rss1)


def test_open_close_many(indexed):
    ws, db = indexed
    for _ in range(200):
        with mnemo.open(ws, db) as m:
            m.search("kafka", max_results=1)
    gc.collect()
    rss0 = rss_bytes()
    for _ in range(1000):
        with mnemo.open(ws, db) as m:
            m.search("kafka", max_results=1)
    gc.collect()
    assert rss_bytes() - rss0 < 16 * 1024 * 1024
