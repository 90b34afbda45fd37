"""A Mem0-style agent loop with mnemo in place of ``Memory.search``.

Run: python examples/agent_loop.py WORKSPACE [DB]
The "LLM" here is a stub that echoes its prompt's size; swap in a real client.
"""
from __future__ import annotations

import sys
from typing import Callable, List

import mnemo


def fake_llm(prompt: str) -> str:
    return f"(an answer from a prompt of {len(prompt)} characters)"


def answer(m: mnemo.Mnemo, llm: Callable[[str], str], user_message: str,
           session: str) -> str:
    # Mem0: hits = memory.search(user_message, user_id="alice", limit=5)["results"]
    hits: List[mnemo.Result] = m.search(user_message, max_results=5)
    context = "\n".join(f"- {h.snippet} ({h.citation})" for h in hits)
    recalled = m.recall(user_message)
    reply = llm(f"{recalled}\nRelevant memory:\n{context}\n\nUser: {user_message}")
    # Mem0: memory.add(messages, user_id="alice", run_id=session)
    m.memories.add(f"User asked: {user_message}", category="context", run_id=session)
    return reply


def main(argv: List[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    db = argv[2] if len(argv) > 2 else None
    with mnemo.open(argv[1], db) as m:
        m.index()
        for q in ("what did we decide about the postgres migration?",
                  "which editor theme does the user like?"):
            print(q, "->", answer(m, fake_llm, q, session="demo-session"))
        facts = m.memories.list(scope="session", run_id="demo-session")
        print(f"{facts.total} session memories stored")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
