"""Fixtures: a workspace of Markdown notes written by the tests, its index (a
real SQLite file) made by the package, and the mnemo command of the checkout
to compare with (MNEMO_BIN, else ../../build/mnemo)."""
import json
import os
import random
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

# The tests own their configuration: no user config file, no MNEMO_* variables
# (for the package and the command alike).
for _k in list(os.environ):
    if _k.startswith("MNEMO_") and _k != "MNEMO_BIN" and not _k.startswith("MNEMO_TEST_"):
        del os.environ[_k]


@pytest.fixture(scope="session", autouse=True)
def _isolated_config(tmp_path_factory):
    cfg = tmp_path_factory.mktemp("xdg")
    os.environ["XDG_CONFIG_HOME"] = str(cfg)
    os.environ["XDG_DATA_HOME"] = str(cfg)
    os.environ["XDG_CACHE_HOME"] = str(cfg)
    yield


def mnemo_bin():
    b = os.environ.get("MNEMO_BIN") or os.path.join(HERE, "..", "..", "build", "mnemo")
    if not os.access(b, os.X_OK):
        pytest.fail(f"the mnemo command is missing: {b} (make, or set MNEMO_BIN)")
    return b


WORDS = (
    "postgres migration deploy gateway latency cache invoice billing kafka redis "
    "replica cutover runbook rollback schema index vacuum backup restore cluster "
    "terraform ansible kubernetes helm ingress certificate rotation token secret "
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima "
    "monitoring alert pager oncall incident review budget roadmap hiring offsite"
).split()


def write_workspace(root, n_notes=40, seed=7, lines=12):
    """MEMORY.md, USER.md and N notes of words from WORDS, deterministic."""
    rnd = random.Random(seed)
    os.makedirs(os.path.join(root, "memory", "projects"), exist_ok=True)

    def para(k):
        return " ".join(rnd.choice(WORDS) for _ in range(k))

    with open(os.path.join(root, "MEMORY.md"), "w", encoding="utf-8") as f:
        f.write("# Memory\n\n")
        for _ in range(15):
            f.write(f"- {para(14)}.\n")
    with open(os.path.join(root, "USER.md"), "w", encoding="utf-8") as f:
        f.write("# User\n\n- Prefers dark mode and terse answers.\n- Lives in Berlin.\n")
    for i in range(n_notes):
        day = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}"
        sub = "projects/" if i % 3 == 0 else ""
        with open(os.path.join(root, "memory", f"{sub}{day}-n{i}.md"), "w",
                  encoding="utf-8") as f:
            f.write(f"# Note {i}: {para(3)}\n\n")
            for _ in range(lines):
                f.write(f"{para(12)}.\n")
                if rnd.random() < 0.2:
                    f.write("\n## " + para(2) + "\n\n")
    return root


def cli(ws, db, *args, check=True):
    """Runs the command on WS and DB; its stdout parsed as JSON."""
    p = subprocess.run([mnemo_bin(), "--workspace", str(ws), "--db", str(db), *args],
                       capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"mnemo {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return json.loads(p.stdout) if p.stdout.strip() else None


@pytest.fixture(scope="session")
def workspace(tmp_path_factory):
    return write_workspace(str(tmp_path_factory.mktemp("ws")))


@pytest.fixture(scope="session")
def indexed(workspace, tmp_path_factory):
    """(workspace, db): the workspace indexed by the package."""
    import mnemo

    db = str(tmp_path_factory.mktemp("db") / "index.sqlite")
    with mnemo.open(workspace, db) as m:
        st = m.index()
        assert st.files_added > 40
    return workspace, db


@pytest.fixture
def handle(indexed):
    import mnemo

    ws, db = indexed
    with mnemo.open(ws, db) as m:
        yield m


@pytest.fixture
def fresh(tmp_path):
    """A small workspace of its own with an empty store, for tests that write."""
    import mnemo

    ws = write_workspace(str(tmp_path / "ws"), n_notes=5)
    db = str(tmp_path / "own.sqlite")
    with mnemo.open(ws, db) as m:
        m.index()
        yield m, ws, db


sys.path.insert(0, HERE)
