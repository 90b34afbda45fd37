#!/usr/bin/env python3
"""gemma_shape.py - a GGUF file of EmbeddingGemma-300m's shape, for speed measurements only.

    python3 bench/gemma_shape.py OUT.gguf [--type Q8_0|F32|F16|BF16]

embeddinggemma-300m as llama.cpp converts it: architecture "gemma-embedding", 24 layers
(five sliding-window layers then a global one, window 512), hidden 768, 3 query heads sharing
one key/value head of 256 dimensions, feed-forward 1152, a context of 2048 tokens, the
sentence-transformers Dense layers (768 -> 3072 -> 768) and a SentencePiece vocabulary of
262,144 pieces. No registry package carries its weights, so the weights are random (vectors
of no use) and the vocabulary is the test suite's (tests/models/gemma_ref.py) padded with
made-up pieces to the real size: the same work per token and the same file to open. Then:

    mnemo model import OUT.gguf --name gemma-shape
    mnemo embed --query --set provider=local --set model=gemma-shape "a question"

Needs the gguf package (PyPI) and numpy.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "models"))
import gemma_ref  # noqa: E402

H, L, HEADS, KVH, DH, FF, CTX, WINDOW, VOCAB = 768, 24, 3, 1, 256, 1152, 2048, 512, 262144


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--type", default="Q8_0", choices=["Q8_0", "F32", "F16", "BF16"])
    a = ap.parse_args()
    import gguf
    rng = np.random.default_rng(7)
    toks = gemma_ref.build_vocab(rng)
    have = {t for t, _, _ in toks}
    i = 0
    while len(toks) < VOCAB:
        p = "%s%s%d" % (gemma_ref.SP if i % 2 else "", "wq"[i % 2], i)
        if p not in have:
            toks.append((p, float(-10.0 - (i % 997) / 100.0), 1))
        i += 1
    w = gguf.GGUFWriter(a.out, gemma_ref.ARCH)
    w.add_context_length(CTX)
    w.add_embedding_length(H)
    w.add_block_count(L)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KVH)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_key_length(DH)
    w.add_value_length(DH)
    w.add_rope_freq_base(1000000.0)
    w.add_sliding_window(WINDOW)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_dense_features_dims("dense_2", H, 4 * H)
    w.add_dense_features_dims("dense_3", 4 * H, H)
    w.add_tokenizer_model("llama")
    w.add_token_list([t for t, _, _ in toks])
    w.add_token_scores([s for _, s, _ in toks])
    w.add_token_types([ty for _, _, ty in toks])
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    w.add_pad_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(True)
    w.add_add_space_prefix(False)
    qt = getattr(gguf.GGMLQuantizationType, a.type)

    def r(*shape, scale=0.05):
        return rng.normal(0, scale, size=shape).astype(np.float32)

    def put(name, arr):
        if arr.ndim == 2 and qt != gguf.GGMLQuantizationType.F32:
            q = gguf.quants.quantize(arr, qt)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=qt)
        else:
            w.add_tensor(name, arr)

    put("token_embd.weight", r(VOCAB, H))
    put("output_norm.weight", 1 + r(H))
    for layer in range(L):
        p = "blk.%d." % layer
        for n, shape in (("attn_norm", (H,)), ("attn_q_norm", (DH,)), ("attn_k_norm", (DH,)),
                         ("post_attention_norm", (H,)), ("ffn_norm", (H,)),
                         ("post_ffw_norm", (H,))):
            put(p + n + ".weight", 1 + r(*shape))
        put(p + "attn_q.weight", r(HEADS * DH, H))
        put(p + "attn_k.weight", r(KVH * DH, H))
        put(p + "attn_v.weight", r(KVH * DH, H))
        put(p + "attn_output.weight", r(H, HEADS * DH))
        put(p + "ffn_gate.weight", r(FF, H))
        put(p + "ffn_up.weight", r(FF, H))
        put(p + "ffn_down.weight", r(H, FF))
    put("dense_2.weight", r(4 * H, H))
    put("dense_3.weight", r(H, 4 * H))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("%s: %.0f MB" % (a.out, os.path.getsize(a.out) / 1e6))


if __name__ == "__main__":
    main()
