"""Exceptions in flight in known proportions, instrumented (--mode exception).

usage: exceptions.py TRUTH_JSON [--unit N] [--max-seconds S]

One thread runs a fixed cycle of four phases:
    in_handler    raises ValueError and spends the except block in
                  handler_work(): being handled, <ValueError>
    in_generator  raises KeyError and, in the except block, drains a
                  generator that does the work: the generator's own
                  exception item is empty, the handler's below it is in
                  force, <KeyError>
    never_raises  plain work, no exception anywhere near
    raise_loop    raises and catches ZeroDivisionError in a tight loop:
                  <ZeroDivisionError> while it is raised and caught, nothing
                  in between
It measures the CPU time of each phase with time.thread_time_ns (inline,
no extra frames) and, once stopped (SIGUSR1 or --max-seconds), writes to
TRUTH_JSON {"share": {phase: phase CPU time / loop CPU time}}.
Prints `READY {"pid": N}` on stdout after the first (warm-up) cycle.
"""
import json
import os
import signal
import sys
import time

tt = time.thread_time_ns
T = {"in_handler": 0, "in_generator": 0, "never_raises": 0, "raise_loop": 0}
STOP = []


def spin(n):
    acc = 1
    for i in range(n):
        acc = (acc * 1103515245 + i) & 0xFFFFFFF
    return acc


def handler_work(n):
    return spin(n)


def generator_work(n):
    for k in range(10):
        yield spin(n // 10)


def never_raises(n):
    return spin(n)


def divide(x):
    return 1 / x


def raise_loop(n):
    caught = 0
    for i in range(n):
        try:
            divide(0)
        except ZeroDivisionError:
            caught += 1
    return caught


def cycle(unit):
    t0 = tt()
    try:
        raise ValueError(unit)
    except ValueError:
        handler_work(30 * unit)
    t1 = tt()
    try:
        {}[unit]
    except KeyError:
        for _ in generator_work(20 * unit):
            pass
    t2 = tt()
    never_raises(35 * unit)
    t3 = tt()
    raise_loop(unit)
    t4 = tt()
    T["in_handler"] += t1 - t0
    T["in_generator"] += t2 - t1
    T["never_raises"] += t3 - t2
    T["raise_loop"] += t4 - t3


def main():
    truth_path = sys.argv[1]
    unit = int(sys.argv[sys.argv.index("--unit") + 1]) if "--unit" in sys.argv else 2000
    max_s = float(sys.argv[sys.argv.index("--max-seconds") + 1]) \
        if "--max-seconds" in sys.argv else 60.0
    signal.signal(signal.SIGUSR1, lambda *a: STOP.append(1))
    cycle(unit)
    for k in T:
        T[k] = 0
    sys.stdout.write('READY {"pid": %d}\n' % os.getpid())
    sys.stdout.flush()
    deadline = time.monotonic() + max_s
    while not STOP and time.monotonic() < deadline:
        cycle(unit)
    total = sum(T.values()) or 1
    with open(truth_path, "w") as f:
        json.dump({"share": {k: v / total for k, v in T.items()}}, f)


if __name__ == "__main__":
    main()
