#!/usr/bin/env python3
"""Rewrites the questions of a LoCoMo JSON file the way an agent that follows
a keyword-query protocol (Mem0's recall instructions) asks: question words,
auxiliaries, pronouns, articles and filler dropped, the content words kept in
order ("When did Melanie paint a sunrise?" -> "Melanie paint sunrise").
The rules are general English, not fitted to the data.

Usage: locomo_keywords.py IN.json OUT.json"""
import json
import re
import sys

DROP = set("""
what when where who whom whose which why how
is are was were be been being am do does did done doing has have had having
will would shall should can could may might must
i me my mine myself you your yours yourself he him his himself she her hers herself
it its itself we us our ours ourselves they them their theirs themselves
a an the this that these those there here
of to in on at by for with from into onto about as than then so
and or but if not no nor also ever still just even
kind sort type some any many much more most very really quite
likely probably possibly recently lately currently usually often
something anything thing things someone anyone one ones
get got make made go going went like
""".split())

WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'&.+-]*")


def keywords(q):
    out = []
    for w in WORD.findall(q):
        w = w.rstrip(".")
        base = w.lower()
        if base.endswith("'s"):
            base = base[:-2]
            w = w[:-2]
        if base and base not in DROP:
            out.append(w)
    return " ".join(out) if out else q


def main():
    src, dst = sys.argv[1], sys.argv[2]
    data = json.load(open(src))
    for s in data:
        for q in s.get("qa", []):
            q["question"] = keywords(q["question"])
    json.dump(data, open(dst, "w"))


if __name__ == "__main__":
    main()
