#!/usr/bin/env python3
"""bge_shape.py - a model folder of bge-small-en-v1.5's shape, for speed comparisons only.

    python3 bench/bge_shape.py OUT [--model-dir DIR]

bge-small-en-v1.5 is MiniLM-L6's layer shape (hidden 384, 12 heads, intermediate 1536)
twelve layers deep. No registry package carries its weights, so this writes a folder with
MiniLM's six layers stacked twice (layer i + 6 = layer i): the same work per token as
bge-small (its CLS pooling instead of the mean costs nothing either way), vectors of no
use. Then:

    mnemo model import OUT --name bge-shape
    build/bench/localbench ~/.local/share/mnemo/models/bge-shape 1
    python3 bench/local_ort.py --model-dir OUT --threads 1

Needs safetensors and numpy from PyPI.
"""
import argparse
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from embed_server import default_model_dir  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--model-dir", default=None)
    a = ap.parse_args()
    from safetensors.numpy import load_file, save_file
    src = a.model_dir or default_model_dir()
    os.makedirs(os.path.join(a.out, "1_Pooling"), exist_ok=True)
    w = load_file(os.path.join(src, "model.safetensors"))
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    L = cfg["num_hidden_layers"]
    out = dict(w)
    for k, v in w.items():
        for pre in ("encoder.layer.", "bert.encoder.layer."):
            if k.startswith(pre):
                i, rest = k[len(pre):].split(".", 1)
                out["%s%d.%s" % (pre, int(i) + L, rest)] = v
    save_file(out, os.path.join(a.out, "model.safetensors"))
    cfg["num_hidden_layers"] = 2 * L
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "modules.json",
                 "sentence_bert_config.json"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), os.path.join(a.out, name))
    shutil.copy(os.path.join(src, "1_Pooling", "config.json"),
                os.path.join(a.out, "1_Pooling", "config.json"))
    print("wrote %s: %d layers" % (a.out, 2 * L))


if __name__ == "__main__":
    main()
