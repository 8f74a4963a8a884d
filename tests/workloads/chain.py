"""A deep stack of distinct functions that stays put, and new code objects
born next to it.

usage: chain.py DEPTH [COMPILE_EVERY_MS] [MAX_SECONDS] [VARY]
The main thread calls f<DEPTH> -> f<DEPTH-1> -> ... -> f1, each compiled
from its own source text (file <chainN>, the call on line 2), and spins in
f1 (line 4). With COMPILE_EVERY_MS > 0 a second thread compiles and drops
a fresh function that often, so the interpreter's code object counter
keeps moving while the chain stands. With VARY > 0, f1 instead calls a
second chain of distinct functions w<K> -> ... -> w1 (file <wobble>) that
spins in w1, K changing every millisecond between 0 and VARY: the leaf
side of the stack varies in depth from sample to sample, as an
application's does, above a bottom that stays. Prints `READY {"pid": N}`.
"""
import json
import os
import sys
import threading
import time

DEPTH = int(sys.argv[1])
EVERY = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0.0
MAX_S = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
VARY = int(sys.argv[4]) if len(sys.argv) > 4 else 0
DEADLINE = time.monotonic() + MAX_S


def wobbles(n):
    """w0 spins for a millisecond; w<k> calls w<k-1>."""
    ws = []
    for k in range(n + 1):
        if k == 0:
            src = ("def w0():\n    end = time.monotonic() + 0.001\n"
                   "    while time.monotonic() < end:\n        pass\n")
        else:
            src = "def w%d():\n    return callee()\n" % k
        ns = {"callee": ws[-1] if ws else None, "time": time}
        exec(compile(src, "<wobble>", "exec"), ns)
        ws.append(ns["w%d" % k])
    return ws


def make(n, callee):
    if n == 1 and VARY:
        ns = {"ws": wobbles(VARY), "time": time, "DEADLINE": DEADLINE}
        exec(compile("def f1():\n    i = 0\n    while time.monotonic() < DEADLINE:\n"
                     "        i += 1\n        ws[i * 7 % len(ws)]()\n",
                     "<chain1>", "exec"), ns)
        return ns["f1"]
    if n == 1:
        src = ("def f1():\n    x = 0\n    while time.monotonic() < DEADLINE:\n"
               "        x += 1\n    return x\n")
    else:
        src = "def f%d():\n    return callee()\n" % n
    ns = {"callee": callee, "time": time, "DEADLINE": DEADLINE}
    exec(compile(src, "<chain%d>" % n, "exec"), ns)
    return ns["f%d" % n]


def births():
    i = 0
    while time.monotonic() < DEADLINE:
        exec(compile("def g%d():\n    return %d\n" % (i, i), "<born>", "exec"), {})
        i += 1
        time.sleep(EVERY)


top = None
for n in range(1, DEPTH + 1):
    top = make(n, top)
if EVERY > 0:
    threading.Thread(target=births, daemon=True).start()
sys.stdout.write("READY " + json.dumps({"pid": os.getpid()}) + "\n")
sys.stdout.flush()
top()
