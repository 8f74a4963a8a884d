"""One function, `handle`, whose time is spread over three hot lines.

usage: lines.py [MAX_SECONDS]
Prints `READY {"pid": N, "first": {"handle": L, "main": M}, "hot": [a, b, c]}`
(first lines of the functions, lines of the three loops) once it runs.
Per line, `handle` is three frames; per function (--function) it is one.
"""
import json
import os
import sys
import time


def handle(n):
    acc = 0
    for i in range(n): acc = (acc + i * 3) & 0xFFFFF  # HOT 1
    for i in range(n): acc = (acc + i * 5) & 0xFFFFF  # HOT 2
    for i in range(n): acc = (acc + i * 7) & 0xFFFFF  # HOT 3
    return acc


def main(max_seconds):
    end = time.monotonic() + max_seconds
    handle(1000)
    with open(__file__) as f:
        hot = [i for i, l in enumerate(f, 1) if "# HOT " in l and "for i" in l]
    info = {"pid": os.getpid(), "hot": hot,
            "first": {"handle": handle.__code__.co_firstlineno,
                      "main": main.__code__.co_firstlineno}}
    sys.stdout.write("READY " + json.dumps(info) + "\n")
    sys.stdout.flush()
    while time.monotonic() < end:
        handle(20000)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
