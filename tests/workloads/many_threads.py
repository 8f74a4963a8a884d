"""More threads than the BPF side searches in one sample, the busy one oldest.

usage: many_threads.py N [MAX_SECONDS]
Starts N - 1 threads that sleep in `idle_wait` (blocked on one Event), then
the main thread, the oldest thread state (the end of the interpreter's
thread list, which is newest first), spins in `spin_main` until
MAX_SECONDS (default 60). Prints `READY {"pid": N, "main": TID, "n": N}`
once every thread has started.
"""
import json
import os
import sys
import threading
import time

STOP = threading.Event()
STARTED = []


def idle_wait():
    STARTED.append(threading.get_native_id())
    STOP.wait()


def spin_main(deadline):
    acc = 0
    while time.monotonic() < deadline:
        for i in range(5000):
            acc = (acc * 31 + i) & 0xFFFFF
    return acc


def main(n, max_seconds):
    threads = [threading.Thread(target=idle_wait, name="idle_%d" % i, daemon=True)
               for i in range(n - 1)]
    for t in threads:
        t.start()
    while len(STARTED) < len(threads):
        time.sleep(0.01)
    sys.stdout.write("READY " + json.dumps({"pid": os.getpid(), "n": n,
                                             "main": threading.get_native_id()}) + "\n")
    sys.stdout.flush()
    spin_main(time.monotonic() + max_seconds)
    STOP.set()


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 60.0)
