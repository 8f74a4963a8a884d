"""4 busy threads whose stacks keep changing: each recurses to a random depth
(1 to 1500), spins briefly at the bottom, and starts over. Nearly every
sample is a new stack, with up to 1500 frames to send: the kernel cannot
count them in place, and the ring buffer fills fast when nobody reads it.

usage: depths.py [MAX_SECONDS]
Prints `READY {"pid": N}` once the threads run; ends after MAX_SECONDS
(default 60).
"""
import json
import os
import random
import sys
import threading
import time

STOP = []


def down(d):
    if d <= 0:
        acc = 0
        for i in range(200):
            acc += i
        return acc
    return down(d - 1)


def worker(seed):
    rnd = random.Random(seed)
    while not STOP:
        down(rnd.randint(1, 1500))


def main():
    limit = float(sys.argv[1]) if len(sys.argv) > 1 else 60
    sys.setrecursionlimit(5000)
    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(4)]
    for t in threads:
        t.start()
    print("READY " + json.dumps({"pid": os.getpid()}), flush=True)
    time.sleep(limit)
    STOP.append(1)


main()
