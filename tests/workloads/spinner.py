"""Busy single-threaded target: <module> -> spin_outer -> spin_inner.

usage: spinner.py [MAX_SECONDS]   (default 60)
Prints `READY {"pid": N, ...}` once spinning; exits 0 on SIGUSR1 or after
MAX_SECONDS. Python 3.6+ syntax (also used as a 3.8/3.10 target).
"""
import os
import signal
import sys
import time

STOP = []


def spin_inner(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFFF  # HOT spin_inner
    return acc


def spin_outer(deadline):
    sys.stdout.write('READY {"pid": %d, "version": "%d.%d"}\n'
                     % ((os.getpid(),) + tuple(sys.version_info[:2])))
    sys.stdout.flush()
    while not STOP and time.monotonic() < deadline:
        spin_inner(20000)


def _on_usr1(signum, frame):
    STOP.append(1)


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, _on_usr1)
    spin_outer(time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 60.0))
