#!/usr/bin/env python3
"""gemma_shape.py - a GGUF file of EmbeddingGemma-300m's shape, for speed measurements only.

    python3 bench/gemma_shape.py OUT.gguf [--type Q8_0|F32|F16|BF16]

embeddinggemma-300m as llama.cpp converts it: architecture "gemma-embedding", 24 layers
(five sliding-window layers then a global one, window 512), hidden 768, 3 query heads sharing
one key/value head of 256 dimensions, feed-forward 1152, a context of 2048 tokens, the
sentence-transformers Dense layers (768 -> 3072 -> 768) and a SentencePiece vocabulary of
262,144 pieces. No registry package carries its weights, so the file is the test suite's
writer (tests/models/gemma_ref.py) at that shape: random weights (vectors of no use), its
vocabulary padded with made-up pieces to the real size; the same work per token and the same
file to open. Then:

    mnemo model import OUT.gguf --name gemma-shape
    mnemo embed --query --set provider=local --set model=gemma-shape "a question"

Needs the gguf package (PyPI) and numpy; about 2 GB of memory while it writes.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "models"))
import gemma_ref  # noqa: E402

SHAPE = (768, 24, 3, 1, 256, 1152, 2048, 512)  # as gemma_ref.TINY
VOCAB = 262144


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--type", default="Q8_0", choices=["Q8_0", "F32", "F16", "BF16"])
    a = ap.parse_args()
    gemma_ref.make(a.out, a.type, seed=7, shape=SHAPE, vocab=VOCAB, dense_mult=4)
    print("%s: %.0f MB" % (a.out, os.path.getsize(a.out) / 1e6))


if __name__ == "__main__":
    main()
