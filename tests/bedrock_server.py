#!/usr/bin/env python3
"""bedrock_server.py - a loopback stand-in for Amazon Bedrock's InvokeModel, for the tests.

It refuses what the real service refuses: a SigV4 signature that botocore's own signer
(an implementation independent of mnemo's) does not reproduce over the received request,
keys or a region it does not know, a wrong bearer token, and a body that is not the model
family's. It answers each family's shape with vectors that depend on the words of the text
(texts sharing words have close vectors), can throttle the first N requests (429
ThrottlingException) or say the session token expired (403 ExpiredTokenException).

Each request is logged as a JSON line to --log: path, model, family, auth kind, status,
inputs and dimensions, the most requests in flight; never a key.

Usage: bedrock_server.py --port-file F --log L [--access-key K --secret S [--token T]]
       [--bearer B] [--region R] [--throttle N] [--expired] [--delay-ms MS]
"""
import argparse
import datetime
import hashlib
import json
import math
import os
import re
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

MODELS = {
    "amazon.titan-embed-text-v2:0": ("titan-v2", [256, 512, 1024]),
    "amazon.titan-embed-text-v1": ("titan-v1", [1536]),
    "amazon.titan-embed-g1-text-02": ("titan-v1", [1536]),
    "cohere.embed-english-v3": ("cohere-v3", [1024]),
    "cohere.embed-multilingual-v3": ("cohere-v3", [1024]),
    "cohere.embed-v4:0": ("cohere-v4", [256, 512, 1024, 1536]),
    "amazon.nova-2-multimodal-embeddings-v1:0": ("nova", [256, 384, 1024, 3072]),
}
PREFIXES = ("us.", "eu.", "apac.", "global.")

args = None
lock = threading.Lock()
state = {"requests": 0, "in_flight": 0, "max_in_flight": 0}


def family_of(model_id):
    for p in PREFIXES:
        if model_id.startswith(p):
            model_id = model_id[len(p):]
            break
    for mid, fam in MODELS.items():
        if model_id == mid or (model_id.startswith(mid + ":") and model_id[len(mid) + 1:]):
            return mid, fam
    return None, None


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


class BadBody(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise BadBody(msg)


def answer(fam, sizes, body):
    """Checks BODY as the family's schema and returns (answer, inputs, dims)."""
    need(isinstance(body, dict), "body is not an object")
    if fam == "titan-v2":
        need(set(body) == {"inputText", "dimensions", "normalize"}, "titan v2 keys: %s" % sorted(body))
        need(isinstance(body["inputText"], str), "inputText")
        need(body["dimensions"] in sizes, "dimensions %r" % body["dimensions"])
        need(body["normalize"] is True, "normalize")
        return {"embedding": vector(body["inputText"], body["dimensions"]),
                "inputTextTokenCount": 1}, 1, body["dimensions"]
    if fam == "titan-v1":
        need(set(body) == {"inputText"}, "titan v1 keys: %s" % sorted(body))
        need(isinstance(body["inputText"], str), "inputText")
        return {"embedding": vector(body["inputText"], 1536), "inputTextTokenCount": 1}, 1, 1536
    if fam in ("cohere-v3", "cohere-v4"):
        keys = {"texts", "input_type", "truncate"}
        if fam == "cohere-v4":
            keys |= {"embedding_types", "output_dimension"}
        need(set(body) == keys, "cohere keys: %s" % sorted(body))
        texts = body["texts"]
        need(isinstance(texts, list) and 1 <= len(texts) <= 96, "texts: 1 to 96")
        need(all(isinstance(t, str) for t in texts), "texts are strings")
        need(body["input_type"] in ("search_query", "search_document"), "input_type")
        need(body["truncate"] == "END", "truncate")
        if fam == "cohere-v3":
            return {"id": "x", "texts": texts, "response_type": "embeddings_floats",
                    "embeddings": [vector(t, 1024) for t in texts]}, len(texts), 1024
        need(body["embedding_types"] == ["float"], "embedding_types")
        need(body["output_dimension"] in sizes, "output_dimension")
        d = body["output_dimension"]
        return {"id": "x", "texts": texts, "response_type": "embeddings_by_type",
                "embeddings": {"float": [vector(t, d) for t in texts]}}, len(texts), d
    # nova
    need(set(body) == {"taskType", "singleEmbeddingParams"}, "nova keys: %s" % sorted(body))
    need(body["taskType"] == "SINGLE_EMBEDDING", "taskType")
    p = body["singleEmbeddingParams"]
    need(isinstance(p, dict) and set(p) == {"embeddingPurpose", "embeddingDimension", "text"},
         "singleEmbeddingParams keys")
    need(p["embeddingPurpose"] in ("GENERIC_INDEX", "GENERIC_RETRIEVAL", "TEXT_RETRIEVAL"),
         "embeddingPurpose")
    need(p["embeddingDimension"] in sizes, "embeddingDimension")
    t = p["text"]
    need(isinstance(t, dict) and t.get("truncationMode") == "END" and isinstance(t.get("value"), str),
         "text")
    d = p["embeddingDimension"]
    return {"embeddings": [{"embeddingType": "TEXT", "embedding": vector(t["value"], d)}]}, 1, d


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a failed call stops its other requests)

    def reply(self, status, obj, errtype=None, entry=None):
        # Logged before the answer leaves: a client that has its answer
        # finds the request in the log.
        if entry is not None:
            entry["status"] = status
            if errtype:
                entry["error"] = errtype
            with lock:
                with open(args.log, "a") as f:
                    f.write(json.dumps(entry) + "\n")
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if errtype:
            self.send_header("x-amzn-ErrorType", errtype + ":http://internal.amazon.com/coral/")
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a failed call stops its other requests)

    def check_sigv4(self, auth, body):
        """None when the signature is right, else (status, errtype, message)."""
        m = re.match(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
                     r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$", auth)
        if not m:
            return 400, "IncompleteSignatureException", "Authorization header is malformed"
        akid, day, region, service, signed, sig = m.groups()
        if akid != args.access_key:
            return 403, "UnrecognizedClientException", "The security token included in the request is invalid."
        if region != args.region or service != "bedrock":
            return 403, "SignatureDoesNotMatch", "Credential should be scoped to a valid region or service"
        names = signed.split(";")
        if "host" not in names or "x-amz-date" not in names:
            return 403, "SignatureDoesNotMatch", "host and x-amz-date must be signed"
        amzdate = self.headers.get("X-Amz-Date", "")
        try:
            t = datetime.datetime.strptime(amzdate, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            return 403, "SignatureDoesNotMatch", "bad X-Amz-Date"
        if abs((datetime.datetime.now(datetime.timezone.utc) - t).total_seconds()) > 300 or amzdate[:8] != day:
            return 403, "InvalidSignatureException", "Signature expired or the date does not match"
        token = self.headers.get("X-Amz-Security-Token")
        if (args.token or None) != token:
            return 403, "UnrecognizedClientException", "The security token included in the request is invalid."
        if args.token and "x-amz-security-token" not in names:
            return 403, "SignatureDoesNotMatch", "x-amz-security-token must be signed"
        headers = {}
        for n in names:
            v = self.headers.get(n)
            if v is None:
                return 403, "SignatureDoesNotMatch", "signed header %s is missing" % n
            headers[n] = v
        req = AWSRequest(method=self.command, url="http://" + self.headers["Host"] + self.path,
                         data=body, headers=headers)
        req.context["timestamp"] = amzdate
        signer = SigV4Auth(Credentials(args.access_key, args.secret, args.token or None), "bedrock", region)
        canonical = signer.canonical_request(req)
        want = signer.signature(signer.string_to_sign(req, canonical), req)
        if want != sig:
            return 403, "SignatureDoesNotMatch", ("The request signature we calculated does not match "
                                                  "the signature you provided.")
        return None

    def do_POST(self):
        with lock:
            state["requests"] += 1
            n = state["requests"]
            state["in_flight"] += 1
            state["max_in_flight"] = max(state["max_in_flight"], state["in_flight"])
        try:
            self.handle_post(n)
        finally:
            with lock:
                state["in_flight"] -= 1

    def handle_post(self, n):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        entry = {"path": self.path, "n": n}
        m = re.match(r"^/model/([^/]+)/invoke$", self.path)
        if not m:
            return self.reply(404, {"message": "Not Found"}, "UnknownOperationException", entry)
        raw = m.group(1)
        model_id = urllib.parse.unquote(raw)
        entry["model"] = model_id
        if ":" in model_id and "%3A" not in raw:
            return self.reply(400, {"message": "the model id must be percent-encoded"},
                              "ValidationException", entry)
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            entry["auth"] = "bearer"
            if not args.bearer or auth[7:] != args.bearer:
                return self.reply(403, {"message": "Authentication failed: Please make sure your API Key is valid."},
                                  "AccessDeniedException", entry)
        elif auth.startswith("AWS4-HMAC-SHA256 "):
            entry["auth"] = "sigv4"
            entry["session"] = self.headers.get("X-Amz-Security-Token") is not None
            entry["signed"] = re.search(r"SignedHeaders=([^,]+)", auth).group(1) if "SignedHeaders=" in auth else ""
            bad = self.check_sigv4(auth, body) if args.access_key else (403, "UnrecognizedClientException", "no keys")
            if bad:
                return self.reply(bad[0], {"message": bad[2]}, bad[1], entry)
        else:
            entry["auth"] = "none"
            return self.reply(403, {"message": "Missing Authentication Token"}, "MissingAuthenticationTokenException", entry)
        if args.expired:
            return self.reply(403, {"message": "The security token included in the request is expired"},
                              "ExpiredTokenException", entry)
        if n <= args.throttle:
            return self.reply(429, {"message": "Too many requests, please wait before trying again."},
                              "ThrottlingException", entry)
        mid, fam = family_of(model_id)
        if not fam:
            return self.reply(400, {"message": "The provided model identifier is invalid."},
                              "ValidationException", entry)
        entry["family"] = fam[0]
        try:
            obj = json.loads(body)
            out, inputs, dims = answer(fam[0], fam[1], obj)
        except (ValueError, BadBody, KeyError, TypeError) as e:
            return self.reply(400, {"message": "Malformed input request: %s" % e}, "ValidationException", entry)
        if args.delay_ms:
            time.sleep(args.delay_ms / 1000.0)
        entry["inputs"] = inputs
        entry["dims"] = dims
        if isinstance(obj, dict) and "input_type" in obj:
            entry["input_type"] = obj["input_type"]
        if isinstance(obj, dict) and "singleEmbeddingParams" in obj:
            entry["input_type"] = obj["singleEmbeddingParams"]["embeddingPurpose"]
        with lock:
            entry["max_in_flight"] = state["max_in_flight"]
        self.reply(200, out, None, entry)


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
    ap.add_argument("--access-key", default="")
    ap.add_argument("--secret", default="")
    ap.add_argument("--token", default="")
    ap.add_argument("--bearer", default="")
    ap.add_argument("--region", default="us-east-1")
    ap.add_argument("--throttle", type=int, default=0)
    ap.add_argument("--expired", action="store_true")
    ap.add_argument("--delay-ms", type=int, default=0)
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=watch_parent, args=(os.getppid(),), daemon=True).start()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
