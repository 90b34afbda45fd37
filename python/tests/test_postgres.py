"""The PostgreSQL backend through the package, compared with the command on the same
server: set MNEMO_TEST_PG_URL to a postgres:// URL (tests/test_python.c starts a server
and sets it); without it these tests are skipped."""
import os
import uuid

import pytest

import mnemo
from conftest import cli, write_workspace

URL = os.environ.get("MNEMO_TEST_PG_URL")
pytestmark = pytest.mark.skipif(not URL, reason="MNEMO_TEST_PG_URL is not set")


@pytest.fixture
def pg(tmp_path):
    ws = write_workspace(str(tmp_path / "ws"), n_notes=10)
    tenant = "py-" + uuid.uuid4().hex[:12]
    with mnemo.open(ws, str(tmp_path / "unused.sqlite"), store=URL, tenant=tenant) as m:
        yield m, ws, tenant, str(tmp_path / "unused.sqlite")


def pg_cli(ws, db, tenant, *args):
    return cli(ws, db, "--store", URL, "--set", f"tenant={tenant}", *args)


def test_search_on_postgres_equals_cli(pg):
    m, ws, tenant, db = pg
    st = m.index()
    assert st.files_added == 12
    assert m.status()["files"] == 12
    for q in ("postgres migration", "gateway latency", "kafka -redis", "alpha"):
        want = pg_cli(ws, db, tenant, "search", "--json", q)
        got = m.search(q)
        assert [r.to_dict() for r in got] == want["results"], q
        assert got.mode == want["mode"]


def test_memories_on_postgres_equal_cli(pg):
    m, ws, tenant, db = pg
    m.index()
    a = m.memories.add("Billing runs on PostgreSQL 16", category="decision",
                       metadata={"ticket": 12})
    assert m.memories.get(a.id).to_dict() == pg_cli(ws, db, tenant, "memory", "get", a.id,
                                                    "--json")
    m.memories.update(a.id, text="Billing runs on PostgreSQL 17")
    assert m.memories.search("billing").to_dict() == pg_cli(ws, db, tenant, "memory",
                                                            "search", "billing", "--json")
    assert m.memories.list().to_dict() == pg_cli(ws, db, tenant, "memory", "list", "--json")
    m.memories.delete(a.id)
    assert [h.event for h in m.memories.history(a.id)] == ["ADD", "UPDATE", "DELETE"]
    with pytest.raises(mnemo.NotFound):
        m.memories.delete(a.id)
