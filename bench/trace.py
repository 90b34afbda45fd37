#!/usr/bin/env python3
"""How many calls, functions, files and layer switches one command runs
through inside the library and the command (docs/benchmarks.md).

    python3 bench/trace.py -- MNEMO ARGS...

Runs the command under `valgrind --tool=callgrind` and counts, among the
calls whose caller and callee are both in mnemo's sources (src/, cli/):
the calls, the distinct functions and files reached, and the calls whose
callee is in another layer than its caller (src/util, text, embed, engine,
store/sqlite, store/postgres, src/mnemo.c, cli). Functions the compiler
inlined are not calls and are not counted; compare builds made alike.
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

args = sys.argv[1:]
if args and args[0] == "--":
    args = args[1:]
if not args:
    sys.exit(__doc__)

out = tempfile.mktemp(prefix="mnemo-trace-")
subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + args,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

names = {"fl": {}, "fn": {}}
ref = re.compile(r"\((\d+)\)(?: (.*))?")


def name(kind, text):
    mo = ref.match(text)
    if not mo:
        return text
    if mo.group(2) is not None:
        names[kind][mo.group(1)] = mo.group(2)
    return names[kind].get(mo.group(1), "?")


def layer(path):
    p = path.replace("\\", "/")
    for part in ("store/sqlite", "store/postgres", "src/util", "src/text", "src/embed",
                 "src/engine", "cli/"):
        if part in p:
            return part.split("/")[-1] or "cli"
    if p.endswith("src/mnemo.c"):
        return "api"
    return None


calls = 0
switches = 0
funcs = set()
files = set()
fl = fn = cfl = None
fi = None
with open(out) as f:
    for line in f:
        line = line.rstrip("\n")
        key, _, rest = line.partition("=")
        if key == "fl":
            fl = name("fl", rest)
            fi = None
        elif key in ("fi", "fe"):
            fi = name("fl", rest)
        elif key == "fn":
            fn = name("fn", rest)
            fi = None
        elif key == "cfi" or key == "cfl":
            cfl = name("fl", rest)
        elif key == "cfn":
            cfn = name("fn", rest)
        elif key == "calls":
            n = int(rest.split()[0])
            caller = fi or fl
            callee = cfl or fl
            a, b = layer(caller or ""), layer(callee or "")
            if a and b:
                calls += n
                funcs.add(fn)
                funcs.add(cfn)
                files.add(os.path.basename(caller))
                files.add(os.path.basename(callee))
                if a != b:
                    switches += n
            cfl = None
os.unlink(out)
print("calls %d  functions %d  files %d  layer switches %d" % (calls, len(funcs), len(files),
                                                                switches))
