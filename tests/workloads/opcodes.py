"""A hot line of small int additions, for --opcodes.

usage: opcodes.py [MAX_SECONDS]
Prints `READY {"pid": N, "hot": L, "first": {"add_loop": A, "main": M}}`
once it runs. Line L is `x = i + i + i + i`: three additions of small
(compact) ints, which every interpreter from 3.11 specialises to
BINARY_OP_ADD_INT; the other instructions of the line are loads and one
store, each cheaper than an addition.
"""
import json
import os
import sys
import time


def add_loop(n):
    x = 0
    for i in range(n):
        x = i + i + i + i  # HOT
    return x


def main(max_seconds):
    end = time.monotonic() + max_seconds
    add_loop(1000)
    with open(__file__) as f:
        hot = [i for i, l in enumerate(f, 1) if "# HOT" in l and "x = " in l][0]
    info = {"pid": os.getpid(), "hot": hot,
            "first": {"add_loop": add_loop.__code__.co_firstlineno,
                      "main": main.__code__.co_firstlineno}}
    sys.stdout.write("READY " + json.dumps(info) + "\n")
    sys.stdout.flush()
    while time.monotonic() < end:
        add_loop(20000)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
