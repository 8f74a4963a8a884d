"""Two busy threads, for the container tests: the main thread runs
<module> -> container_main_fn, a second thread container_thread_fn.

usage: ct_app.py [SECONDS]   (default 60)
Prints `READY {"pid": N, "tids": [...], "executable": ..., "prefix": ...}` with
the pid and thread ids as this process's own pid namespace numbers them.
"""
import json
import os
import sys
import threading
import time

END = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)


def container_thread_fn():
    acc = 0
    while time.monotonic() < END:
        for i in range(2000):
            acc = (acc * 31 + i) & 0xFFFFF


def container_main_fn():
    acc = 0
    while time.monotonic() < END:
        for i in range(2000):
            acc = (acc * 31 + i) & 0xFFFFF


if __name__ == "__main__":
    t = threading.Thread(target=container_thread_fn, name="ct-worker", daemon=True)
    t.start()
    sys.stdout.write("READY %s\n" % json.dumps({
        "pid": os.getpid(), "tids": [threading.get_native_id(), t.native_id],
        "executable": sys.executable, "prefix": sys.prefix,
        "version": "%d.%d" % sys.version_info[:2]}))
    sys.stdout.flush()
    container_main_fn()
