"""Targets that exit: the profiler ends by itself and writes the profile."""
import signal
import time

from common import (check, fail, fmt_stacks, start_profiler, start_workload, timeout, total)
from test_all_python import wait_profiling

GRACE = 3.0     # seconds the profiler may take to notice that its targets exited


@timeout(60)
def test_exit_mid_run(python):
    w = start_workload(python, "exiter.py", 2, 60)
    prof = start_profiler(w.pid, ["-F", 499, "-d", 20, "-v"], stats=True)
    wait_profiling(prof)    # a loaded machine can take > 1 s to start
    time.sleep(1.0)
    if prof.proc.poll() is not None:
        fail("profiler exited early: %s" % prof.finish(1).where())
    w.signal(signal.SIGUSR1)            # work_phase -> final_phase (2 s) -> exit
    w.wait(15)
    t_exit = time.monotonic()
    res = prof.finish(GRACE + 15)
    lag = time.monotonic() - t_exit
    res.expect_ok()
    check(lag <= GRACE, "profiler ended %.1f s after its only target exited (limit %.0f s) %s"
          % (lag, GRACE, res.where()))
    stacks = res.stacks()
    names = set(n for s in stacks for n in s.names)
    for fn in ("work_phase", "final_phase"):
        check(fn in names, "%s missing from the profile [top: %s] %s"
              % (fn, fmt_stacks(stacks, 4), res.where()))
    final = sum(s.count for s in stacks if s.leaf.name == "final_phase")
    check(final >= 0.5 * 499 * 2 * 0.5,
          "only %d samples in final_phase (2 s busy at 499 Hz): the end of the process "
          "was lost [top: %s]" % (final, fmt_stacks(stacks, 4)))


@timeout(60)
def test_exit_all_pids(python):
    """-p A,B keeps going when A exits and ends when B exits."""
    a = start_workload(python, "exiter.py", 0.5, 60)
    b = start_workload(python, "spinner.py", 60)
    prof = start_profiler([a.pid, b.pid], ["-F", 199, "-d", 30, "-v"])
    wait_profiling(prof)
    time.sleep(1.5)
    a.signal(signal.SIGUSR1)
    a.wait(10)
    time.sleep(1.5)
    if prof.proc.poll() is not None:
        fail("profiler stopped when only the first of two targets exited: %s"
             % prof.finish(1).where())
    b.signal(signal.SIGUSR1)
    b.wait(10)
    t_exit = time.monotonic()
    res = prof.finish(GRACE + 15)
    lag = time.monotonic() - t_exit
    res.expect_ok()
    check(lag <= GRACE, "profiler ended %.1f s after the last target exited (limit %.0f s) %s"
          % (lag, GRACE, res.where()))
    stacks = res.stacks()
    names = set(n for s in stacks for n in s.names)
    for fn in ("work_phase", "final_phase", "spin_inner"):
        check(fn in names, "%s missing from the two-process profile [top: %s] %s"
              % (fn, fmt_stacks(stacks, 4), res.where()))
