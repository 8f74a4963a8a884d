"""Child of spawner.py: spins in spawned_child_fn for SECONDS (default 0.5),
prints `CHILD {"pid": N, "cpu_s": X}` and exits 0."""
import json
import os
import sys
import time


def spawned_child_fn(seconds):
    end = time.monotonic() + seconds
    acc = 0
    while time.monotonic() < end:
        for i in range(300):
            acc = (acc * 31 + i) & 0xFFFFF
    return acc


if __name__ == "__main__":
    cpu0 = time.process_time()
    spawned_child_fn(float(sys.argv[1]) if len(sys.argv) > 1 else 0.5)
    sys.stdout.write("CHILD %s\n" % json.dumps({"pid": os.getpid(),
                                                "cpu_s": time.process_time() - cpu0}))
    sys.stdout.flush()
