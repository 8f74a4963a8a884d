"""Wall mode (--mode wall): threads that never leave or re-enter a CPU during
the run, and off-CPU credit across compactions.

Every profiled thread gets about `rate` counts per second of the run, on or
off CPU, at the rate the profiler used (--stats sample_rate_hz: -F 100 with
the tick at HZ 250 is every 3rd tick, 83.3 Hz): one blocked since before the profiler started (credited from the
run's start, in the stack userspace walked) and one still blocked at the
end (credited up to the end) included.
"""
import re
import signal
import time

import common
from common import python_independent, one_build_per_version
from common import check, fmt_stacks, run_profiler, start_profiler, start_workload, timeout
from test_all_python import by_pid, wait_profiling, with_roots

HZ = 100
WAITERS = ("sleeper", "lock_waiter", "recv_waiter")
THREAD_RE = re.compile(r"^thread (\d+)( .*)?$")


def _near(n, want, what, res):
    check(abs(n - want) <= 0.05 * want,
          "%s: %d counts, want %.0f (duration x rate) within 5%% %s"
          % (what, n, want, res.where()))


def _per_thread(stacks, skip=0):
    """{(root frames before the thread root..., tid): (count, leaf names)}."""
    out = {}
    for s in stacks:
        m = THREAD_RE.match(s.names[skip])
        check(m is not None, "no thread root frame at %d: %s" % (skip, s.short()))
        key = tuple(s.names[:skip]) + (int(m.group(1)),)
        n, leaves = out.get(key, (0, set()))
        out[key] = (n + s.count, leaves | {s.leaf.name})
    return out


def _check_threads(per, nthreads, want, res):
    check(len(per) == nthreads, "%d threads in the profile, want %d: %s %s"
          % (len(per), nthreads, sorted(per), res.where()))
    for key, (n, leaves) in per.items():
        check(len(leaves) == 1 and leaves <= set(WAITERS),
              "thread %s: leaves %s, want one of %s" % (key, sorted(leaves), WAITERS))
        _near(n, want, "thread %s (%s)" % (key, "".join(leaves)), res)


@timeout(90)
@one_build_per_version
def test_wall_blocked_since_start(python):
    """Three threads blocked (time.sleep, Lock.acquire, socket.recv) since
    before attach, none waking during the run: each gets duration x rate
    counts in its own stack, with and without --threads."""
    w = start_workload(python, "blocked.py", 0, 60)
    res = run_profiler(w.pid, ["-m", "wall", "-F", HZ, "-d", 2], timeout=30,
                       stats=True).expect_ok()
    st, stacks = res.stats(), res.stacks()
    want = st["duration_s"] * st["sample_rate_hz"]
    for fn in WAITERS:
        _near(sum(s.count for s in stacks if s.leaf.name == fn), want, fn, res)
    check(st["dropped"]["missing_stack"] == 0, "missing stacks: %r" % st["dropped"])

    res = run_profiler(w.pid, ["-m", "wall", "-F", HZ, "-d", 2, "--threads"], timeout=30,
                       stats=True).expect_ok()
    st = res.stats()
    _check_threads(_per_thread(res.stacks()), 3, st["duration_s"] * st["sample_rate_hz"], res)


@timeout(90)
@one_build_per_version
def test_wall_blocked_subprocesses(python):
    """The same under -p PARENT -s with two child processes (exec'd) whose
    threads are all blocked: 3 processes x 3 threads, each duration x rate."""
    w = start_workload(python, "blocked.py", 2, 60)
    res = run_profiler(w.pid, ["-m", "wall", "-F", HZ, "-d", 2, "-s", "--threads", "--pids"],
                       timeout=30, stats=True).expect_ok()
    stacks = with_roots(res)
    procs = by_pid(stacks)
    check(set(procs) == {w.pid} | set(w.info["children"]),
          "processes %s, want %d and its children %s %s"
          % (sorted(procs), w.pid, w.info["children"], res.where()))
    per = _per_thread(stacks, skip=1)
    st = res.stats()
    _check_threads(per, 9, st["duration_s"] * st["sample_rate_hz"], res)


@timeout(120)
@python_independent
def test_wall_credit_across_compaction(python):
    """A thread that leaves the CPU once sampling is on and sleeps past the
    end of the run (10.5 s), across the 10 s compaction: its sleep is
    credited at the end in the stack it left the CPU with, which the
    compaction must not forget. Nothing is dropped; the total is the wall
    time."""
    w = start_workload(python, "modes.py", "nap", 60)
    prof = start_profiler(w.pid, ["-m", "wall", "-F", 99, "-d", 10.5, "-v"], stats=True)
    wait_profiling(prof)
    # Each wake-up credits the sleep so far to the stack the thread left
    # the CPU with (the second one: a stack the BPF side walked and that
    # has samples, so a compaction folds it) and then sleeps in it again.
    for _ in range(2):
        time.sleep(0.5)
        w.signal(signal.SIGUSR1)
    res = prof.finish(60).expect_ok()
    st, stacks = res.stats(), res.stacks()
    check(st["compactions"] >= 1, "no compaction in the run: %r" % st)
    rate = st["sample_rate_hz"]
    check(st["offcpu_final"] > 0.9 * rate * 10, "offcpu_final %d: the last sleep is not "
          "credited at the end %s" % (st["offcpu_final"], res.where()))
    check(st["dropped"]["missing_stack"] == 0,
          "%d periods dropped as missing stack (offcpu_final %d) %s"
          % (st["dropped"]["missing_stack"], st["offcpu_final"], res.where()))
    _near(common.total(stacks), st["duration_s"] * rate, "total", res)
    napping = sum(s.count for s in stacks if "napping" in s.names)
    check(napping >= 0.95 * common.total(stacks), "napping %d of %d [%s]"
          % (napping, common.total(stacks), fmt_stacks(stacks, 4)))
