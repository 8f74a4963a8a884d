"""A busy process whose function names carry a tag, so that every process
of an --all-python run can be told apart by its stacks:
<module> -> work_TAG -> leaf_TAG.

usage: tagged.py TAG [SECONDS] [DUTY]
Spins for SECONDS (default 60) then exits 0; with DUTY < 1 it sleeps part of
each 20 ms period (half-busy processes). Prints `READY {"pid": N, ...}` once
its hot code runs, `DONE {"cpu_s": ...}` at the end, and exits early on
SIGUSR1. The names are set with code.replace (Python 3.11+); an older
Python keeps the plain names work_tagged/leaf_tagged.
"""
import json
import os
import signal
import sys
import time

STOP = []


def leaf_tagged(n):
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) & 0xFFFFF
    return acc


def work_tagged(deadline, duty):
    busy = 0.020 * duty
    while not STOP and time.monotonic() < deadline:
        t = time.monotonic()
        while time.monotonic() - t < busy:
            leaf_tagged(500)
        if duty < 1:
            time.sleep(0.020 - busy)


def _rename(fn, name):
    try:
        code = fn.__code__.replace(co_name=name, co_qualname=name)
    except TypeError:           # 3.8-3.10: no co_qualname, the name is co_name
        code = fn.__code__.replace(co_name=name)
    except AttributeError:      # < 3.8: no replace()
        return fn
    return type(fn)(code, fn.__globals__, name)


def _on_usr1(signum, frame):
    STOP.append(1)


if __name__ == "__main__":
    tag = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
    duty = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    signal.signal(signal.SIGUSR1, _on_usr1)
    leaf_tagged = _rename(leaf_tagged, "leaf_" + tag)
    work = _rename(work_tagged, "work_" + tag)
    sys.stdout.write("READY %s\n" % json.dumps({
        "pid": os.getpid(), "tag": tag, "version": "%d.%d" % sys.version_info[:2]}))
    sys.stdout.flush()
    cpu0 = time.process_time()
    work(time.monotonic() + seconds, duty)
    sys.stdout.write("DONE %s\n" % json.dumps({"cpu_s": time.process_time() - cpu0}))
    sys.stdout.flush()
