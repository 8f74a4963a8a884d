"""--native's workload: C code called from Python, Python called from C.

usage: native_mix.py EXT_DIR SECONDS TIMES_JSON
Rounds of four phases, each timed by the workload itself (perf_counter):
do_spin (tbnative.spin, CPU in C), do_cb (tbnative.call_back calling cb),
do_zlib (tbnative.zlib_compress, libz), do_sort (sorted with key_of, then
map(key_of)).
Prints READY, runs SECONDS, writes {phase: seconds} to TIMES_JSON.
"""
import json
import sys
import time

sys.path.insert(0, sys.argv[1])
import tbnative  # noqa: E402

DATA = bytes(range(256)) * 400
ITEMS = list(range(20000, 0, -1))


def cb():
    x = 0
    for i in range(2000):
        x += i
    return x


def key_of(v):
    return -v if v & 1 else v


def do_spin():
    tbnative.spin(2_000_000)


def do_cb():
    tbnative.call_back(cb, 25)


def do_zlib():
    tbnative.zlib_compress(DATA, 2)


def do_sort():
    sorted(ITEMS, key=key_of)
    for _ in range(2):      # C calling key_of back to back: calls set up and torn down
        list(map(key_of, ITEMS))


def main():
    phases = [do_spin, do_cb, do_zlib, do_sort]
    times = {f.__name__: 0.0 for f in phases}
    print("READY", flush=True)
    end = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < end:
        for f in phases:
            t = time.perf_counter()
            f()
            times[f.__name__] += time.perf_counter() - t
    with open(sys.argv[3], "w") as out:
        json.dump(times, out)


main()
