"""Page faults at a known depth, as fast as Python can take them.

usage: faults.py DEPTH [MAX_SECONDS]
f<DEPTH> -> ... -> f2 -> touch (each compiled from its own source text):
touch writes one byte per page of a 16 MiB anonymous mapping, then drops
the pages (MADV_DONTNEED) so the next pass faults again. Prints
`READY {"pid": N, "page": 4096}` once faulting.
"""
import json
import mmap
import os
import sys
import time

DEPTH = int(sys.argv[1])
MAX_S = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
MEM = mmap.mmap(-1, 16 << 20)
PAGE = mmap.PAGESIZE


def touch(deadline):
    m = MEM
    while time.monotonic() < deadline:
        for i in range(0, len(m), PAGE):
            m[i] = 1
        m.madvise(mmap.MADV_DONTNEED)


def make(n, callee):
    src = "def f%d(deadline):\n    return callee(deadline)\n" % n
    ns = {"callee": callee}
    exec(compile(src, "<faults%d>" % n, "exec"), ns)
    return ns["f%d" % n]


top = touch
for n in range(2, DEPTH + 1):
    top = make(n, top)
sys.stdout.write("READY " + json.dumps({"pid": os.getpid(), "page": PAGE}) + "\n")
sys.stdout.flush()
top(time.monotonic() + MAX_S)
