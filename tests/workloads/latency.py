"""Setup-latency probe: spins for SPIN seconds from the moment the script
starts, in 10 ms slices; each slice runs in a function named after the
slice's start, in ms since T0 (`at_0042ms`). T0 is CLOCK_MONOTONIC of the
spawn, given by the parent in $TB_T0 (else the script start).

usage: latency.py [SPIN_SECONDS]   (default 0.3)
At the end prints `RESULT {json}`: pid, t0, script_start_ms (script start
minus T0), cpu_s (CPU time used while spinning), slices (names run).
Python 3.8+ (code.replace(); co_qualname too on 3.11+).
"""
import json
import os
import sys
import time

mono = time.monotonic
T_SCRIPT = mono()
T0 = float(os.environ.get("TB_T0") or T_SCRIPT)
SLICE = 0.010


def _slice(end):
    while mono() < end:
        pass


_funcs = {}


def run_slice(k):
    f = _funcs.get(k)
    if f is None:
        name = "at_%04dms" % (k * 10)
        if sys.version_info >= (3, 11):
            code = _slice.__code__.replace(co_name=name, co_qualname=name)
        else:                   # no co_qualname: the name shown is co_name
            code = _slice.__code__.replace(co_name=name)
        f = _funcs[k] = type(_slice)(code, globals(), name)
    f(T0 + (k + 1) * SLICE)


def main(spin):
    cpu0 = time.process_time()
    end = T_SCRIPT + spin
    ran = []
    while True:
        now = mono()
        if now >= end:
            break
        k = int((now - T0) / SLICE)
        run_slice(k)
        ran.append(k)
    cpu = time.process_time() - cpu0
    sys.stdout.write("RESULT %s\n" % json.dumps({
        "pid": os.getpid(), "t0": T0, "script_start_ms": (T_SCRIPT - T0) * 1000,
        "cpu_s": cpu, "wall_s": mono() - T_SCRIPT,
        "slices": sorted(set(ran))}))
    sys.stdout.flush()


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 0.3)
