"""The stack walker without bpf_loop (for Linux 5.10 to 5.16: bounded loops
and tail calls), forced on this kernel with TACHYON_WALKER=tailcall (a test
knob), under the bpf_loop walker's own checks: the call graph and its CPU
shares against the workload's timing (test_callgraph), a 2000-deep recursion
read whole and a 5000-deep one [truncated] (test_recursion), and a stack cut
from its callers, [partial] (tests/workloads/cut_link.py); the last two give
exactly the stacks the bpf_loop walker gives.
"""
import contextlib
import os

import test_callgraph
import test_recursion
from common import (check, fail, fmt_stacks, kernel_hz, run_profiler, start_workload, timeout,
                    one_build_per_version)

WALKERS = {"bpf_loop": "bpf_loop", "tailcall": "tail-call"}   # knob -> --stats "walker"


@contextlib.contextmanager
def walker(name):
    """Every profiler started inside runs this walker."""
    old = os.environ.get("TACHYON_WALKER")
    os.environ["TACHYON_WALKER"] = name
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TACHYON_WALKER", None)
        else:
            os.environ["TACHYON_WALKER"] = old


def _walked_by(res, name):
    got = res.stats().get("walker")
    check(got == WALKERS[name], "--stats walker %r, TACHYON_WALKER=%s wants %r %s"
          % (got, name, WALKERS[name], res.where()))


@timeout(90)
@one_build_per_version
def test_walker_callgraph(python):
    with walker("tailcall"):
        res, truth, cpu = test_callgraph._profile_callgraph(python)
    _walked_by(res, "tailcall")
    test_callgraph._check_callgraph(res, truth, cpu, test_callgraph.FREQ, "cpu-clock", "thread")


@timeout(90)
@one_build_per_version
def test_walker_callgraph_tick(python):
    """The tick: the default event at -F 99, on 5.10 too."""
    hz = kernel_hz()
    with walker("tailcall"):
        res, truth, cpu = test_callgraph._profile_callgraph(python, ("-e", "tick", "-F", hz),
                                                            seconds=8)
    _walked_by(res, "tailcall")
    test_callgraph._check_callgraph(res, truth, cpu, hz, "tick", "tick")


@timeout(120)
@one_build_per_version
def test_walker_deep(python):
    """2002 frames (four programs of steps) whole, 5002 [truncated] at the
    same depth: test_recursion's checks, with the tail-call walker."""
    with walker("tailcall"):
        test_recursion.test_deep_recursion(python)
        test_recursion.test_recursion_truncated(python)


def _stacks(python, name, script, *args):
    """The workload's stacks, walked by `name`, and the run."""
    w = start_workload(python, script, *args)
    with walker(name):
        res = run_profiler(w.pid, ["-F", 99, "-d", 2], timeout=40, stats=True).expect_ok()
    _walked_by(res, name)
    check(w.alive(), "%s died while profiled" % script)
    return res.stacks(), res


def _same_stacks(python, script, *args):
    """Both walkers give the same stacks (one shape each time); returns it."""
    got = {}
    for name in WALKERS:
        stacks, res = _stacks(python, name, script, *args)
        check(len(stacks) == 1, "%s, %s walker: %d distinct stacks, want 1: %s %s"
              % (script, name, len(stacks), fmt_stacks(stacks, 3), res.where()))
        got[name] = (tuple(f.raw for f in stacks[0].frames), res.stats())
    (a, _), (b, _) = got["bpf_loop"], got["tailcall"]
    if a != b:
        fail("%s: bpf_loop walker %d frames %s..%s, tail-call walker %d frames %s..%s"
             % (script, len(a), a[:2], a[-2:], len(b), b[:2], b[-2:]))
    return a, got


@timeout(120)
@one_build_per_version
def test_walker_truncated_same(python):
    """5002 frames: the same [truncated] stack of the same 4096 frames."""
    stack, got = _same_stacks(python, "deep.py", 5000, 60)
    check(stack[0] == "[truncated]" and len(stack) == 1 + test_recursion.MAX_DEPTH,
          "%d frames from %r, want [truncated] and %d" % (len(stack), stack[0],
                                                          test_recursion.MAX_DEPTH))
    for name, (_, st) in got.items():
        check(st.get("truncated", 0) > 0, "%s walker: stats truncated %s"
              % (name, st.get("truncated")))


@timeout(120)
@one_build_per_version
def test_walker_partial_same(python):
    """A frame whose caller link points at unmapped memory: [partial], then
    the frames read before it, from either walker."""
    stack, got = _same_stacks(python, "cut_link.py", 60)
    names = [f.split(" (")[0] for f in stack]
    check(names == ["[partial]", "middle", "spin"], "stack %s, want [partial];middle;spin"
          % ";".join(stack))
    for name, (_, st) in got.items():
        # partial counts walks; a tick's sample may be worth several periods
        walks = st.get("written") - st.get("tick_extra")
        check(st.get("partial", 0) == walks and st.get("partial", 0) > 0,
              "%s walker: stats partial %s of %s samples written"
              % (name, st.get("partial"), walks))
