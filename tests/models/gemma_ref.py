#!/usr/bin/env python3
"""gemma_ref.py - the test suite's reference for mnemo's EmbeddingGemma (gemma-embedding GGUF).

    gemma_ref.py make OUT.gguf [--type F32|F16|BF16|Q8_0] [--dense 1|0] [--seed N]
                               [--arch NAME] [--rope-scaling linear]
        writes a tiny random EmbeddingGemma-shaped GGUF file with the gguf package (PyPI,
        llama.cpp's own writer; exit 3 when it is not installed) as llama.cpp's converter lays
        it out: architecture "gemma-embedding", 6 layers (0-4 sliding, 5 global, as llama.cpp's
        pattern of 6), hidden 32, 4 query heads sharing 2 key/value heads of 16 dimensions
        (so the heads' width, 64, is not the hidden size), feed-forward 64, a sliding window
        of 8 (4 positions either side, shorter than most test texts), a context of 64 tokens,
        norm weights around 1 (the converter adds Gemma's 1 to them), optionally the
        sentence-transformers Dense layers (dense_2 32 -> 96, dense_3 96 -> 32), and a
        SentencePiece vocabulary of type "llama": <pad> <eos> <bos> <unk>, a control and
        two user-defined tokens, the 256 byte tokens <0x00>..<0xFF>, and scored pieces
        (characters, and the substrings of words with a word-start mark U+2581, some scores
        equal) so that merges have choices; BOS and EOS added, no space prefix (as Gemma's).
        Matrices are quantized to the type, norms kept float32, as llama.cpp does.
    gemma_ref.py embed FILE.gguf < texts.jsonl > out.jsonl
        for each JSON string on stdin: {"ids": [...], "vector": [...]}: the ids of llama.cpp's
        SPM tokenizer written here from llama-vocab.cpp (user-defined tokens split out longest
        first, then per piece the best-scored adjacent merge, leftmost first, until none is
        left; byte fallback), truncated to the context keeping BOS and EOS, and the vector of
        a float64 NumPy forward pass over the weights read back (dequantized) from FILE,
        following llama.cpp's gemma-embedding graph and transformers' Gemma3 modelling.
"""
import json
import math
import sys

import numpy as np

ARCH = "gemma-embedding"
SP = "\u2581"
WORDS = ["the", "user", "prefers", "dark", "mode", "tea", "over", "coffee", "team", "deploy",
         "script", "database", "memory", "search", "note", "in", "on", "a", "to", "of", "and",
         "we", "saw", "logs", "again", "list", "orders", "by", "customer", "café", "résumé",
         "test", "tests", "vector", "The", "Alice", "kyoto", "April", "slow", "got"]
CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:;!?'\"()-_/=é"
CJK = "東京日本会議でデータベース数据库"


def build_vocab(rng):
    toks = [("<pad>", 0.0, 3), ("<eos>", 0.0, 3), ("<bos>", 0.0, 3), ("<unk>", 0.0, 2),
            ("<mask>", 0.0, 3), ("<start_of_turn>", 0.0, 4), ("\n\n", 0.0, 4)]
    for b in range(256):
        toks.append(("<0x%02X>" % b, 0.0, 6))
    seen = {t for t, _, _ in toks}

    def add(p, lo, hi):
        if p not in seen:
            seen.add(p)
            toks.append((p, float(np.float32(round(rng.uniform(lo, hi), 1))), 1))

    add(SP, -2.0, -1.0)
    for c in CHARS:
        add(c, -9.0, -6.0)
    for c in CJK:
        add(c, -8.0, -5.0)
    for a, b in zip(CJK[::2], CJK[1::2]):
        add(a + b, -7.0, -4.0)
    for w in WORDS:
        s = SP + w
        for i in range(len(s)):
            for j in range(i + 2, len(s) + 1):
                if j - i <= 6 or (i == 0 and j == len(s)):
                    add(s[i:j], -6.0, -1.0)
    return toks


TINY = (32, 6, 4, 2, 16, 64, 64, 8)  # hidden, layers, heads, kv heads, head dim, ffn, ctx, window


def make(out, qtype="F32", dense=True, seed=11, arch=ARCH, rope_scaling=None, shape=TINY,
         vocab=0, dense_mult=3):
    """Writes the file; SHAPE, VOCAB (pad the vocabulary with made-up pieces to that many) and
    DENSE_MULT (the Dense layers' width over the hidden size) for bench/gemma_shape.py."""
    try:
        import gguf
    except ImportError:
        sys.exit(3)
    rng = np.random.default_rng(seed)
    H, L, heads, kvh, dh, I, ctx, window = shape
    toks = build_vocab(rng)
    have = {t for t, _, _ in toks}
    i = 0
    while len(toks) < vocab:
        p = "%s%s%d" % (SP if i % 2 else "", "wq"[i % 2], i)
        if p not in have:
            toks.append((p, float(-10.0 - (i % 997) / 100.0), 1))
        i += 1
    w = gguf.GGUFWriter(out, arch)
    w.add_context_length(ctx)
    w.add_embedding_length(H)
    w.add_block_count(L)
    w.add_feed_forward_length(I)
    w.add_head_count(heads)
    w.add_head_count_kv(kvh)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_key_length(dh)
    w.add_value_length(dh)
    w.add_rope_freq_base(1000000.0)
    w.add_sliding_window(window)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    if rope_scaling:
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
    D = dense_mult * H
    if dense:
        w.add_dense_features_dims("dense_2", H, D)
        w.add_dense_features_dims("dense_3", D, H)
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
    qt = {"F32": gguf.GGMLQuantizationType.F32, "F16": gguf.GGMLQuantizationType.F16,
          "BF16": gguf.GGMLQuantizationType.BF16, "Q8_0": gguf.GGMLQuantizationType.Q8_0}[qtype]

    def r(*shape, scale=0.2):
        return rng.normal(0, scale, size=shape).astype(np.float32)

    t = {"token_embd.weight": r(len(toks), H, scale=0.5), "output_norm.weight": 1 + r(H, scale=0.1)}
    for l in range(L):
        p = "blk.%d." % l
        t[p + "attn_norm.weight"] = 1 + r(H, scale=0.1)
        t[p + "attn_q.weight"] = r(heads * dh, H)
        t[p + "attn_k.weight"] = r(kvh * dh, H)
        t[p + "attn_v.weight"] = r(kvh * dh, H)
        t[p + "attn_q_norm.weight"] = 1 + r(dh, scale=0.1)
        t[p + "attn_k_norm.weight"] = 1 + r(dh, scale=0.1)
        t[p + "attn_output.weight"] = r(H, heads * dh)
        t[p + "post_attention_norm.weight"] = 1 + r(H, scale=0.1)
        t[p + "ffn_norm.weight"] = 1 + r(H, scale=0.1)
        t[p + "ffn_gate.weight"] = r(I, H)
        t[p + "ffn_up.weight"] = r(I, H)
        t[p + "ffn_down.weight"] = r(H, I)
        t[p + "post_ffw_norm.weight"] = 1 + r(H, scale=0.1)
    if dense:
        t["dense_2.weight"] = r(D, H)
        t["dense_3.weight"] = r(H, D)
    for name, a in t.items():
        if a.ndim == 2 and qt != gguf.GGMLQuantizationType.F32:
            q = gguf.quants.quantize(a, qt)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=qt)
        else:
            w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ---------------------------------------------------------------- reading

def field(r, key):
    f = r.fields.get(key)
    if f is None:
        return None
    if f.types and f.types[0] == gguf.GGUFValueType.ARRAY:
        if f.types[-1] == gguf.GGUFValueType.STRING:
            return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
        return [f.parts[i][0].item() for i in f.data]
    if f.types[0] == gguf.GGUFValueType.STRING:
        return bytes(f.parts[f.data[0]]).decode("utf-8")
    return f.parts[f.data[0]][0].item()


def load(path):
    global gguf
    import gguf
    r = gguf.GGUFReader(path)
    cfg = {k: field(r, ARCH + "." + k) for k in (
        "context_length", "embedding_length", "block_count", "feed_forward_length",
        "attention.head_count", "attention.head_count_kv", "attention.key_length",
        "attention.layer_norm_rms_epsilon", "rope.freq_base", "attention.sliding_window")}
    tok = {k: field(r, "tokenizer.ggml." + k) for k in (
        "tokens", "scores", "token_type", "bos_token_id", "eos_token_id", "unknown_token_id",
        "add_bos_token", "add_eos_token", "add_space_prefix")}
    t = {}
    for te in r.tensors:
        a = gguf.quants.dequantize(te.data, te.tensor_type)
        shape = [int(x) for x in reversed(te.shape)]
        t[te.name] = np.asarray(a, dtype=np.float64).reshape(shape)
    return cfg, tok, t


# -------------------------------------------------------------- tokenizer

def tokenize(tok, text, max_len):
    toks, scores, types = tok["tokens"], tok["scores"], tok["token_type"]
    ids = {}
    for i, s in enumerate(toks):
        ids.setdefault(s, i)
    # 1. user-defined tokens split out, longest first, leftmost occurrences
    frags = [(text, None)] if text else []
    for u in sorted((i for i, ty in enumerate(types) if ty == 4), key=lambda i: (-len(toks[i]), i)):
        s, nf = toks[u], []
        for txt, tid in frags:
            if tid is not None:
                nf.append((txt, tid))
                continue
            while s in txt:
                a = txt.index(s)
                if a:
                    nf.append((txt[:a], None))
                nf.append((s, u))
                txt = txt[a + len(s):]
            if txt:
                nf.append((txt, None))
        frags = nf
    out, prev_special = [], True
    for txt, tid in frags:
        if tid is not None:
            out.append(tid)
            prev_special = True
            continue
        if tok["add_space_prefix"] and prev_special:
            txt = " " + txt
        prev_special = False
        syms = list(txt.replace(" ", SP))
        # 2. merge the best-scored adjacent pair (ties: leftmost) until none is a token
        while True:
            best = None
            for i in range(len(syms) - 1):
                m = syms[i] + syms[i + 1]
                if m in ids and (best is None or scores[ids[m]] > best[0]):
                    best = (scores[ids[m]], i)
            if best is None:
                break
            i = best[1]
            syms[i:i + 2] = [syms[i] + syms[i + 1]]
        for s in syms:
            if s in ids:
                out.append(ids[s])
            else:  # byte fallback
                for b in s.encode():
                    out.append(ids.get("<0x%02X>" % b, ids.get(chr(b), tok["unknown_token_id"])))
    room = max_len - bool(tok["add_bos_token"]) - bool(tok["add_eos_token"])
    out = out[:room]
    if tok["add_bos_token"]:
        out = [tok["bos_token_id"]] + out
    if tok["add_eos_token"]:
        out = out + [tok["eos_token_id"]]
    return out


# ---------------------------------------------------------------- forward

def rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope(x, pos, base):
    # NeoX halves (transformers' rotate_half): pairs (i, i + d/2)
    d = x.shape[-1]
    inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    th = np.outer(pos, inv)  # n x d/2
    c, s = np.cos(th), np.sin(th)
    a, b = x[..., :d // 2], x[..., d // 2:]
    c, s = c[:, None, :], s[:, None, :]
    return np.concatenate([a * c - b * s, a * s + b * c], -1)


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def forward(cfg, t, ids):
    H, L = cfg["embedding_length"], cfg["block_count"]
    heads, kvh, dh = cfg["attention.head_count"], cfg["attention.head_count_kv"], cfg["attention.key_length"]
    eps, win = cfg["attention.layer_norm_rms_epsilon"], cfg["attention.sliding_window"]
    n = len(ids)
    pos = np.arange(n)
    x = t["token_embd.weight"][ids] * math.sqrt(H)
    dist = np.abs(pos[:, None] - pos[None, :])
    for l in range(L):
        p = "blk.%d." % l
        swa = l % 6 < 5
        base = 10000.0 if swa else cfg["rope.freq_base"]
        h = rms(x, t[p + "attn_norm.weight"], eps)
        q = (h @ t[p + "attn_q.weight"].T).reshape(n, heads, dh)
        k = (h @ t[p + "attn_k.weight"].T).reshape(n, kvh, dh)
        v = (h @ t[p + "attn_v.weight"].T).reshape(n, kvh, dh)
        q = rope(rms(q, t[p + "attn_q_norm.weight"], eps), pos, base)
        k = rope(rms(k, t[p + "attn_k_norm.weight"], eps), pos, base)
        rep = heads // kvh
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)  # query head h uses h // rep
        s = np.einsum("ihd,jhd->hij", q, k) / math.sqrt(dh)
        if swa:  # llama.cpp's symmetric window: |i - j| <= n_swa / 2
            s = np.where(dist[None] > win // 2, -np.inf, s)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        c = np.einsum("hij,jhd->ihd", s, v).reshape(n, heads * dh)
        x = x + rms(c @ t[p + "attn_output.weight"].T, t[p + "post_attention_norm.weight"], eps)
        h = rms(x, t[p + "ffn_norm.weight"], eps)
        f = gelu_tanh(h @ t[p + "ffn_gate.weight"].T) * (h @ t[p + "ffn_up.weight"].T)
        x = x + rms(f @ t[p + "ffn_down.weight"].T, t[p + "post_ffw_norm.weight"], eps)
    x = rms(x, t["output_norm.weight"], eps)
    e = x.mean(0)
    if "dense_2.weight" in t:
        e = t["dense_3.weight"] @ (t["dense_2.weight"] @ e)
    return e / np.linalg.norm(e)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cmd, path = sys.argv[1], sys.argv[2]
    if cmd == "make":
        a = sys.argv[3:]
        opt = {a[i]: a[i + 1] for i in range(0, len(a) - 1, 2)}
        make(path, opt.get("--type", "F32"), opt.get("--dense", "1") == "1",
             int(opt.get("--seed", "11")), opt.get("--arch", ARCH), opt.get("--rope-scaling"))
        return
    try:
        cfg, tok, t = load(path)
    except ImportError:
        sys.exit(3)
    for line in sys.stdin:
        if not line.strip():
            continue
        ids = tokenize(tok, json.loads(line), cfg["context_length"])
        print(json.dumps({"ids": ids, "vector": [float(v) for v in forward(cfg, t, ids)]}))


if __name__ == "__main__":
    main()
