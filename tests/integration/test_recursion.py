"""Deep stacks: a 2000-deep recursion is read whole; 5000 deep is [truncated]."""
import math
import time

from common import (check, fail, fmt_stacks, run_profiler, start_workload, timeout, total,
                    one_build_per_version)

MAX_DEPTH = 4096   # TB_MAX_DEPTH


def _profile_busy(w, hz):
    """2 s of the spinning workload at -F hz: the run, its stacks, their
    count, checked against the target's own CPU time (under load it gets
    less than the 2 s asked) at the rate used (a fraction of HZ)."""
    cpu0, t0 = w.cpu_seconds(), time.monotonic()
    res = run_profiler(w.pid, ["-F", hz, "-d", 2], timeout=40, stats=True).expect_ok()
    busy = (w.cpu_seconds() - cpu0) / (time.monotonic() - t0)
    stacks = res.stacks()
    n = total(stacks)
    st = res.stats()
    # The profiler's start and end are in that window too: its CPU share,
    # over the seconds sampled; less 3 standard deviations for the few
    # samples a target gets at load ~16 (12 % busy: 20 expected).
    want = st["sample_rate_hz"] * busy * st["duration_s"]
    low = max(5, 0.7 * want - 3 * math.sqrt(want))
    check(n >= low, "only %d samples in %.2f s, the target %.0f%% busy, at %.1f Hz (%.0f "
          "expected, want >= %.0f) %s" % (n, st["duration_s"], 100 * busy,
                                          st["sample_rate_hz"], want, low, res.where()))
    return res, stacks, n


@timeout(60)
@one_build_per_version
def test_deep_recursion(python):
    w = start_workload(python, "deep.py", 2000, 60)
    info = w.info
    res, stacks, n = _profile_busy(w, 99)
    bad = []
    for s in stacks:
        names = s.names
        rec = [f for f in s.frames if f.name == "recurse"]
        problems = []
        if s.root.name != "<module>":
            problems.append("root %r" % s.root.raw)
        if "[truncated]" in names or "[partial]" in names:
            problems.append("marker %s" % [x for x in names if x.startswith("[")])
        if len(rec) < info["frames"] - 1:
            problems.append("%d recurse frames (want %d)" % (len(rec), info["frames"]))
        expected = ["<module>"] + ["recurse"] * info["frames"] + ["spin"]
        if not problems and names != expected:
            problems.append("shape %s != <module>;recurse x%d;spin"
                            % (s.short(3), info["frames"]))
        if not problems:
            lines = [f.line for f in s.frames]
            want = ([info["root_line"]] + [info["recurse_line"]] * (info["frames"] - 1)
                    + [info["bottom_line"], info["spin_line"]])
            if lines != want:
                diff = [(i, s.frames[i].raw, want[i]) for i in range(len(want))
                        if lines[i] != want[i]][:4]
                problems.append("line numbers differ (index, frame, expected line): %s" % diff)
        if problems:
            bad.append("%d samples: %s" % (s.count, ", ".join(problems)))
    if bad:
        fail("%d of %d samples lack the whole 2000-deep chain: %s %s"
             % (sum(int(b.split()[0]) for b in bad), n, "; ".join(bad[:4]), res.where()))
    st = res.stats()
    check(st.get("truncated", 0) == 0 and st.get("partial", 0) == 0,
          "stats report truncated=%s partial=%s for a 2002-frame stack"
          % (st.get("truncated"), st.get("partial")))


@timeout(60)
@one_build_per_version
def test_recursion_truncated(python):
    w = start_workload(python, "deep.py", 5000, 60)
    res, stacks, n = _profile_busy(w, 49)
    bad = []
    for s in stacks:
        real = [f for f in s.frames if f.marker is None]
        problems = []
        if s.root.raw != "[truncated]":
            problems.append("root %r, want [truncated]" % s.root.raw)
        if s.leaf.name != "spin":
            problems.append("leaf %r, want spin" % s.leaf.raw)
        if "<module>" in s.names:
            problems.append("<module> present although 5002 frames > %d" % MAX_DEPTH)
        if not (1024 <= len(real) <= MAX_DEPTH):
            problems.append("%d frames kept (want 1024..%d)" % (len(real), MAX_DEPTH))
        if any(f.name != "recurse" for f in real[:-1]):
            problems.append("non-recurse frame in the chain")
        if problems:
            bad.append("%d samples: %s" % (s.count, ", ".join(problems)))
    if bad:
        fail("5002-frame stacks not reported as [truncated]: %s [top: %s] %s"
             % ("; ".join(bad[:4]), fmt_stacks(stacks, 3), res.where()))
    st = res.stats()
    check(st.get("truncated", 0) > 0, "stats truncated = %s, expected > 0" % st.get("truncated"))
