#!/usr/bin/env python3
"""hub_server.py - a model hub for the test suite, on a loopback port, answering as the
Hugging Face hub does for the requests `mnemo model pull` makes.

    hub_server.py ROOT PORT_FILE LOG_FILE [--cut FILE] [--bad-sha FILE]

ROOT holds repositories as folders (ROOT/owner/name/...). The port is written to
PORT_FILE once the server listens; every request is appended to LOG_FILE as
"METHOD PATH RANGE AUTH" (AUTH: "auth" when an Authorization header came, else "-").

    GET /api/models/{repo}/revision/{rev}?blobs=true
        {"id", "sha", "siblings": [{"rfilename", "size", "blobId", "lfs": {"sha256",
        "size", "pointerSize"}}]}; files over 4 KB and *.safetensors are "LFS" files.
        404 {"error": ...} for an unknown repository or revision.
    GET /{repo}/resolve/{rev}/{file}
        an LFS file: 302 to /cdn/{repo}/{file} with X-Repo-Commit, X-Linked-Etag and
        X-Linked-Size; another: the file, with ETag. 404 for a missing file.
    GET /cdn/{repo}/{file}
        the file with Content-Length, ETag and Accept-Ranges; "Range: bytes=N-" gives
        206 and Content-Range.

--cut FILE: the first download of FILE from its start sends half of it, then the
connection is closed. --bad-sha FILE: the metadata lists a wrong SHA-256 for FILE.
"""
import hashlib
import http.server
import json
import os
import socketserver
import sys
import urllib.parse

ROOT, PORT_FILE, LOG_FILE = sys.argv[1], sys.argv[2], sys.argv[3]
OPTS = sys.argv[4:]
CUT = {OPTS[i + 1] for i in range(len(OPTS) - 1) if OPTS[i] == "--cut"}
BAD = {OPTS[i + 1] for i in range(len(OPTS) - 1) if OPTS[i] == "--bad-sha"}
CUT_DONE = set()


def commit_of(repo):
    return hashlib.sha1(repo.encode()).hexdigest()


def is_lfs(path):
    return path.endswith(".safetensors") or os.path.getsize(path) > 4096


def files_of(repo):
    base = os.path.join(ROOT, repo)
    out = []
    for d, _, names in os.walk(base):
        for n in sorted(names):
            full = os.path.join(d, n)
            out.append((os.path.relpath(full, base), full))
    return sorted(out)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with open(LOG_FILE, "a") as f:
            f.write("GET %s %s %s\n" % (self.path, self.headers.get("Range", "-"),
                                         "auth" if self.headers.get("Authorization") else "-"))
        u = urllib.parse.urlparse(self.path)
        path = urllib.parse.unquote(u.path)
        if path.startswith("/api/models/"):
            rest = path[len("/api/models/"):]
            repo, sep, rev = rest.partition("/revision/")
            if not sep or not os.path.isdir(os.path.join(ROOT, repo)):
                return self.send_json(404, {"error": "Repository not found"})
            if rev not in ("main", commit_of(repo)):
                return self.send_json(404, {"error": "Invalid rev id: %s" % rev})
            sib = []
            for rel, full in files_of(repo):
                data = open(full, "rb").read()
                git = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
                e = {"rfilename": rel, "size": len(data), "blobId": git}
                if is_lfs(full):
                    sha = hashlib.sha256(data).hexdigest()
                    if rel in BAD:
                        sha = ("0" if sha[0] != "0" else "1") + sha[1:]
                    e["lfs"] = {"sha256": sha, "size": len(data), "pointerSize": 134}
                sib.append(e)
            return self.send_json(200, {"id": repo, "sha": commit_of(repo), "siblings": sib})
        if "/resolve/" in path:
            repo, _, rest = path[1:].partition("/resolve/")
            rev, _, rel = rest.partition("/")
            full = os.path.join(ROOT, repo, rel)
            if rev != commit_of(repo) and rev != "main" or not os.path.isfile(full):
                return self.send_json(404, {"error": "Entry not found"})
            if is_lfs(full):
                data = open(full, "rb").read()
                self.send_response(302)
                self.send_header("Location", "/cdn/%s/%s" % (repo, rel))
                self.send_header("X-Repo-Commit", commit_of(repo))
                self.send_header("X-Linked-Etag", '"%s"' % hashlib.sha256(data).hexdigest())
                self.send_header("X-Linked-Size", str(len(data)))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            return self.send_file(full, rel)
        if path.startswith("/cdn/"):
            rest = path[len("/cdn/"):]
            parts = rest.split("/", 2)
            if len(parts) < 3:
                return self.send_json(404, {"error": "not found"})
            full = os.path.join(ROOT, parts[0], parts[1], parts[2])
            if not os.path.isfile(full):
                return self.send_json(404, {"error": "not found"})
            return self.send_file(full, parts[2])
        return self.send_json(404, {"error": "no such route"})

    def send_file(self, full, rel):
        data = open(full, "rb").read()
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.send_header("Content-Length", str(len(data) - start))
        self.send_header("ETag", '"%s"' % hashlib.sha256(data).hexdigest())
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if rel in CUT and start == 0 and rel not in CUT_DONE:
            CUT_DONE.add(rel)
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.wfile.write(data[start:])


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(PORT_FILE + ".tmp", PORT_FILE)
srv.serve_forever()
