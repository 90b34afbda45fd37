"""Search, get, status and index through the package, compared with the command's --json."""
import json

import pytest

import mnemo
from conftest import cli

QUERIES = [
    "postgres migration",
    "gateway latency",
    "kafka",
    "rollback runbook",
    '"backup restore"',
    "incident -review",
    "dark mode",
    "terraform helm ingress",
    "alpha",
    "nothing-matches-this-word",
]


@pytest.mark.parametrize("query", QUERIES)
def test_search_equals_cli_json(indexed, handle, query):
    ws, db = indexed
    want = cli(ws, db, "search", "--json", query)
    got = handle.search(query)
    assert [r.to_dict() for r in got] == want["results"]
    assert got.mode == want["mode"]
    assert handle.search_json(query) == want


@pytest.mark.parametrize(
    "flags,kw",
    [
        (["--max-results", "2"], {"max_results": 2}),
        (["--max-results", "20", "--min-score", "0.3"], {"max_results": 20, "min_score": 0.3}),
        (["--explain"], {"explain": True}),
        (["--kinds", "note"], {"kinds": "note"}),
        (["--strict", "--min-score", "0.9"], {"strict": True, "min_score": 0.9}),
    ],
)
def test_search_options_equal_cli(indexed, handle, flags, kw):
    ws, db = indexed
    want = cli(ws, db, "search", "--json", *flags, "postgres cutover")
    got = handle.search("postgres cutover", **kw)
    assert [r.to_dict() for r in got] == want["results"]
    dropped = {k: v for k, v in kw.items()}
    want_all = handle.search_json("postgres cutover", **dropped)
    if not kw.get("explain"):  # explain adds timings that differ run to run
        assert want_all == want


def test_results_are_typed(handle):
    res = handle.search("postgres migration", max_results=3)
    assert 0 < len(res) <= 3
    for r in res:
        assert isinstance(r, mnemo.Result)
        assert r.kind == "note" and not r.is_fact
        assert isinstance(r.path, str) and r.path.endswith(".md")
        assert 1 <= r.start_line <= r.end_line
        assert 0 < r.score <= 1
        assert r.citation == f"{r.path}#L{r.start_line}-L{r.end_line}"
        assert r.source == "memory"
    assert [r.score for r in res] == sorted((r.score for r in res), reverse=True)


def test_get_reads_a_citation(handle):
    r = handle.search("gateway latency", max_results=1)[0]
    e = handle.get(r.citation)
    assert e.path == r.path
    assert e.from_line == r.start_line and e.to_line == r.end_line
    # the snippet is whole lines of the file
    assert r.snippet.splitlines()[0] in e.text
    e2 = handle.get(r.path, from_line=1, lines=2)
    assert e2.from_line == 1 and e2.to_line == 2 and e2.text.count("\n") == 2
    assert e2.total_lines >= 2


def test_get_equals_cli(indexed, handle):
    ws, db = indexed
    want = cli(ws, db, "get", "--json", "MEMORY.md", "--from", "2", "--lines", "3")
    e = handle.get("MEMORY.md", from_line=2, lines=3)
    assert e.text == want["text"]
    assert e.from_line == want["from"] and e.to_line == want["to"]


def test_status(indexed, handle):
    ws, db = indexed
    st = handle.status()
    assert st["indexed"] is True
    want = cli(ws, db, "status", "--json")
    assert st["files"] == want["files"] and st["chunks"] == want["chunks"]
    assert handle.workspace == want["workspace"]
    assert handle.db_path == db


def test_index_progress_and_stats(tmp_path):
    from conftest import write_workspace

    ws = write_workspace(str(tmp_path / "ws"), n_notes=12)
    seen = []
    with mnemo.open(ws, str(tmp_path / "i.sqlite")) as m:
        st = m.index(progress=seen.append)
        assert isinstance(st, mnemo.IndexStats)
        assert st.files_added == st.files_seen == 14
        assert st.chunks_added > 0 and st.rebuilt
        assert seen and all(isinstance(p, mnemo.Progress) for p in seen)
        assert {"scan", "index"} <= {p.phase for p in seen} <= {"scan", "index", "embed"}
        again = m.index()
        assert again.files_unchanged == 14 and again.files_added == 0
        forced = m.index(force=True)
        assert forced.rebuilt and forced.files_added == 14


def test_progress_exception_is_raised_after_the_run(tmp_path):
    from conftest import write_workspace

    ws = write_workspace(str(tmp_path / "ws"), n_notes=3)

    def boom(p):
        raise RuntimeError("stop")

    with mnemo.open(ws, str(tmp_path / "p.sqlite")) as m:
        with pytest.raises(RuntimeError, match="stop"):
            m.index(progress=boom)
        assert m.search("postgres OR kafka OR alpha", max_results=1) is not None  # still usable


def test_callback_cannot_reenter_its_handle(tmp_path):
    from conftest import write_workspace

    ws = write_workspace(str(tmp_path / "ws"), n_notes=3)
    with mnemo.open(ws, str(tmp_path / "r.sqlite")) as m:
        def reenter(p):
            m.search("kafka")

        with pytest.raises(mnemo.Misuse):
            m.index(progress=reenter)


def test_settings_map_python_names(indexed):
    ws, db = indexed
    with mnemo.open(ws, db, max_results=2) as m:
        assert len(m.search("postgres kafka redis alpha")) == 2
    with mnemo.open(ws, db, maxResults=1) as m:
        assert len(m.search("postgres kafka redis alpha")) == 1
    assert "maxResults" in mnemo.settings()


def test_config_file(indexed, tmp_path):
    ws, db = indexed
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"maxResults": 1}))
    with mnemo.open(ws, db, config_file=cfg) as m:
        assert len(m.search("postgres kafka redis alpha")) == 1
    with pytest.raises(mnemo.NotFound):
        mnemo.open(ws, db, config_file=tmp_path / "missing.json")


def test_not_indexed_yet(tmp_path):
    from conftest import write_workspace

    ws = write_workspace(str(tmp_path / "ws"), n_notes=2)
    with mnemo.open(ws, str(tmp_path / "none.sqlite")) as m:
        with pytest.raises(mnemo.NotFound) as ei:
            m.search("kafka")
        assert ei.value.code == mnemo.NotFound.code == 6
        assert ei.value.name == "not_found"


def test_files_are_those_the_index_holds(handle, indexed):
    ws, db = indexed
    f = handle.files()
    assert f["indexed"] and f["count"] == len(f["files"]) and not f["truncated"]
    paths = [x["path"] for x in f["files"]]
    assert paths == sorted(paths) and "MEMORY.md" in paths and "USER.md" in paths
    assert all(x["kind"] == "memory" and x["chunks"] >= 1 for x in f["files"])
    # every cited path of a search is one of them, and reads back
    hits = handle.search("kubernetes deploy", max_results=5)
    assert hits and all(h.path in paths for h in hits)
    assert handle.get(paths[0]).text
    assert handle.files(limit=2)["truncated"] and len(handle.files(limit=2)["files"]) == 2
