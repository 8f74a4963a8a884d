"""Target that replaces itself with exec: <module> -> before_exec, then exec.

usage: execer.py PROGRAM [ARGS...]
Spins in before_exec until SIGUSR1 (at most 60 s), then os.execv(PROGRAM,
[PROGRAM, ARGS...]) in the same process: same pid, new image. Prints
`READY {"pid": N}` first.
"""
import os
import signal
import sys
import time

GO = []


def before_exec(deadline):
    acc = 0
    while not GO and time.monotonic() < deadline:
        for i in range(5000): acc = (acc * 31 + i) & 0xFFFFF  # HOT before_exec


def _on_usr1(signum, frame):
    GO.append(1)


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, _on_usr1)
    sys.stdout.write('READY {"pid": %d}\n' % os.getpid())
    sys.stdout.flush()
    before_exec(time.monotonic() + 60)
    sys.stdout.flush()
    os.execv(sys.argv[1], sys.argv[1:])
