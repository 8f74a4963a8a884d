"""Garbage collections at known moments, for the timeline's GC markers.

usage: gc_cycles.py [MAX_SECONDS]
The main thread alternates: spinning() runs pure Python for ~20 ms, then
collecting() builds a heap of reference cycles (outside the timed part) and
runs gc.collect() over it, which takes a few ms. The automatic collector is
off, so collections happen only inside collecting().
Prints `READY {"pid": N}` once running.
"""
import gc
import json
import os
import sys
import time

KEEP = []


def spinning(seconds):
    end = time.monotonic() + seconds
    acc = 0
    while time.monotonic() < end:
        for i in range(1000):
            acc = (acc * 31 + i) & 0xFFFFF
    return acc


def make_cycles(n):
    for _ in range(n):
        a, b = [], []
        a.append(b)
        b.append(a)
        KEEP.append(a)
    KEEP.clear()


def collecting():
    # A long-lived heap the collector must traverse, plus fresh garbage.
    make_cycles(20000)
    gc.collect()


def main():
    limit = float(sys.argv[1]) if len(sys.argv) > 1 else 30
    gc.disable()
    heap = [[i] for i in range(300000)]
    print("READY " + json.dumps({"pid": os.getpid()}), flush=True)
    end = time.monotonic() + limit
    while time.monotonic() < end:
        spinning(0.02)
        collecting()
    return len(heap)


if __name__ == "__main__":
    main()
