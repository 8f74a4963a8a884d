"""A deep stack of distinct functions that stays put, and new code objects
born next to it.

usage: chain.py DEPTH [COMPILE_EVERY_MS] [MAX_SECONDS]
The main thread calls f<DEPTH> -> f<DEPTH-1> -> ... -> f1, each compiled
from its own source text (file <chainN>, the call on line 2), and spins in
f1 (line 4). With COMPILE_EVERY_MS > 0 a second thread compiles and drops
a fresh function that often, so the interpreter's code object counter
keeps moving while the chain stands. Prints `READY {"pid": N}`.
"""
import json
import os
import sys
import threading
import time

DEPTH = int(sys.argv[1])
EVERY = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0.0
MAX_S = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
DEADLINE = time.monotonic() + MAX_S


def make(n, callee):
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
