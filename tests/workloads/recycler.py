"""Forks two children one after the other with the same pid (root only: it
sets kernel.ns_last_pid before the second fork).

usage: recycler.py PAUSE_PID_FILE
Prints `READY {"pid": N}` and waits for SIGUSR1. Then: child A runs
alpha_child_fn (0.3 s) and exits; child B, forked with A's pid, runs
bravo_child_fn (0.6 s). If PAUSE_PID_FILE names a pid (the profiler), that
process is stopped (SIGSTOP) from before A exits until after B is forked,
so it learns of A's exit and B's fork in one batch.
Ends with `DONE {"a": PID, "b": PID, "tries": N, "a_cpu_s": X, "b_cpu_s": Y}`.
"""
import json
import os
import signal
import sys
import time


def _burn(seconds):
    end = time.monotonic() + seconds
    acc = 0
    while time.monotonic() < end:
        for i in range(300):
            acc = (acc * 31 + i) & 0xFFFFF


def alpha_child_fn():
    _burn(0.3)


def bravo_child_fn():
    _burn(0.6)


def child(fn, rfd, wfd):
    os.close(rfd)
    cpu0 = time.process_time()
    fn()
    os.write(wfd, b"%f" % (time.process_time() - cpu0))
    os._exit(0)


def run_child(fn, want_pid=None):
    r, w = os.pipe()
    if want_pid:
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(want_pid - 1))
    pid = os.fork()
    if pid == 0:
        if want_pid and os.getpid() != want_pid:
            os._exit(3)         # lost the race for the pid: exit at once
        child(fn, r, w)
    os.close(w)
    return pid, r


def collect(pid, r):
    os.waitpid(pid, 0)
    data = os.read(r, 100)
    os.close(r)
    return float(data) if data else None


def main():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    sys.stdout.write("READY %s\n" % json.dumps({"pid": os.getpid()}))
    sys.stdout.flush()
    signal.sigwait({signal.SIGUSR1})
    pause = 0
    try:
        with open(sys.argv[1]) as f:
            pause = int(f.read().strip() or 0)
    except (IndexError, OSError, ValueError):
        pass
    a, ra = run_child(alpha_child_fn)
    time.sleep(0.1)
    if pause:
        os.kill(pause, signal.SIGSTOP)
    try:
        a_cpu = collect(a, ra)
        for tries in range(1, 101):
            b, rb = run_child(bravo_child_fn, a)
            if b == a:
                break
            collect(b, rb)
        time.sleep(0.05)
    finally:
        if pause:
            os.kill(pause, signal.SIGCONT)
    b_cpu = collect(b, rb)
    sys.stdout.write("DONE %s\n" % json.dumps({"a": a, "b": b, "tries": tries,
                                               "a_cpu_s": a_cpu, "b_cpu_s": b_cpu}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
