"""Deep recursion target: <module> -> recurse x (DEPTH+1) -> spin.

usage: deep.py DEPTH [MAX_SECONDS]
recurse(DEPTH) calls itself down to recurse(0), which calls spin(); spin
busy-loops until MAX_SECONDS (default 60). Prints
`READY {"pid", "depth", "frames", "root_line", "recurse_line", "bottom_line",
"spin_line"}` from inside spin, so the whole chain is on the stack.
"""
import json
import os
import sys
import time


def spin(deadline):
    sys.stdout.write("READY " + json.dumps(INFO) + "\n")
    sys.stdout.flush()
    acc = 0
    while time.monotonic() < deadline: acc = (acc * 31 + 7) & 0xFFFFF  # HOT spin


def recurse(n, deadline):
    if n == 0:
        return spin(deadline)  # CALL bottom
    return recurse(n - 1, deadline)  # CALL recurse


def _marker_lines():
    lines = {}
    with open(os.path.abspath(__file__), encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            s = line.rstrip()
            if s.endswith("# CALL bottom"):
                lines["bottom_line"] = i
            elif s.endswith("# CALL recurse"):
                lines["recurse_line"] = i
            elif s.endswith("# CALL root"):
                lines["root_line"] = i
            elif s.endswith("# HOT spin"):
                lines["spin_line"] = i
    return lines


if __name__ == "__main__":
    DEPTH = int(sys.argv[1])
    MAX = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
    sys.setrecursionlimit(DEPTH + 1000)
    INFO = {"pid": os.getpid(), "depth": DEPTH, "frames": DEPTH + 1}
    INFO.update(_marker_lines())
    recurse(DEPTH, time.monotonic() + MAX)  # CALL root
