"""Threads that start after the profiler: each busy for SECONDS, then the
main thread writes every thread's own CPU time as ground truth.

usage: late_threads.py OUT.json [NTHREADS] [SECONDS]
Sleeps 0.3 s (the profiler is on by then in launch mode), starts NTHREADS
(default 3) threads late_0.. that spin for SECONDS (default 2), joins them
and writes {"late_N": {"tid": TID, "cpu": SECONDS_OF_CPU}, ...} to OUT.json.
"""
import json
import sys
import threading
import time

OUT = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 3
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
TRUTH = {}


def late_spin(name):
    t0 = time.thread_time()
    end = time.monotonic() + SECONDS
    acc = 0
    while time.monotonic() < end:
        for i in range(2000): acc = (acc * 31 + i) & 0xFFFFF
    TRUTH[name] = {"tid": threading.get_native_id(), "cpu": time.thread_time() - t0}


time.sleep(0.3)
threads = [threading.Thread(target=late_spin, args=("late_%d" % i,), name="late_%d" % i)
           for i in range(N)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with open(OUT, "w") as f:
    json.dump(TRUTH, f)
