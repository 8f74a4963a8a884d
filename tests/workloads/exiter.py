"""Target that exits by itself: <module> -> work_phase, then final_phase.

usage: exiter.py [FINAL_SECONDS] [MAX_SECONDS]
Spins in work_phase until SIGUSR1 (or MAX_SECONDS, default 60), then spins
in final_phase for FINAL_SECONDS (default 2), prints `DONE` and exits 0.
"""
import os
import signal
import sys
import time

GO = []


def work_phase(deadline):
    acc = 0
    while not GO and time.monotonic() < deadline:
        for i in range(5000): acc = (acc * 31 + i) & 0xFFFFF


def final_phase(seconds):
    acc = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for i in range(5000): acc = (acc * 31 + i) & 0xFFFFF


def _on_usr1(signum, frame):
    GO.append(1)


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, _on_usr1)
    final = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    max_s = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
    sys.stdout.write('READY {"pid": %d}\n' % os.getpid())
    sys.stdout.flush()
    work_phase(time.monotonic() + max_s)
    final_phase(final)
    sys.stdout.write("DONE\n")
    sys.stdout.flush()
