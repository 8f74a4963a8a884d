"""CPU-bound workload whose time moves between two functions by a parameter.

usage: shift.py GROW [--max-seconds S]      (GROW: a fraction, 0 to 1)

Each cycle: main -> steady (30% of the cycle's work), then grows (GROW of
the other 70%) and shrinks (the rest). All three run the same one-line
loop, so work is time. Two runs with GROW 0.1 and 0.9 give a known shift
for tachyon-bpf diff: grows goes from 7% to 63% of the samples, shrinks
from 63% to 7%, steady stays at 30%. Prints `READY {"pid": N}` once
running; exits after S seconds (default 30).
"""
import os
import sys
import time

UNIT = 2000


def steady(n):
    acc = 1
    for i in range(n): acc = (acc * 1103515245 + i) & 0xFFFFFFF
    return acc


def grows(n):
    acc = 2
    for i in range(n): acc = (acc * 1103515245 + i) & 0xFFFFFFF
    return acc


def shrinks(n):
    acc = 3
    for i in range(n): acc = (acc * 1103515245 + i) & 0xFFFFFFF
    return acc


def main(grow, max_seconds):
    deadline = time.monotonic() + max_seconds
    sys.stdout.write('READY {"pid": %d}\n' % os.getpid())
    sys.stdout.flush()
    while time.monotonic() < deadline:
        steady(30 * UNIT)
        grows(int(70 * UNIT * grow))
        shrinks(int(70 * UNIT * (1 - grow)))


if __name__ == "__main__":
    args = sys.argv[1:]
    max_s = float(args[args.index("--max-seconds") + 1]) if "--max-seconds" in args else 30.0
    main(float(args[0]), max_s)
