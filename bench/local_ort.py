#!/usr/bin/env python3
"""local_ort.py - the shapes of bench/localbench.c through ONNX Runtime, for comparison.

    python3 bench/local_ort.py [--model-dir DIR] [--threads N] [--int8]

Builds the same encoder graph as bench/embed_server.py (BertModel + mean pooling + L2
norm) from the model folder's safetensors, and times a query of 16 tokens (p50, p90 of
200) and documents of 256 tokens in batches of 32 (documents per second over 3 s), with
intra_op_num_threads = N. With --int8, the graph's weights are made int8 first by ONNX
Runtime's own dynamic quantization (quantize_dynamic: int8 weights, activations quantized
per batch), beside mnemo's localQuantization=int8. Needs onnxruntime, onnx and safetensors
from PyPI.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from embed_server import build_onnx, default_model_dir  # noqa: E402


def quantized(model):
    """MODEL (ONNX bytes) through ONNX Runtime's dynamic quantization (int8 weights)."""
    import tempfile
    from onnxruntime.quantization import QuantType, quantize_dynamic
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "f32.onnx"), os.path.join(tmp, "int8.onnx")
        with open(src, "wb") as f:
            f.write(model)
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8)
        with open(dst, "rb") as f:
            return f.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-dir", default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--int8", action="store_true")
    a = ap.parse_args()
    import onnxruntime as ort
    d = a.model_dir or default_model_dir()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = a.threads
    opts.inter_op_num_threads = 1
    model = build_onnx(d)
    if a.int8:
        model = quantized(model)
    s = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])

    def run(n, batch):
        ids = np.full((batch, n), 2033, np.int64)
        ids[:, 0], ids[:, -1] = 101, 102
        return s.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0]

    run(16, 1)
    lat = []
    for _ in range(200):
        t = time.perf_counter()
        run(16, 1)
        lat.append((time.perf_counter() - t) * 1000)
    lat.sort()
    run(256, 32)
    docs, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 3.0:
        run(256, 32)
        docs += 32
    el = time.perf_counter() - t0
    print("onnxruntime %s%s, threads %d" % (ort.__version__, ", int8 (quantize_dynamic)" if a.int8 else "", a.threads))
    print("query (16 tokens): p50 %.2f ms  p90 %.2f ms" % (lat[100], lat[180]))
    print("documents (256 tokens): %.1f docs/s  %.0f tokens/s" % (docs / el, docs * 256 / el))


if __name__ == "__main__":
    main()
