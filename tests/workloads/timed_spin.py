"""Spin for SECONDS of wall time, then say how much CPU it got.

usage: timed_spin.py SECONDS
Prints `CPU {"process_time": S}` at the end: the truth a profiler's
samples of it are checked against, measured by the process itself.
"""
import json
import sys
import time


def spin(seconds):
    end, acc = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        for i in range(2000):
            acc = (acc * 31 + i) & 0xFFFF
    return acc


if __name__ == "__main__":
    t0 = time.process_time()
    spin(float(sys.argv[1]))
    sys.stdout.write("CPU " + json.dumps({"process_time": time.process_time() - t0}) + "\n")
