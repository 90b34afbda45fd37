#!/usr/bin/env python3
"""bert_ref.py - the test suite's reference for mnemo's in-process encoder.

    bert_ref.py make DIR [--dtype F32|F16|BF16] [--pool mean|cls] [--seed N] [--arch bert|xlmr]
        writes a tiny random BERT model folder (2 layers, hidden 32, 4 heads, a small
        WordPiece vocabulary with accents, CJK and continuations) as Hugging Face lays it
        out: config.json, tokenizer.json, model.safetensors, modules.json,
        1_Pooling/config.json, sentence_bert_config.json. With --arch xlmr, an
        XLM-RoBERTa-shaped one instead (positions from the padding id + 1, one token
        type) with a SentencePiece Unigram tokenizer: a scored vocabulary, a precompiled
        character map (a darts-clone double array built here), " {2,}" collapsed,
        Metaspace, <s> ... </s>.
    bert_ref.py embed DIR < texts.jsonl > out.jsonl
        for each JSON string on stdin, prints {"ids": [...], "vector": [...]}: the token
        ids of a tokenizer written here from the tokenizers library's documented rules
        (BertNormalizer, BertPreTokenizer, WordPiece, [CLS]/[SEP]; or the Precompiled
        map per grapheme, Metaspace and Unigram's Viterbi) and the sentence vector
        of a float64 NumPy forward pass (mean or CLS pooling, L2-normalised).
    bert_ref.py sentences
        prints about 250 test sentences as JSON strings: English notes, Chinese and
        Japanese, code identifiers, accents and symbols, and texts past 256 tokens.
    bert_ref.py gguf DIR OUT.gguf [--type F32|F16|Q8_0]
        converts the BERT folder DIR into a GGUF file as llama.cpp's converter lays it out
        (architecture "bert", tensor names of gguf's tensor map, a vocabulary with the
        word-start mark U+2581 instead of "##" continuations, pooling type), written with
        the gguf package (PyPI; exit 3 when it is not installed).
    bert_ref.py embed DIR --gguf FILE < texts.jsonl
        as embed, with the weights read back from the GGUF FILE (Q8_0 dequantized).
    bert_ref.py hf-ids DIR < texts.jsonl
        the ids of the tokenizers library itself, when it is installed (exit 3 if not).
    bert_ref.py embed-hf DIR < texts.jsonl
        as embed, with the tokenizers library's ids (exit 3 if it is not installed).

Only NumPy is needed (the tokenizers library is optional). The forward pass follows
the BERT paper's encoder with exact (erf) GELU, as transformers' BertModel runs it.
"""
import json
import math
import os
import re
import struct
import sys
import unicodedata

import numpy as np

WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "run", "##s", "##ing", "##ed", "play",
         "cafe", "resume", "naive", "hello", "world", "memory", "search", "note", "user",
         "prefers", "dark", "mode", "tea", "coffee", "un", "##like", "##ly", "token", "##ize",
         "東", "京", "日", "本", "会", "議", "で", "す", "ます", "##ます", "データ", "ベース",
         "##ベース", ".", ",", "!", "?", "'", "-", "(", ")", ":", "1", "2", "##3", "0", "x",
         "##y", "##z", "list", "##orders", "##by", "customer", "slow", "again", "é", "ü"]


def build_vocab():
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {}
    for t in specials + WORDS:
        vocab.setdefault(t, len(vocab))
    for c in "abcdefghijklmnopqrstuvwxyz":
        vocab.setdefault(c, len(vocab))
        vocab.setdefault("##" + c, len(vocab))
    return vocab


def write_safetensors(path, tensors, dtype):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        a = np.asarray(arr, dtype=np.float32)
        if dtype == "F32":
            raw = a.astype("<f4").tobytes()
        elif dtype == "F16":
            raw = a.astype("<f2").tobytes()
        else:  # BF16: the upper half of float32, rounded to nearest even
            u = a.astype("<f4").view("<u4").astype(np.uint64)
            u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")
            raw = u.tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def stored(arr, dtype):
    """What a tensor is after the file's dtype round trip (what mnemo reads)."""
    a = np.asarray(arr, dtype=np.float32)
    if dtype == "F16":
        return a.astype(np.float16).astype(np.float32)
    if dtype == "BF16":
        u = a.view(np.uint32).astype(np.uint64)
        u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32) << 16
        return u.astype(np.uint32).view(np.float32)
    return a


def make(d, dtype="F32", pool="mean", seed=7, layers=2, hidden=32, heads=4, inter=64,
         maxpos=64, arch="bert"):
    os.makedirs(os.path.join(d, "1_Pooling"), exist_ok=True)
    xlmr = arch == "xlmr"
    rng = np.random.default_rng(seed)
    if xlmr:
        pieces = build_pieces(rng)
        vocab = {p: i for i, (p, _) in enumerate(pieces)}
        maxpos += 2  # positions start at the padding id + 1
    else:
        vocab = build_vocab()
    types = 1 if xlmr else 2
    H, I = hidden, inter
    t = {}

    def w(*shape, scale=0.2):
        return rng.normal(0, scale, size=shape).astype(np.float32)

    t["embeddings.word_embeddings.weight"] = w(len(vocab), H, scale=0.5)
    t["embeddings.position_embeddings.weight"] = w(maxpos, H)
    t["embeddings.token_type_embeddings.weight"] = w(types, H)
    t["embeddings.LayerNorm.weight"] = 1 + w(H, scale=0.1)
    t["embeddings.LayerNorm.bias"] = w(H, scale=0.1)
    for l in range(layers):
        p = "encoder.layer.%d." % l
        for n in ("query", "key", "value"):
            t[p + "attention.self.%s.weight" % n] = w(H, H)
            t[p + "attention.self.%s.bias" % n] = w(H, scale=0.1)
        t[p + "attention.output.dense.weight"] = w(H, H)
        t[p + "attention.output.dense.bias"] = w(H, scale=0.1)
        t[p + "attention.output.LayerNorm.weight"] = 1 + w(H, scale=0.1)
        t[p + "attention.output.LayerNorm.bias"] = w(H, scale=0.1)
        t[p + "intermediate.dense.weight"] = w(I, H)
        t[p + "intermediate.dense.bias"] = w(I, scale=0.1)
        t[p + "output.dense.weight"] = w(H, I)
        t[p + "output.dense.bias"] = w(H, scale=0.1)
        t[p + "output.LayerNorm.weight"] = 1 + w(H, scale=0.1)
        t[p + "output.LayerNorm.bias"] = w(H, scale=0.1)
    t["pooler.dense.weight"] = w(H, H)  # present in real files, unused
    if xlmr:
        t = {"roberta." + k: v for k, v in t.items()}
    write_safetensors(os.path.join(d, "model.safetensors"), t, dtype)
    cfg = {"architectures": ["XLMRobertaModel" if xlmr else "BertModel"],
           "model_type": "xlm-roberta" if xlmr else "bert", "hidden_size": H,
           "num_hidden_layers": layers, "num_attention_heads": heads, "intermediate_size": I,
           "hidden_act": "gelu", "max_position_embeddings": maxpos, "type_vocab_size": types,
           "vocab_size": len(vocab), "layer_norm_eps": 1e-5 if xlmr else 1e-12,
           "position_embedding_type": "absolute", "pad_token_id": 1 if xlmr else 0,
           "bos_token_id": 0, "eos_token_id": 2}
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=1)
    tok = xlmr_tokenizer(pieces) if xlmr else {"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": [{"id": vocab[s], "content": s, "single_word": False, "lstrip": False,
                             "rstrip": False, "normalized": False, "special": True}
                            for s in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")],
           "normalizer": {"type": "BertNormalizer", "clean_text": True,
                          "handle_chinese_chars": True, "strip_accents": None,
                          "lowercase": True},
           "pre_tokenizer": {"type": "BertPreTokenizer"},
           "post_processor": {"type": "TemplateProcessing",
                              "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                         {"Sequence": {"id": "A", "type_id": 0}},
                                         {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                              "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                       {"Sequence": {"id": "A", "type_id": 0}},
                                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                                       {"Sequence": {"id": "B", "type_id": 1}},
                                       {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                              "special_tokens": {
                                  "[CLS]": {"id": "[CLS]", "ids": [vocab["[CLS]"]], "tokens": ["[CLS]"]},
                                  "[SEP]": {"id": "[SEP]", "ids": [vocab["[SEP]"]], "tokens": ["[SEP]"]}}},
           "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
           "model": {"type": "WordPiece", "unk_token": "[UNK]",
                     "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                     "vocab": vocab}}
    json.dump(tok, open(os.path.join(d, "tokenizer.json"), "w"), ensure_ascii=False)
    json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}],
              open(os.path.join(d, "modules.json"), "w"))
    json.dump({"word_embedding_dimension": H, "pooling_mode_cls_token": pool == "cls",
               "pooling_mode_mean_tokens": pool == "mean"},
              open(os.path.join(d, "1_Pooling", "config.json"), "w"))
    json.dump({"max_seq_length": 48, "do_lower_case": False},
              open(os.path.join(d, "sentence_bert_config.json"), "w"))


# ---------------------------------------------------------------- tokenizer

CJK = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
       (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]


def is_ws(c):
    return c in " \t\n\r" or c.isspace() and unicodedata.category(c) in ("Zs", "Zl", "Zp", "Cc")


def is_control(c):
    if c in "\t\n\r":
        return False
    return unicodedata.category(c).startswith("C")


def is_punct(c):
    o = ord(c)
    if 33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126:
        return True
    return unicodedata.category(c).startswith("P")


SPECIALS = re.compile(r"(\[(?:PAD|UNK|CLS|SEP|MASK)\])")


def tokenize(vocab, text, max_len, lower=True):
    # Special tokens written in the text are matched first, on the raw text
    # (the tokenizers library's added tokens, normalized: false).
    ids = []
    for part in SPECIALS.split(text):
        if SPECIALS.fullmatch(part):
            ids.append(vocab[part])
        elif part:
            ids.extend(tokenize_plain(vocab, part, lower))
    return [vocab["[CLS]"]] + ids[:max_len - 2] + [vocab["[SEP]"]]


def tokenize_plain(vocab, text, lower):
    out = []
    for c in text:
        o = ord(c)
        if o == 0 or o == 0xFFFD or is_control(c):
            continue
        if is_ws(c):
            c = " "
        if any(a <= o <= b for a, b in CJK):
            out.append(" " + c + " ")
        else:
            out.append(c)
    s = "".join(out)
    if lower:
        s = "".join(ch for ch in unicodedata.normalize("NFD", s)
                    if unicodedata.category(ch) != "Mn")
        s = "".join(ch.lower() for ch in s)  # per character, as Rust: no final sigma
    words, cur = [], ""
    for c in s:
        if is_ws(c):
            if cur:
                words.append(cur)
            cur = ""
        elif is_punct(c):
            if cur:
                words.append(cur)
            words.append(c)
            cur = ""
        else:
            cur += c
    if cur:
        words.append(cur)
    ids = []
    for wd in words:
        if len(wd) > 100:
            ids.append(vocab["[UNK]"])
            continue
        start, pieces = 0, []
        while start < len(wd):
            end, found = len(wd), None
            while end > start:
                sub = ("##" if start else "") + wd[start:end]
                if sub in vocab:
                    found = vocab[sub]
                    break
                end -= 1
            if found is None:
                pieces = [vocab["[UNK]"]]
                break
            pieces.append(found)
            start = end
        ids.extend(pieces)
    return ids


# ---------------------------------------------------------- Unigram tokenizer

SPIECE = "\u2581"
UG_WORDS = ["the", "user", "prefers", "dark", "mode", "tea", "over", "coffee", "team", "deploy",
            "script", "database", "migrated", "broke", "asked", "about", "scheduled", "fixed",
            "finally", "search", "memory", "note", "in", "every", "editor", "on", "a", "to",
            "of", "and", "we", "saw", "logs", "again", "list", "orders", "by", "customer", "new",
            "intern", "trip", "kyoto", "april", "café", "résumé", "naïve", "straße", "test",
            "tests", "flaky", "vector", "latency", "Alice", "Bob", "The", "Our", "My", "A", "We"]
UG_PARTS = ["ing", "ed", "s", "er", "un", "like", "ly", "tion", "re", "de", "es", "st", "th",
            "an", "in", "on", "at", "or", "ar", "ce", "ck", "ow", "ie", "ea", "ou", "Case", "case",
            "Id", "id", "ent", "fi", "ff", "TM", "..."]
UG_CJK = "今天我们讨论了数据库迁移的计划用户喜欢深色模式明东京日本会議でデータベースカ顧客打ち合わせ。，"


def build_pieces(rng):
    """A scored Unigram vocabulary: the XLM-R specials first, then whole words with a
    word-start mark, word parts, single characters and CJK, with random log-probabilities
    (words likelier than parts, parts than characters) so that Viterbi has choices."""
    pieces = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    seen = {p for p, _ in pieces}

    def add(p, lo, hi):
        if p not in seen:
            seen.add(p)
            pieces.append((p, float(round(rng.uniform(lo, hi), 4))))

    add(SPIECE, -3.0, -2.0)
    for w in UG_WORDS:
        add(SPIECE + w, -9.0, -4.0)
    for w in UG_PARTS:
        add(w, -10.0, -6.0)
        add(SPIECE + w, -10.0, -6.0)
    for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:;!?'\"()[]-_/=*$+~<>@#%&éüöäàçïßÅøØΣΊΥΦΟ":
        add(c, -13.0, -10.0)
        add(SPIECE + c, -14.0, -11.0)
    for c in UG_CJK:
        add(c, -11.0, -8.0)
    for a, b in zip(UG_CJK[::2], UG_CJK[1::2]):
        add(a + b, -12.0, -8.0)
    add("<mask>", 0.0, 0.0)
    return pieces


# The precompiled character map: keys (byte strings) and their replacements, in the
# spirit of SentencePiece's nmt_nfkc: full-width forms, ligatures, spaces, a combining
# sequence as one key, a deletion, and keys that are prefixes of others.
CHARSMAP = {"\t": " ", "\n": " ", "\r": " ", "\u00a0": " ", "\u3000": " ", "\u200b": "",
            "\ufb01": "fi", "\ufb00": "ff", "\u2122": "TM", "\u2026": "...", "\u2460": "1",
            "e\u0301": "\u00e9", "\uff76": "\u30ab", "\u00c5": "A\u030a", "\u00c5\u0301": "X",
            "\u03a3": "\u03c3"}
CHARSMAP.update({chr(0xFF21 + i): chr(0x41 + i) for i in range(26)})
CHARSMAP.update({chr(0xFF10 + i): chr(0x30 + i) for i in range(10)})


def build_darts(keys):
    """A darts-clone double array for KEYS (bytes -> value), as SentencePiece stores
    it: a unit per position holding a label byte, a has-leaf bit and the XOR offset to
    its children; a leaf unit (bit 31) holds the value."""
    root = {}
    for k, v in keys.items():
        node = root
        for c in k:
            node = node.setdefault(c, {})
        node[0] = v
    units, used, bases = {0: 0}, {0}, set()
    queue = [(root, 0)]
    while queue:
        node, pos = queue.pop(0)
        labels = sorted(node)
        base = 1
        while base in bases or any((base ^ c) in used for c in labels):
            base += 1
        bases.add(base)
        offset = pos ^ base
        assert offset < (1 << 21)
        units[pos] = units.get(pos, 0) | (offset << 10) | ((1 << 8) if 0 in node else 0)
        for c in labels:
            q = base ^ c
            used.add(q)
            if c == 0:
                units[q] = node[0] | (1 << 31)
            else:
                units[q] = c
                queue.append((node[c], q))
    # Every base XOR any byte inside the array, as darts-clone sizes it (readers do not
    # check bounds).
    n = max(max(units), max(b | 0xFF for b in bases)) + 1
    return b"".join(struct.pack("<I", units.get(i, 0)) for i in range(n))


def charsmap_blob():
    pool, keys = b"", {}
    for k, v in CHARSMAP.items():
        keys[k.encode()] = len(pool)
        pool += v.encode() + b"\0"
    trie = build_darts(keys)
    return struct.pack("<I", len(trie)) + trie + pool


def xlmr_tokenizer(pieces):
    import base64
    special = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": len(pieces) - 1}
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": c == "<mask>",
                              "rstrip": False, "normalized": False, "special": True}
                             for c, i in special.items()],
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Precompiled",
                 "precompiled_charsmap": base64.b64encode(charsmap_blob()).decode()},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
            "pre_tokenizer": {"type": "Metaspace", "replacement": SPIECE,
                              "prepend_scheme": "always", "split": True},
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                          {"Sequence": {"id": "A", "type_id": 0}},
                                          {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                               "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                        {"Sequence": {"id": "A", "type_id": 0}},
                                        {"SpecialToken": {"id": "</s>", "type_id": 0}},
                                        {"SpecialToken": {"id": "</s>", "type_id": 0}},
                                        {"Sequence": {"id": "B", "type_id": 0}},
                                        {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                               "special_tokens": {
                                   "<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                                   "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
            "decoder": {"type": "Metaspace", "replacement": SPIECE, "prepend_scheme": "always",
                        "split": True},
            "model": {"type": "Unigram", "unk_id": 3, "vocab": [[p, sc] for p, sc in pieces],
                      "byte_fallback": False}}


def graphemes(s):
    """Extended grapheme clusters, as far as the test texts need: a character with the
    combining marks, variation selectors and ZWJ sequences after it; CR LF as one."""
    out = []
    for c in s:
        if out and (unicodedata.category(c).startswith("M") or c in "\u200d\ufe0f"
                    or out[-1].endswith("\u200d") or (out[-1] == "\r" and c == "\n")):
            out[-1] += c
        else:
            out.append(c)
    return out


def charsmap_transform(trie, chunk):
    node = trie
    for c in chunk.encode():
        if c == 0 or c not in node:
            return None
        node = node[c]
        if 0 in node:
            return node[0]
    return None


def ug_split_added(tok, text):
    """The text's parts: (False, text) and (True, id) for an added token written in it,
    as the tokenizers library matches them on the raw text (normalized: false): the
    leftmost match, the longest at a place; lstrip takes the whitespace before it,
    rstrip the whitespace after."""
    added = sorted(((a["content"], a) for a in tok.get("added_tokens", [])
                    if not a.get("normalized", True) and not a.get("single_word")),
                   key=lambda x: -len(x[0]))
    parts, seg, i = [], 0, 0
    while i < len(text):
        m = next((a for c, a in added if text.startswith(c, i)), None)
        if m is None:
            i += 1
            continue
        s0, s1 = i, i + len(m["content"])
        if m.get("lstrip"):
            while s0 > seg and text[s0 - 1].isspace():
                s0 -= 1
        if m.get("rstrip"):
            while s1 < len(text) and text[s1].isspace():
                s1 += 1
        parts.append((False, text[seg:s0], seg == 0))
        parts.append((True, m["id"], False))
        seg = i = s1
    parts.append((False, text[seg:], seg == 0))
    return parts


def ug_tokenize(tok, text, max_len):
    ids = []
    prepend = tok["pre_tokenizer"].get("prepend_scheme", "always")
    for special, x, at_start in ug_split_added(tok, text):
        if special:
            ids.append(x)
        elif x:
            ids.extend(ug_segment(tok, x, prepend == "always" or (prepend == "first" and at_start)))
    return [0] + ids[:max_len - 2] + [2]


def ug_segment(tok, text, prefix):
    trie = {}
    for k, v in CHARSMAP.items():
        node = trie
        for c in k.encode():
            node = node.setdefault(c, {})
        node[0] = v
    norm = []
    for g in graphemes(text):
        r = charsmap_transform(trie, g) if len(g.encode()) < 6 else None
        if r is not None:
            norm.append(r)
            continue
        for c in g:
            r = charsmap_transform(trie, c)
            norm.append(c if r is None else r)
    s = re.sub(" {2,}", " ", "".join(norm))
    model = tok["model"]
    score = {p: (i, sc) for i, (p, sc) in enumerate(model["vocab"])}
    unk = model["unk_id"]
    unk_score = min(sc for _, sc in model["vocab"]) - 10.0
    ids = []
    if s:
        s = s.replace(" ", SPIECE)
        if prefix and not s.startswith(SPIECE):
            s = SPIECE + s
        words = [w for w in re.split("(?=" + SPIECE + ")", s) if w]
        for w in words:
            b = w.encode()
            n = len(b)
            best = [None] * (n + 1)  # (score, start, id)
            best[0] = (0.0, 0, -1)
            at = 0
            while at < n:
                cl = len(b[at:].decode("utf-8", "ignore")[:1].encode())
                single = False
                for e in range(at + cl, n + 1):
                    p = b[at:e]
                    try:
                        ps = p.decode()
                    except UnicodeDecodeError:
                        continue
                    if ps in score:
                        i, sc = score[ps]
                        cand = best[at][0] + sc
                        if best[e] is None or cand > best[e][0]:
                            best[e] = (cand, at, i)
                        if e - at == cl:
                            single = True
                if not single:
                    cand = best[at][0] + unk_score
                    if best[at + cl] is None or cand > best[at + cl][0]:
                        best[at + cl] = (cand, at, unk)
                at += cl
            toks, end = [], n
            while end > 0:
                _, st, i = best[end]
                if i == unk:
                    while st > 0 and best[st][2] == unk:
                        st = best[st][1]
                toks.append(i)
                end = st
            ids.extend(reversed(toks))
    return ids


# ----------------------------------------------------------------------- GGUF

def to_gguf(d, out, qtype="F32"):
    try:
        import gguf
    except ImportError:
        sys.exit(3)
    cfg, tok, cls_pool, max_len = load_model(d)
    t = read_safetensors(os.path.join(d, "model.safetensors"))
    vocab = tok["model"]["vocab"]
    toks = [None] * len(vocab)
    for k, i in vocab.items():
        toks[i] = k

    def phantom(x):
        if x.startswith("[") and x.endswith("]"):
            return x
        return x[2:] if x.startswith("##") else "\u2581" + x

    w = gguf.GGUFWriter(out, "bert")
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_layer_norm_eps(cfg["layer_norm_eps"])
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.CLS if cls_pool else gguf.PoolingType.MEAN)
    w.add_tokenizer_model("bert")
    w.add_token_list([phantom(x) for x in toks])
    w.add_token_types([gguf.TokenType.CONTROL if x.startswith("[") else gguf.TokenType.NORMAL
                       for x in toks])
    w.add_unk_token_id(vocab["[UNK]"])
    w.add_bos_token_id(vocab["[CLS]"])  # llama.cpp keeps [CLS] as BOS
    w.add_sep_token_id(vocab["[SEP]"])
    w.add_pad_token_id(vocab["[PAD]"])
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, cfg["num_hidden_layers"])
    qt = {"F32": gguf.GGMLQuantizationType.F32, "F16": gguf.GGMLQuantizationType.F16,
          "Q8_0": gguf.GGMLQuantizationType.Q8_0}[qtype]
    for k, v in t.items():
        if k.startswith("pooler."):
            continue
        name = names.get_name(k, try_suffixes=(".weight", ".bias"))
        a = v.astype(np.float32)
        # Matrices quantized, vectors (norms, biases) kept as float32, as llama.cpp does.
        if a.ndim == 2 and qt != gguf.GGMLQuantizationType.F32:
            q = gguf.quants.quantize(a, qt)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=qt)
        else:
            w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def read_gguf(path, layers):
    import gguf
    r = gguf.GGUFReader(path)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, layers)
    back = {}
    for hf in ["embeddings.word_embeddings", "embeddings.position_embeddings",
               "embeddings.token_type_embeddings", "embeddings.LayerNorm"] + [
            "encoder.layer.%d.%s" % (l, p) for l in range(layers) for p in (
                "attention.self.query", "attention.self.key", "attention.self.value",
                "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense",
                "output.dense", "output.LayerNorm")]:
        back[names.get_name(hf)] = hf
    out = {}
    for te in r.tensors:
        base, _, suffix = te.name.rpartition(".")
        a = gguf.quants.dequantize(te.data, te.tensor_type)
        shape = [int(x) for x in reversed(te.shape)]
        out[back[base] + "." + suffix] = np.asarray(a, dtype=np.float64).reshape(shape)
    return out


# ------------------------------------------------------------------ forward

def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in h.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        raw = data[a:b]
        if v["dtype"] == "F32":
            arr = np.frombuffer(raw, "<f4")
        elif v["dtype"] == "F16":
            arr = np.frombuffer(raw, "<f2").astype(np.float32)
        elif v["dtype"] == "BF16":
            arr = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            continue
        out[k] = arr.reshape(v["shape"]).astype(np.float64)
    return out


def layernorm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def erf(x):
    return np.vectorize(math.erf)(x)


def forward(t, cfg, ids, cls_pool):
    pfx = next(p for p in ("", "bert.", "roberta.") if p + "embeddings.word_embeddings.weight" in t)
    pos0 = cfg["pad_token_id"] + 1 if cfg["model_type"] == "xlm-roberta" else 0
    H, heads, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg.get("layer_norm_eps", 1e-12)
    dh = H // heads
    n = len(ids)
    x = (t[pfx + "embeddings.word_embeddings.weight"][ids]
         + t[pfx + "embeddings.position_embeddings.weight"][pos0:pos0 + n]
         + t[pfx + "embeddings.token_type_embeddings.weight"][0])
    x = layernorm(x, t[pfx + "embeddings.LayerNorm.weight"], t[pfx + "embeddings.LayerNorm.bias"], eps)
    for l in range(cfg["num_hidden_layers"]):
        p = pfx + "encoder.layer.%d." % l
        lin = lambda z, name: z @ t[p + name + ".weight"].T + t[p + name + ".bias"]
        q = lin(x, "attention.self.query").reshape(n, heads, dh).transpose(1, 0, 2)
        k = lin(x, "attention.self.key").reshape(n, heads, dh).transpose(1, 0, 2)
        v = lin(x, "attention.self.value").reshape(n, heads, dh).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(dh)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        c = (s @ v).transpose(1, 0, 2).reshape(n, H)
        x = layernorm(x + lin(c, "attention.output.dense"), t[p + "attention.output.LayerNorm.weight"],
                      t[p + "attention.output.LayerNorm.bias"], eps)
        i = lin(x, "intermediate.dense")
        i = 0.5 * i * (1 + erf(i / math.sqrt(2)))
        x = layernorm(x + lin(i, "output.dense"), t[p + "output.LayerNorm.weight"],
                      t[p + "output.LayerNorm.bias"], eps)
    e = x[0] if cls_pool else x.mean(0)
    return e / np.linalg.norm(e)


def load_model(d):
    cfg = json.load(open(os.path.join(d, "config.json")))
    tok = json.load(open(os.path.join(d, "tokenizer.json")))
    pool = {}
    try:
        pool = json.load(open(os.path.join(d, "1_Pooling", "config.json")))
    except OSError:
        pass
    max_len = cfg["max_position_embeddings"]
    try:
        max_len = json.load(open(os.path.join(d, "sentence_bert_config.json")))["max_seq_length"]
    except (OSError, KeyError):
        pass
    cls_pool = pool.get("pooling_mode_cls_token") and not pool.get("pooling_mode_mean_tokens")
    return cfg, tok, bool(cls_pool), max_len


SUBJECTS = ["The user", "Alice", "Our team", "The deploy script", "My sister", "The database",
            "Bob's laptop", "The cron job", "A customer in Berlin", "The new intern"]
VERBS = ["prefers", "forgot", "migrated", "broke", "asked about", "scheduled", "rewrote",
         "complained about", "finally fixed", "benchmarked"]
OBJECTS = ["dark mode in every editor", "the PostgreSQL 15 upgrade", "tea over coffee",
           "the flaky integration tests", "a trip to Kyoto in April", "the billing dashboard",
           "Neovim and Helix keybindings", "the on-call rotation", "vector search latency",
           "her daughter's piano recital", "the 3:45 pm stand-up", "résumé formatting",
           "the café near the office", "SSL certificates that expire on 2026-03-01"]
CJK_TEXTS = ["今天我们讨论了数据库迁移的计划", "用户喜欢深色模式", "明天下午三点开会，记得带电脑。",
             "这个错误只在生产环境出现", "我们把服务部署到了上海的机房", "东京で顧客と打ち合わせ。",
             "デプロイの手順を説明した。", "ユーザーはダークモードが好きです", "来週の会議は水曜日に変更",
             "データベースのバックアップを毎晩取る", "日本語と中文が混ざった note です", "한국어 문장도 있습니다"]
CODE = ["ListOrdersByCustomer", "get_user_preferences()", "src/engine/search.c:582",
        "HTTP_429_TOO_MANY_REQUESTS", "useEffect(() => fetchData(id), [id])", "kubectl rollout restart deploy/api",
        "SELECT * FROM orders WHERE customer_id = $1;", "git rebase -i HEAD~3", "x86_64-linux-gnu",
        "camelCaseIdentifier snake_case_identifier kebab-case-identifier", "0xDEADBEEF", "v1.2.3-rc.4+build.5"]
ODD = ["Ünïcödé àccents everywhere: naïve façade, Ångström, Øresund", "emoji 🎉 and symbols © ® ™ ±",
       "tabs\tand\nnewlines  and   spaces", "ALL CAPS SHOUTING ABOUT THE OUTAGE!!!", "'quoted' \"double\" «guillemets»",
       "ﬁ ligature and full-width ＡＢＣ１２３",
       "combining cafe\u0301 e\u0301 A\u030a \u00c5\u0301x zero\u200bwidth \u2026 \u2460 \uff76 \u2122 \ufb00 \u03a3\u0301",
       "Straße, İstanbul, ΣΊΣΥΦΟΣ", "a" * 120 + " long word",
       "Token ids are [CLS] ... [SEP]; an unknown word is `[UNK]`, [mask] is text, a[MASK]b"]


def sentences():
    out = []
    for i in range(150):
        out.append("%s %s %s." % (SUBJECTS[i % len(SUBJECTS)], VERBS[(i * 7) % len(VERBS)],
                                  OBJECTS[(i * 3) % len(OBJECTS)]))
    for i, t in enumerate(CJK_TEXTS * 4):
        out.append(t if i < len(CJK_TEXTS) else t + " " + CJK_TEXTS[(i * 5) % len(CJK_TEXTS)])
    for i, t in enumerate(CODE * 3):
        out.append(t if i < len(CODE) else "We saw %s in the logs again" % t)
    out.extend(ODD)
    long = " ".join(OBJECTS) + " "
    out.append(long * 6)
    out.append(("".join(CJK_TEXTS)) * 3)
    return out


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "sentences":
        for t in sentences():
            print(json.dumps(t, ensure_ascii=False))
        return
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cmd, d = sys.argv[1], sys.argv[2]
    if cmd == "make":
        args = sys.argv[3:]
        opt = {"--dtype": "F32", "--pool": "mean", "--seed": "7"}
        for i in range(0, len(args) - 1, 2):
            opt[args[i]] = args[i + 1]
        make(d, dtype=opt["--dtype"], pool=opt["--pool"], seed=int(opt["--seed"]),
             arch=opt.get("--arch", "bert"))
        return
    if cmd == "gguf":
        qtype = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--type" else "F32"
        to_gguf(d, sys.argv[3], qtype)
        return
    texts = [json.loads(l) for l in sys.stdin if l.strip()]
    cfg, tok, cls_pool, max_len = load_model(d)
    hf = None
    if cmd in ("hf-ids", "embed-hf"):
        try:
            from tokenizers import Tokenizer
        except ImportError:
            sys.exit(3)
        tk = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        tk.no_truncation()
        tk.no_padding()
        hf = []
        for s in texts:
            ids = tk.encode(s).ids
            if len(ids) > max_len:
                ids = ids[:max_len - 1] + ids[-1:]
            hf.append(ids)
    if cmd == "hf-ids":
        for ids in hf:
            print(json.dumps({"ids": ids}))
        return
    if len(sys.argv) > 4 and sys.argv[3] == "--gguf":
        t = read_gguf(sys.argv[4], cfg["num_hidden_layers"])
    else:
        t = read_safetensors(os.path.join(d, "model.safetensors"))
    unigram = tok["model"]["type"] == "Unigram"
    vocab = tok["model"]["vocab"]
    lower = not unigram and bool(tok["normalizer"].get("lowercase"))
    for i, s in enumerate(texts):
        if hf is not None:
            ids = hf[i]
        else:
            ids = ug_tokenize(tok, s, max_len) if unigram else tokenize(vocab, s, max_len, lower)
        print(json.dumps({"ids": ids, "vector": [float(x) for x in forward(t, cfg, ids, cls_pool)]}))


if __name__ == "__main__":
    main()
