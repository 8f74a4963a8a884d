"""A short program for `tachyon-bpf -- python3 cmd_app.py`: early_phase runs
first thing (EARLY seconds), then main_phase (MAIN seconds); exits with
status RC.

usage: cmd_app.py [EARLY] [MAIN] [RC]   (defaults 0.15 0.5 0)
Prints `DONE {"pid": N, "early_cpu_s": X, "main_cpu_s": Y}` to stdout.
"""
import json
import os
import sys
import time


def _burn(seconds):
    cpu0 = time.process_time()
    end = time.monotonic() + seconds
    acc = 0
    while time.monotonic() < end:
        for i in range(300):
            acc = (acc * 31 + i) & 0xFFFFF
    return time.process_time() - cpu0


def early_phase(seconds):
    return _burn(seconds)


def main_phase(seconds):
    return _burn(seconds)


if __name__ == "__main__":
    early = early_phase(float(sys.argv[1]) if len(sys.argv) > 1 else 0.15)
    main = main_phase(float(sys.argv[2]) if len(sys.argv) > 2 else 0.5)
    sys.stdout.write("DONE %s\n" % json.dumps({"pid": os.getpid(), "early_cpu_s": early,
                                               "main_cpu_s": main}))
    sys.stdout.flush()
    sys.exit(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
