"""The runnable example (a Mem0-style agent loop) runs against a workspace of its own."""
import os
import subprocess
import sys

from conftest import write_workspace

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")


def test_agent_loop_example(tmp_path):
    ws = write_workspace(str(tmp_path / "ws"), n_notes=4)
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, "agent_loop.py"), ws,
                        str(tmp_path / "agent.sqlite")],
                       capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "2 session memories stored" in p.stdout
