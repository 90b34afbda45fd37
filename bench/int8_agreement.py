#!/usr/bin/env python3
"""int8_agreement.py - how far int8 moves the local encoder's vectors, mnemo beside ONNX Runtime.

    python3 bench/int8_agreement.py MNEMO [--model minilm] [--model-dir DIR] [--n 300]

Embeds N sentences (the lines of the project's own docs, 40 characters or more) four
ways: mnemo with float weights and with localQuantization=int8 (`MNEMO embed`), and ONNX
Runtime's float graph and its dynamic quantization (quantize_dynamic: int8 weights,
activations quantized per batch; the graph of bench/embed_server.py). Prints the lowest,
5th-percentile and mean cosine of each int8 vector to its float one, and mnemo's float
against ONNX Runtime's float (which should be 1). Needs onnxruntime, onnx, safetensors and
tokenizers from PyPI, and the model imported into mnemo (mnemo model import DIR --name NAME).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from embed_server import build_onnx, default_model_dir  # noqa: E402
from local_ort import quantized  # noqa: E402


def sentences(n):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    out = []
    for p in sorted(glob.glob(os.path.join(root, "docs", "*.md"))):
        for line in open(p, encoding="utf-8"):
            line = line.strip()
            if len(line) >= 40 and not line.startswith("-") and line not in out:
                out.append(line)
    step = max(1, len(out) // n)
    return out[::step][:n]


def mnemo_vectors(mnemo, model, texts, int8):
    args = [mnemo, "embed", "--document", "--set", "provider=local", "--set", "model=" + model,
            "--set", "localQuantization=" + ("int8" if int8 else "none")]
    vs = []
    for i in range(0, len(texts), 50):
        r = subprocess.run(args + texts[i:i + 50], capture_output=True, text=True, check=True,
                           cwd=tempfile.gettempdir())
        vs += json.loads(r.stdout)["vectors"]
    return np.array(vs, dtype=np.float64)


def ort_vectors(model_dir, texts, int8):
    import onnxruntime as ort
    from tokenizers import Tokenizer
    model = build_onnx(model_dir)
    if int8:
        model = quantized(model)
    s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.enable_truncation(256)
    tok.no_padding()
    vs = []
    for t in texts:  # one at a time: no padding in the graph's input
        ids = np.array([tok.encode(t).ids], np.int64)
        vs.append(s.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0])
    return np.array(vs, dtype=np.float64)


def report(name, a, b):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    c = np.sort((a * b).sum(axis=1))
    print("%-40s lowest %.5f  5th pct %.5f  mean %.5f" % (name, c[0], c[len(c) // 20], c.mean()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mnemo")
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--model-dir", default=None)
    ap.add_argument("--n", type=int, default=300)
    a = ap.parse_args()
    d = a.model_dir or default_model_dir()
    texts = sentences(a.n)
    mf = mnemo_vectors(a.mnemo, a.model, texts, False)
    mq = mnemo_vectors(a.mnemo, a.model, texts, True)
    of = ort_vectors(d, texts, False)
    oq = ort_vectors(d, texts, True)
    print("%d sentences" % len(texts))
    report("mnemo float vs ONNX Runtime float", mf, of)
    report("mnemo int8 vs mnemo float", mq, mf)
    report("ONNX Runtime int8 vs its float", oq, of)
    report("mnemo int8 vs ONNX Runtime int8", mq, oq)


if __name__ == "__main__":
    main()
