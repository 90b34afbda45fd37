"""The memory API, each call compared with `mnemo memory ... --json` on the same store."""
import json

import pytest

import mnemo
from conftest import cli


def test_add_get_round_trip(fresh):
    m, ws, db = fresh
    a = m.memories.add("User prefers dark mode in every editor", category="preference",
                       metadata={"source": "chat", "n": 2}, user_id="alice")
    assert isinstance(a, mnemo.Memory)
    assert a.category == "preference" and a.user_id == "alice"
    assert a.metadata == {"source": "chat", "n": 2} and not a.duplicate
    got = m.memories.get(a.id)
    assert got.to_dict() == cli(ws, db, "memory", "get", a.id, "--json")
    assert got.text == a.text and got.id == a.id
    dup = m.memories.add("User prefers dark mode in every editor", category="preference",
                         user_id="alice")
    assert dup.duplicate and dup.id == a.id


def test_cli_add_python_get(fresh):
    m, ws, db = fresh
    out = cli(ws, db, "memory", "add", "Deploys happen on Tuesdays", "--category", "decision",
              "--json")
    got = m.memories.get(out["id"])
    assert got.to_dict() == out
    assert got.category == "decision"


def test_update_delete_restore_history(fresh):
    m, ws, db = fresh
    a = m.memories.add("The staging cluster runs kubernetes 1.29", category="fact")
    u = m.memories.update(a.id, text="The staging cluster runs kubernetes 1.30")
    assert u.text.endswith("1.30")
    assert u.to_dict() == cli(ws, db, "memory", "get", a.id, "--json")
    m.memories.delete(a.id)
    assert m.memories.get(a.id).deleted
    with pytest.raises(mnemo.NotFound):
        m.memories.delete(a.id)
    r = m.memories.restore(a.id)
    assert not r.deleted
    c = m.memories.confirm(a.id)
    assert c.confirmations == 1
    hist = m.memories.history(a.id)
    assert [h.event for h in hist] == ["ADD", "UPDATE", "DELETE", "RESTORE", "CONFIRM"]
    want = cli(ws, db, "memory", "history", a.id, "--json")
    assert [h.event for h in hist] == [e["event"] for e in want]
    assert [h.new_text for h in hist] == [e.get("new_text") for e in want]


def test_list_and_search_equal_cli(fresh):
    m, ws, db = fresh
    for i, (t, c) in enumerate([("Prefers tea over coffee", "preference"),
                                ("Chose PostgreSQL for billing", "decision"),
                                ("Allergic to peanuts", "health"),
                                ("Prefers short answers", "preference")]):
        m.memories.add(t, category=c, importance=0.5 + i / 10)
    lst = m.memories.list()
    assert lst.to_dict() == cli(ws, db, "memory", "list", "--json")
    assert lst.total == 4 and len(lst) == 4
    s = m.memories.search("prefers")
    assert s.to_dict() == cli(ws, db, "memory", "search", "prefers", "--json")
    assert {x.text for x in s} == {"Prefers tea over coffee", "Prefers short answers"}
    assert all(x.score is not None and 0 < x.score <= 1 for x in s)
    filt = {"AND": [{"category": "preference"}, {"importance": {"gte": 0.75}}]}
    f = m.memories.list(filters=filt)
    assert f.to_dict() == cli(ws, db, "memory", "list", "--filters", json.dumps(filt), "--json")
    assert [x.text for x in f] == ["Prefers short answers"]


def test_facts_in_search_equal_cli(fresh):
    m, ws, db = fresh
    m.memories.add("The gateway latency budget is 40 ms", category="decision")
    want = cli(ws, db, "search", "--json", "gateway latency")
    got = m.search("gateway latency")
    assert [r.to_dict() for r in got] == want["results"]
    facts = [r for r in got if r.is_fact]
    assert facts and facts[0].category == "decision" and facts[0].citation.startswith("memory://")
    only = m.search("gateway latency", kinds="fact")
    assert only and all(r.is_fact for r in only)
    assert [r.to_dict() for r in only] == cli(ws, db, "search", "--json", "--kinds", "fact",
                                              "gateway latency")["results"]
    none = m.search("gateway latency", kinds=["fact"], filters={"category": "preference"})
    assert list(none) == []


def test_recall(fresh):
    m, ws, db = fresh
    m.memories.add("User's editor theme is solarized dark", category="preference")
    block = m.recall("which editor theme does the user like?", strategy="always")
    assert block.startswith("<recalled-memories") and "solarized" in block
    assert m.recall("anything", strategy="manual") == ""


def test_purge(fresh):
    m, ws, db = fresh
    a = m.memories.add("A memory to purge")
    m.memories.delete(a.id)
    assert m.memories.purge(a.id) == 1
    with pytest.raises(mnemo.NotFound):
        m.memories.get(a.id)


def test_counts_per_week_equal_the_list(fresh):
    m, ws, db = fresh
    m.memories.add("User likes tea", category="preference", user_id="carol")
    m.memories.add("Deploys happen on Tuesdays", category="decision", user_id="carol")
    m.memories.add("User lives in Lisbon", category="identity", user_id="carol")
    c = m.memories.counts(user_id="carol")
    assert c["total"] == 3 == m.memories.list(user_id="carol").total
    assert sum(b["total"] for b in c["buckets"]) == 3
    cats = {k for b in c["buckets"] for k in b["byCategory"]}
    assert cats == {"preference", "decision", "identity"}
    assert all(b["start"].endswith("T00:00:00Z") for b in c["buckets"])
    only = m.memories.counts(user_id="carol", categories=["decision"], bucket="day")
    assert only["total"] == 1
    with pytest.raises(mnemo.InvalidArgument):
        m.memories.counts(user_id="carol", bucket="fortnight")
