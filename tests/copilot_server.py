#!/usr/bin/env python3
"""copilot_server.py - a loopback stand-in for GitHub's Copilot token exchange and Copilot's
models and embeddings API, for the tests.

GET /copilot_internal/v2/token takes the GitHub token (Authorization "token T", as the
Copilot editor extensions send it, or "Bearer T", as GitHub's API accepts too) and the
editor headers, and answers {"token","expires_at","refresh_in"}: a token of ";"-separated
fields with a proxy-ep, expiring after --ttl seconds (--reported-ttl claims another
lifetime, to make a client hold a token the server has stopped taking). --exchange-status
refuses every exchange with that status as GitHub does (401 bad credentials, 403/404 no
Copilot access).

GET /models lists chat models and --embedding-models; POST /embeddings answers in
OpenAI's shape with vectors that depend on the words of the text, only for a token it
issued that has not expired and with the editor headers; an expired token is a 401.

Each request is logged as a JSON line to --log (path, status, auth scheme, the token's
number, error, model, inputs, the body's keys, the editor headers seen); never a token.

Usage: copilot_server.py --port-file F --log L --gh-token T [--ttl S] [--reported-ttl S]
       [--proxy-ep HOST ("{port}" is the server's)] [--embedding-models A,B] [--exchange-status N]
       [--editor-version V]
"""
import argparse
import hashlib
import json
import math
import os
import re
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EDITOR = ("Editor-Version", "Editor-Plugin-Version", "Copilot-Integration-Id", "User-Agent")
CHAT_MODELS = [
    {"id": "gpt-4o", "capabilities": {"type": "chat"}, "supported_endpoints": ["/chat/completions"]},
    {"id": "claude-sonnet-4", "capabilities": {"type": "chat"},
     "supported_endpoints": ["/chat/completions", "/v1/messages"]},
]

args = None
lock = threading.Lock()
issued = {}  # token -> (number, expiry)
state = {"exchanges": 0, "port": 0}


def vector(text, dims):
    """A bag of words hashed into DIMS signed buckets, normalized."""
    v = [0.0] * dims
    for w in re.findall(r"\w+", text.lower()):
        h = hashlib.sha256(w.encode()).digest()
        i = int.from_bytes(h[:4], "little") % dims
        v[i] += 1.0 if h[4] & 1 else -1.0
    n = math.sqrt(sum(x * x for x in v))
    if n == 0:
        v[0] = 1.0
        return v
    return [x / n for x in v]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def reply(self, status, obj, entry):
        # Logged before the answer leaves: a client that has its answer
        # finds the request in the log.
        entry["status"] = status
        with lock:
            with open(args.log, "a") as f:
                f.write(json.dumps(entry) + "\n")
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def editor_ok(self, entry):
        """None when the editor headers are there (and Editor-Version is the one expected)."""
        seen = {h: self.headers.get(h) for h in EDITOR}
        entry["editor_version"] = seen["Editor-Version"]
        missing = [h for h in EDITOR if not seen[h]]
        if missing:
            return "missing editor headers: " + ", ".join(missing)
        if args.editor_version and seen["Editor-Version"] != args.editor_version:
            return "unexpected Editor-Version"
        return None

    def copilot_token(self, entry):
        """The token's number when the bearer is a live token, else (status, message)."""
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            entry["auth"] = "none"
            return None, (401, "Unauthorized: no Copilot token")
        entry["auth"] = "bearer"
        with lock:
            known = issued.get(auth[7:])
        if not known:
            return None, (401, "Unauthorized: unknown Copilot token")
        entry["token_n"] = known[0]
        if known[1] <= time.time():
            entry["error"] = "expired"
            return None, (401, "unauthorized: token expired")
        return known[0], None

    def do_GET(self):
        entry = {"method": "GET", "path": self.path}
        if self.path == "/copilot_internal/v2/token":
            return self.exchange(entry)
        if self.path == "/models":
            n, bad = self.copilot_token(entry)
            if bad:
                return self.reply(bad[0], {"error": {"message": bad[1]}}, entry)
            bad = self.editor_ok(entry)
            if bad:
                return self.reply(400, {"error": {"message": bad}}, entry)
            data = list(CHAT_MODELS)
            for m in args.embedding_models.split(","):
                data.append({"id": m, "capabilities": {"type": "embeddings"},
                             "supported_endpoints": ["/embeddings"]})
            return self.reply(200, {"object": "list", "data": data}, entry)
        return self.reply(404, {"message": "Not Found"}, entry)

    def exchange(self, entry):
        auth = self.headers.get("Authorization", "")
        scheme, _, tok = auth.partition(" ")
        entry["auth"] = scheme.lower()
        if scheme.lower() not in ("token", "bearer") or tok != args.gh_token:
            return self.reply(401, {"message": "Bad credentials",
                                    "documentation_url": "https://docs.github.com/rest"}, entry)
        bad = self.editor_ok(entry)
        if bad:
            return self.reply(400, {"message": bad}, entry)
        if args.exchange_status == 403:
            return self.reply(403, {"message": "Resource not accessible by integration",
                                    "error_details": {"message": "Copilot is not enabled for this "
                                                      "account"}}, entry)
        if args.exchange_status:
            return self.reply(args.exchange_status, {"message": "Not Found"}, entry)
        now = time.time()
        with lock:
            state["exchanges"] += 1
            n = state["exchanges"]
            exp = int(now + args.ttl)
            token = "tid=%s;exp=%d;sku=copilot_for_individual;proxy-ep=%s;8kp=1:%s" % (
                secrets.token_hex(16), exp, args.proxy_ep.replace("{port}", str(state["port"])),
                secrets.token_hex(32))
            issued[token] = (n, now + args.ttl)
        entry["token_n"] = n
        reported = int(now + (args.reported_ttl if args.reported_ttl else args.ttl))
        return self.reply(200, {"token": token, "expires_at": reported,
                                "refresh_in": max(1, args.ttl - 60)}, entry)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        entry = {"method": "POST", "path": self.path}
        if self.path != "/embeddings":
            return self.reply(404, {"error": {"message": "Not Found"}}, entry)
        n, bad = self.copilot_token(entry)
        if bad:
            return self.reply(bad[0], {"error": {"message": bad[1]}}, entry)
        bad = self.editor_ok(entry)
        if bad:
            return self.reply(400, {"error": {"message": bad}}, entry)
        try:
            obj = json.loads(body)
            model = obj["model"]
            inputs = obj["input"]
            if isinstance(inputs, str):
                inputs = [inputs]
            assert isinstance(inputs, list) and all(isinstance(t, str) for t in inputs)
        except (ValueError, KeyError, TypeError, AssertionError):
            return self.reply(400, {"error": {"message": "malformed request"}}, entry)
        entry["model"] = model
        entry["keys"] = sorted(obj)
        entry["inputs"] = len(inputs)
        if model not in args.embedding_models.split(","):
            return self.reply(400, {"error": {"message": "model %s is not supported" % model}},
                              entry)
        dims = obj.get("dimensions") or (1536 if model == "text-embedding-3-small" else 64)
        data = [{"object": "embedding", "index": i, "embedding": vector(t, dims)}
                for i, t in enumerate(inputs)]
        return self.reply(200, {"object": "list", "data": data, "model": model,
                                "usage": {"prompt_tokens": 1, "total_tokens": 1}}, entry)


def watch_parent(ppid):
    # Leave with the test that started us, whatever becomes of it.
    while os.getppid() == ppid:
        time.sleep(0.2)
    os._exit(0)


def main():
    global args
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--gh-token", required=True)
    ap.add_argument("--ttl", type=float, default=1800)
    ap.add_argument("--reported-ttl", type=float, default=0)
    ap.add_argument("--proxy-ep", default="proxy.individual.githubcopilot.com")
    ap.add_argument("--embedding-models", default="text-embedding-3-small,text-embedding-ada-002")
    ap.add_argument("--exchange-status", type=int, default=0)
    ap.add_argument("--editor-version", default="")
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    state["port"] = srv.server_address[1]
    threading.Thread(target=watch_parent, args=(os.getppid(),), daemon=True).start()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
