"""Target that forks children which keep running.

usage: forker.py [CHILDREN] [MAX_SECONDS]
The parent forks CHILDREN (default 2, may be 0) children with os.fork(); each child
spins in child_work until MAX_SECONDS (default 60) and exits with
os._exit(0); the parent spins in parent_work. Prints `READY {"pid": N,
"children": [...]}` once every child runs. SIGUSR1 makes the parent fork
one more child (in fork_more), which also runs child_work.
"""
import json
import os
import signal
import sys
import time

MORE = []


def child_work(deadline):
    acc = 0
    while time.monotonic() < deadline:
        for i in range(5000): acc = (acc * 31 + i) & 0xFFFFF  # HOT child_work
    os._exit(0)


def fork_more(deadline):
    pid = os.fork()
    if pid == 0:
        child_work(deadline)
    return pid


def parent_work(deadline):
    acc = 0
    while time.monotonic() < deadline:
        if MORE:
            MORE.pop()
            KIDS.append(fork_more(deadline))
        for i in range(5000): acc = (acc * 31 + i) & 0xFFFFF  # HOT parent_work


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    deadline = time.monotonic() + (float(sys.argv[2]) if len(sys.argv) > 2 else 60.0)
    signal.signal(signal.SIGUSR1, lambda *a: MORE.append(1))
    KIDS = [fork_more(deadline) for _ in range(n)]
    sys.stdout.write("READY " + json.dumps({"pid": os.getpid(), "children": KIDS}) + "\n")
    sys.stdout.flush()
    parent_work(deadline)
    for k in KIDS:
        os.waitpid(k, 0)
