"""8 busy threads, each in its own function worker_0 .. worker_7.

usage: threads8.py [MAX_SECONDS]
Prints `READY {"pid": N, "tids": {...}}` once all 8 are spinning; the main
thread then sleeps (off-CPU) until MAX_SECONDS (default 60) and joins.
"""
import json
import os
import sys
import threading
import time

STOP = []
STARTED = {}


def worker_0():
    STARTED["worker_0"] = threading.get_native_id(); acc = 0
    while not STOP:
        for i in range(5000): acc = (acc * 31 + i) & 0xFFFFF


def worker_1():
    STARTED["worker_1"] = threading.get_native_id(); acc = 0
    while not STOP:
        for i in range(5000): acc = (acc * 31 + i) & 0xFFFFF


def worker_2():
    STARTED["worker_2"] = threading.get_native_id(); acc = 0
    while not STOP:
        for i in range(5000): acc = (acc * 31 + i) & 0xFFFFF


def worker_3():
    STARTED["worker_3"] = threading.get_native_id(); acc = 0
    while not STOP:
        for i in range(5000): acc = (acc * 31 + i) & 0xFFFFF


def worker_4():
    STARTED["worker_4"] = threading.get_native_id(); acc = 0
    while not STOP:
        for i in range(5000): acc = (acc * 31 + i) & 0xFFFFF


def worker_5():
    STARTED["worker_5"] = threading.get_native_id(); acc = 0
    while not STOP:
        for i in range(5000): acc = (acc * 31 + i) & 0xFFFFF


def worker_6():
    STARTED["worker_6"] = threading.get_native_id(); acc = 0
    while not STOP:
        for i in range(5000): acc = (acc * 31 + i) & 0xFFFFF


def worker_7():
    STARTED["worker_7"] = threading.get_native_id(); acc = 0
    while not STOP:
        for i in range(5000): acc = (acc * 31 + i) & 0xFFFFF


def main(max_seconds):
    fns = [worker_0, worker_1, worker_2, worker_3, worker_4, worker_5, worker_6, worker_7]
    threads = [threading.Thread(target=f, name=f.__name__, daemon=True) for f in fns]
    for t in threads:
        t.start()
    while len(STARTED) < len(threads):
        time.sleep(0.01)
    sys.stdout.write("READY " + json.dumps({"pid": os.getpid(), "tids": STARTED}) + "\n")
    sys.stdout.flush()
    time.sleep(max_seconds)
    STOP.append(1)
    for t in threads:
        t.join()


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
