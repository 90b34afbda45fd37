"""Bad input: clear exceptions with the library's status and message, nothing lost."""
import os

import pytest

import mnemo
from conftest import cli


def test_every_status_code_has_a_class():
    from mnemo import _mnemo

    for name, value, text, api in _mnemo.status_codes():
        if name == "OK":
            continue
        e = mnemo.Error("x", value)
        assert e.code == value and e.name == api
        assert _mnemo.strerror(value) == text
    assert issubclass(mnemo.InvalidArgument, ValueError)
    assert mnemo.BadInput is mnemo.InvalidArgument and mnemo.Corrupt is mnemo.Damaged
    assert issubclass(mnemo.NotFound, LookupError)


def test_invalid_utf8_query(handle):
    with pytest.raises(mnemo.InvalidArgument) as ei:
        handle.search(b"\xff\xfe postgres")
    assert ei.value.code == 7 and "UTF-8" in str(ei.value)
    with pytest.raises(mnemo.InvalidArgument):
        handle.search("postgres \udcff")
    with pytest.raises(mnemo.InvalidArgument):
        handle.search("post\x00gres")
    with pytest.raises(mnemo.InvalidArgument, match="empty query"):
        handle.search("")
    assert [r.to_dict() for r in handle.search(b"postgres")] == [
        r.to_dict() for r in handle.search("postgres")]


def test_invalid_utf8_note_is_indexed_like_the_cli(tmp_path):
    from conftest import write_workspace

    ws = write_workspace(str(tmp_path / "ws"), n_notes=2)
    with open(os.path.join(ws, "memory", "bad.md"), "wb") as f:
        f.write(b"# Broken\n\nzebrafish \xff\xfe\xc3 crossing notes\n")
    db = str(tmp_path / "u.sqlite")
    with mnemo.open(ws, db) as m:
        st = m.index()
        assert st.files_added == 5
        res = m.search("zebrafish")
        assert len(res) == 1 and res[0].path == "memory/bad.md"
        assert "crossing notes" in res[0].snippet
        res[0].snippet.encode("utf-8")  # text the library repaired, valid UTF-8
        assert [r.to_dict() for r in res] == cli(ws, db, "search", "--json", "zebrafish")["results"]


def test_damaged_database(tmp_path, workspace):
    db = tmp_path / "damaged.sqlite"
    db.write_bytes(b"this is not a database " * 500)
    with mnemo.open(workspace, str(db)) as m:
        with pytest.raises(mnemo.Damaged) as ei:
            m.search("postgres")
        assert ei.value.code == 10 and str(db) in str(ei.value)
        with pytest.raises(mnemo.Damaged):
            m.index()
    assert db.read_bytes().startswith(b"this is not a database")  # nothing overwritten


def test_missing_local_model(tmp_path, workspace):
    models = tmp_path / "models"
    models.mkdir()
    with mnemo.open(workspace, str(tmp_path / "l.sqlite"), provider="local",
                    model="no-such-model", models_dir=str(models)) as m:
        with pytest.raises(mnemo.Unavailable) as ei:
            m.index()
        assert "no-such-model" in str(ei.value)
        # a search with the named provider fails the same way
        with pytest.raises(mnemo.Unavailable):
            m.search("postgres")
    # the keyword index was still updated
    with mnemo.open(workspace, str(tmp_path / "l.sqlite"), provider="none") as m:
        assert len(m.search("postgres", max_results=1)) == 1


def test_bad_filter(fresh):
    m, ws, db = fresh
    with pytest.raises(mnemo.InvalidArgument, match="unknown operator"):
        m.memories.list(filters={"category": {"regex": "x"}})
    with pytest.raises(mnemo.InvalidArgument):
        m.memories.search("x", filters="{not json")
    with pytest.raises(mnemo.InvalidArgument):
        m.search("postgres", filters={"importance": {"gte": "high"}})


def test_bad_settings_and_kinds(workspace, tmp_path):
    with pytest.raises(mnemo.InvalidArgument, match="unknown configuration key"):
        mnemo.open(workspace, str(tmp_path / "x.sqlite"), no_such_setting=1)
    with pytest.raises(mnemo.InvalidArgument, match="maxResults"):
        mnemo.open(workspace, str(tmp_path / "x.sqlite"), max_results="lots")
    with mnemo.open(workspace, str(tmp_path / "x.sqlite")) as m:
        with pytest.raises(mnemo.InvalidArgument):
            m.search("x", kinds="pictures")


def test_denied_and_not_found(handle):
    with pytest.raises(mnemo.Denied):
        handle.get("/etc/passwd")
    with pytest.raises(mnemo.NotFound):
        handle.get("memory/none-such.md")
    with pytest.raises(mnemo.NotFound):
        handle.memories.get("00000000-0000-0000-0000-000000000000")


def test_secret_refused(fresh):
    m, _, _ = fresh
    with pytest.raises(mnemo.InvalidArgument):
        m.memories.add("my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD")
    assert len(m.memories.list()) == 0


def test_closed_handle(indexed):
    ws, db = indexed
    m = mnemo.open(ws, db)
    m.close()
    m.close()
    assert m.closed
    with pytest.raises(mnemo.Misuse):
        m.search("postgres")
