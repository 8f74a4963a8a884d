"""Threads with Python names, one renamed, one that threading does not know.

usage: named_threads.py [MAX_SECONDS [RENAME_AFTER]]
Threads (all busy in work()):
  "producer", "hasher",
  "ünïcode-worker-with-a-long-name" (longer than the kernel's 15-byte comm),
  one started as "before-rename", renamed "renamed-later" once running,
  a _thread.start_new_thread thread (not in threading._active).
and the main thread ("MainThread") sleeps in main().
Prints `READY {"pid": N, "tids": {"producer": TID, ..., "raw": TID}}` once
every thread runs and the rename is done. With RENAME_AFTER, "producer" is
renamed "producer-2" that many seconds after READY.
"""
import _thread
import json
import os
import sys
import threading
import time

STOP = []
TIDS = {}
LONG = "\u00fcn\u00efcode-worker-with-a-long-name"


def spin():
    acc = 0
    for i in range(5000):
        acc = (acc * 31 + i) & 0xFFFFF
    return acc


def work(key):
    TIDS[key] = threading.get_native_id()
    while not STOP:
        spin()


def main(max_seconds, rename_after):
    ts = [threading.Thread(target=work, args=(key,), name=name, daemon=True)
          for key, name in (("producer", "producer"), ("hasher", "hasher"), (LONG, LONG),
                            ("renamed-later", "before-rename"))]
    for t in ts:
        t.start()
    _thread.start_new_thread(work, ("raw",))
    while len(TIDS) < 5:
        time.sleep(0.01)
    ts[3].name = "renamed-later"
    TIDS["MainThread"] = threading.get_native_id()
    sys.stdout.write("READY " + json.dumps({"pid": os.getpid(), "tids": TIDS}) + "\n")
    sys.stdout.flush()
    if rename_after:
        time.sleep(rename_after)
        ts[0].name = "producer-2"
        max_seconds -= rename_after
    time.sleep(max(0.0, max_seconds))
    STOP.append(1)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0,
         float(sys.argv[2]) if len(sys.argv) > 2 else 0.0)
