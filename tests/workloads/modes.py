"""Workloads for the sampling modes.

usage: modes.py sleep|nap|gil|io|named [MAX_SECONDS [TRUTH_JSON]]
  sleep  main thread: sleeping() sleeps 90% of the time, burning() spins 10%;
         with TRUTH_JSON, the wall seconds spent in each so far, rewritten
         after every cycle (the truth a wall-mode profile is checked against)
  nap    main thread: napping() sleeps until SIGUSR1, then sleeps again
  gil    spin_python() holds the GIL; hash_nogil() hashes big buffers in C with
         the GIL released (hashlib drops it for large inputs)
  io     write_files() writes and fsyncs a temp file in a loop (syscalls)
  named  three threads named via threading (and their OS names via prctl)
Prints `READY {"pid": N, ...}` once running.
"""
import ctypes
import hashlib
import json
import os
import signal
import sys
import tempfile
import threading
import time


def ready(**kw):
    kw["pid"] = os.getpid()
    print("READY " + json.dumps(kw), flush=True)


def burning(seconds):
    end = time.monotonic() + seconds
    acc = 0
    while time.monotonic() < end:
        for i in range(1000):
            acc = (acc * 31 + i) & 0xFFFFF
    return acc


def sleeping(seconds):
    time.sleep(seconds)


def write_json(path, obj):
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f)
    os.rename(path + ".tmp", path)


def sleep_main(limit, truth=None):
    spent = {"sleeping": 0.0, "burning": 0.0}
    ready()
    end = time.monotonic() + limit
    while time.monotonic() < end:
        t0 = time.monotonic()
        sleeping(0.09)
        t1 = time.monotonic()
        burning(0.01)
        t2 = time.monotonic()
        spent["sleeping"] += t1 - t0
        spent["burning"] += t2 - t1
        if truth:
            write_json(truth, spent)


def napping(seconds):
    time.sleep(seconds)


class Wake(Exception):
    pass


def wake(sig, frame):
    raise Wake()


def nap_main(limit):
    signal.signal(signal.SIGUSR1, wake)
    ready()
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            napping(end - time.monotonic())
        except Wake:
            pass


def spin_python(stop):
    acc = 0
    while not stop:
        for i in range(1000):
            acc = (acc * 31 + i) & 0xFFFFF


def hash_nogil(stop):
    data = b"x" * (8 << 20)
    while not stop:
        hashlib.sha256(data).digest()


def gil_main(limit):
    stop = []
    ts = [threading.Thread(target=f, args=(stop,)) for f in (spin_python, hash_nogil)]
    for t in ts:
        t.start()
    ready()
    time.sleep(limit)
    stop.append(1)


def write_files(path):
    with open(path, "wb") as f:
        for _ in range(64):
            f.write(os.urandom(4096))
        f.flush()
        os.fsync(f.fileno())


def io_main(limit):
    fd, path = tempfile.mkstemp()
    os.close(fd)
    ready()
    end = time.monotonic() + limit
    try:
        while time.monotonic() < end:
            write_files(path)
    finally:
        os.unlink(path)


def set_os_name(name):
    libc = ctypes.CDLL(None)
    libc.prctl(15, name.encode()[:15], 0, 0, 0)   # PR_SET_NAME: this thread's comm


def named_worker(name, stop):
    set_os_name(name)
    acc = 0
    while not stop:
        for i in range(1000):
            acc = (acc * 31 + i) & 0xFFFFF


def named_main(limit):
    stop = []
    names = ["ingest", "parser", "writer"]
    ts = [threading.Thread(target=named_worker, args=(n, stop), name=n) for n in names]
    for t in ts:
        t.start()
    time.sleep(0.2)
    ready(names=names, tids={t.name: t.native_id for t in ts})
    time.sleep(limit)
    stop.append(1)


if __name__ == "__main__":
    what = sys.argv[1]
    limit = float(sys.argv[2]) if len(sys.argv) > 2 else 30
    if what == "sleep":
        sleep_main(limit, sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        {"nap": nap_main, "gil": gil_main, "io": io_main, "named": named_main}[what](limit)
