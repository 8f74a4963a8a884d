"""multiprocessing.Pool workers running a distinctively named function.

usage: mp_pool.py METHOD [SECONDS] [WORKERS]
METHOD is a start method (fork, spawn, forkserver). The pool's WORKERS
(default 2) each run pool_task_METHOD (-> pool_leaf) for SECONDS (default 2).
Prints `READY {"pid": N, "workers": [...]}` once the pool exists, then
`DONE {"results": [[pid, cpu_s], ...]}` when the tasks are done, and exits 0.
"""
import json
import multiprocessing
import os
import sys
import time


def pool_leaf(n):
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) & 0xFFFFF
    return acc


def _spin(seconds):
    cpu0 = time.process_time()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pool_leaf(500)
    return [os.getpid(), time.process_time() - cpu0]


def pool_task_fork(seconds):
    return _spin(seconds)


def pool_task_spawn(seconds):
    return _spin(seconds)


def pool_task_forkserver(seconds):
    return _spin(seconds)


def main():
    method = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    task = globals()["pool_task_" + method]
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(n) as pool:
        workers = [p.pid for p in pool._pool]
        sys.stdout.write("READY %s\n" % json.dumps({"pid": os.getpid(), "workers": workers}))
        sys.stdout.flush()
        # chunksize 1 and a barrier-free spread: one task per worker
        results = pool.map(task, [seconds] * n, chunksize=1)
    sys.stdout.write("DONE %s\n" % json.dumps({"results": results}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
