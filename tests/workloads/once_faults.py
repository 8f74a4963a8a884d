"""Stacks taken an exact number of times: under -e page-faults -c 1 the
first write to a fresh anonymous page is one sample, in the stack that
wrote it.

usage: once_faults.py KINDS [GAP]
For d in 1..KINDS, level() recurses d times and touch() writes to
1 + d % 3 pages of a fresh mapping: stack d is taken exactly that often.
The counted pass writes every stack's first page, then after GAP seconds
(default 0) every second page, then after 2 * GAP the third: a stack's
samples then fall in different reads of the profiler's in-kernel counts.
Everything is run once first on pages already present (no fault: the
interpreter's frames, caches and specializations are then warm), READY is
printed, and the counted pass runs at SIGUSR1 (at most 60 s later); then
the process exits.
"""
import json
import mmap
import os
import signal
import sys
import time

KINDS = int(sys.argv[1])
GAP = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
PAGE = mmap.PAGESIZE


def reps(d):
    return 1 + d % 3


def touch(m, offs):
    for off in offs:
        m[off] = 1


def level(n, m, offs):
    if n:
        return level(n - 1, m, offs)
    return touch(m, offs)


def run(m, gap=0.0):
    for k in range(3):
        if k and gap:
            time.sleep(k * gap)
        for d in range(1, KINDS + 1):
            if k < len(PLAN[d]):
                level(d, m, PLAN[d][k:k + 1])


def plan():
    out, at = {}, 0
    for d in range(1, KINDS + 1):
        out[d] = [(at + k) * PAGE for k in range(reps(d))]
        at += reps(d)
    return out, at


PLAN, NPAGES = plan()
warm = mmap.mmap(-1, NPAGES * PAGE)
fresh = mmap.mmap(-1, NPAGES * PAGE)
for i in range(0, NPAGES * PAGE, PAGE):
    warm[i] = 1
run(warm)
run(warm)
GO = []
signal.signal(signal.SIGUSR1, lambda *a: GO.append(1))
sys.stdout.write("READY " + json.dumps({"pid": os.getpid(), "kinds": KINDS}) + "\n")
sys.stdout.flush()
deadline = time.monotonic() + 60
while not GO and time.monotonic() < deadline:
    time.sleep(0.01)
run(fresh, GAP)
