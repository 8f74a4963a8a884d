"""A CPU neighbour that the scheduler tick rarely finds running.

usage: tick_dodger.py [MAX_SECONDS]   (default 60)
Sleeps 1 ms and runs 1 ms, over and over: its timer wake-ups coalesce with
the tick's hrtimer expiry, so it starts just after a tick and is off the
CPU before the next one, and a tick sampler credits its time to whatever
it interrupted. Prints `READY {"pid": N}` once looping.
"""
import json
import os
import sys
import time


def dodge(deadline):
    while time.monotonic() < deadline:
        time.sleep(0.001)
        t = time.monotonic()
        while time.monotonic() - t < 0.001:
            pass


if __name__ == "__main__":
    sys.stdout.write("READY " + json.dumps({"pid": os.getpid()}) + "\n")
    sys.stdout.flush()
    dodge(time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 60.0))
