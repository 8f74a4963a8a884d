"""Known call graph: structure, line numbers and CPU shares against ground truth.

Workload: tests/workloads/callgraph.py (see its docstring). It is profiled
with -F 999 -d 4 while it runs (~6 s in all); then it is told to stop and
writes the instrumented ground truth. The same checks hold for each way of
driving samples: per-thread cpu-clock events (the default above HZ), the
scheduler tick (-e tick, the default up to HZ) and per-CPU events (--per-cpu).
"""
import json
import os
import signal
import time

from common import (WORKLOADS, art_path, check, check_stats_invariant, fail, kernel_hz, pythons,
                    start_workload, run_profiler, timeout, total, one_build_per_version)
from common import old_python_too

FREQ = 999
SECONDS = 4
SHARE_TOL = 0.02       # absolute, i.e. 2 percentage points
HOT_LINE_MIN = 0.97    # fraction of a leaf's samples that must be on its HOT line


def _profile_callgraph(python, args=("-F", FREQ), seconds=SECONDS):
    truth_path = art_path("callgraph.truth.json")
    w = start_workload(python, "callgraph.py", truth_path, "--max-seconds", 40,
                       cwd=WORKLOADS)
    time.sleep(0.5)                      # a few cycles past warm-up
    cpu0 = w.cpu_seconds()
    res = run_profiler(w.pid, list(args) + ["-d", seconds], timeout=seconds + 30, stats=True)
    cpu1 = w.cpu_seconds()
    time.sleep(0.5)                      # ~6 s in all
    w.signal(signal.SIGUSR1)
    w.wait(20)
    check(w.proc.returncode == 0, "callgraph workload exited %s" % w.proc.returncode)
    with open(truth_path) as f:
        truth = json.load(f)
    return res, truth, (cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None)


@old_python_too
@timeout(90)
def test_callgraph(python):
    """Per-thread cpu-clock events: the default for -p above the tick rate."""
    res, truth, cpu = _profile_callgraph(python)
    _check_callgraph(res, truth, cpu, FREQ, "cpu-clock", "thread")


@timeout(90)
@one_build_per_version
def test_callgraph_tick(python):
    """The scheduler tick at HZ (every tick): same structure and shares.
    8 s at 250 Hz gives ~2000 samples, half the -F 999 run's, for the same
    2-point share tolerance."""
    hz = kernel_hz()
    res, truth, cpu = _profile_callgraph(python, ("-e", "tick", "-F", hz), seconds=8)
    _check_callgraph(res, truth, cpu, hz, "tick", "tick")


@timeout(90)
def test_callgraph_per_cpu():
    """--per-cpu: one cpu-clock event per CPU, as before per-thread events
    (the same code path as --all-python); on the first interpreter."""
    res, truth, cpu = _profile_callgraph(pythons()[0], ("-F", FREQ, "--per-cpu"))
    _check_callgraph(res, truth, cpu, FREQ, "cpu-clock", "cpu")


def _check_callgraph(res, truth, cpu, freq, event, scope):
    res.expect_ok()
    stacks = res.stacks()
    n = total(stacks)
    want = 0.25 * freq * st_seconds(res)   # a quarter of a CPU at least
    check(n >= want, "only %d samples at %d Hz (%s) for a busy thread %s"
          % (n, freq, event, res.where()))
    errors = []

    # (a) every adjacent pair is an edge of the real call graph; root is <module>;
    # every frame is in callgraph.py (cwd-relative); caller lines are call sites.
    edges = set(tuple(e) for e in truth["edges"])
    call_lines = truth["call_lines"]
    bad_pairs, bad_roots, bad_files, bad_call_lines = {}, {}, {}, {}
    for s in stacks:
        if s.root.name != "<module>":
            bad_roots[s.root.raw] = bad_roots.get(s.root.raw, 0) + s.count
        for f in s.frames:
            if f.file != truth["file"]:
                bad_files[f.raw] = bad_files.get(f.raw, 0) + s.count
        for a, b in zip(s.frames, s.frames[1:]):
            if (a.name, b.name) not in edges:
                k = "%s -> %s" % (a.raw, b.raw)
                bad_pairs[k] = bad_pairs.get(k, 0) + s.count
            elif a.line not in call_lines["%s->%s" % (a.name, b.name)]:
                k = "%s -> %s (call sites %s)" % (a.raw, b.name,
                                                  call_lines["%s->%s" % (a.name, b.name)])
                bad_call_lines[k] = bad_call_lines.get(k, 0) + s.count
    if bad_roots:
        errors.append("(a) %d samples with a root other than <module>: %s"
                      % (sum(bad_roots.values()), _top(bad_roots)))
    if bad_pairs:
        errors.append("(a) %d samples with impossible caller->callee pairs: %s"
                      % (sum(bad_pairs.values()), _top(bad_pairs)))
    if bad_files:
        errors.append("(a) %d samples with frames not in %r: %s"
                      % (sum(bad_files.values()), truth["file"], _top(bad_files)))
    if bad_call_lines:
        errors.append("(b) %d samples whose caller line is not the call site: %s"
                      % (sum(bad_call_lines.values()), _top(bad_call_lines)))

    # (b) the leaf line of each hot leaf is its HOT line; (c) shares.
    leaf_counts = {}
    leaf_lines = {}
    for s in stacks:
        leaf_counts[s.leaf.name] = leaf_counts.get(s.leaf.name, 0) + s.count
        ll = leaf_lines.setdefault(s.leaf.name, {})
        ll[s.leaf.line] = ll.get(s.leaf.line, 0) + s.count
    share_report = []
    for leaf, want in sorted(truth["leaf_share"].items(), key=lambda kv: -kv[1]):
        got = leaf_counts.get(leaf, 0) / n
        share_report.append("%s %.1f%% (truth %.1f%%)" % (leaf, 100 * got, 100 * want))
        if abs(got - want) > SHARE_TOL:
            errors.append("(c) %s has %.2f%% of samples, instrumented %.2f%% (tolerance %d pp)"
                          % (leaf, 100 * got, 100 * want, int(SHARE_TOL * 100)))
        lines = leaf_lines.get(leaf, {})
        hot = truth["hot_lines"][leaf]
        on_hot = lines.get(hot, 0)
        if lines and (max(lines, key=lines.get) != hot
                      or on_hot < HOT_LINE_MIN * sum(lines.values())):
            errors.append("(b) %s: leaf lines %s, HOT line is %d"
                          % (leaf, dict(sorted(lines.items(), key=lambda kv: -kv[1])[:6]), hot))

    # (d) stats invariant, no lost samples, the profile holds every written sample.
    st = res.stats()
    try:
        check_stats_invariant(st)
    except AssertionError as e:
        errors.append("(d) %s" % e)
    if st.get("lost", 0) != 0:
        errors.append("(d) lost = %s, expected 0" % st.get("lost"))
    if st.get("written") != n:
        errors.append("(d) stats written=%s but the profile holds %d samples"
                      % (st.get("written"), n))
    for k in ("partial", "truncated", "bad_code", "unknown_code"):
        if st.get(k):
            errors.append("(d) stats %s = %s for a plain single-threaded workload" % (k, st[k]))
    if st.get("event") != event or st.get("scope") != scope:
        errors.append("(d) stats event %r scope %r, expected %r %r"
                      % (st.get("event"), st.get("scope"), event, scope))

    # (e) sample rate: a thread that was on-CPU for C seconds while sampling at
    # F Hz yields ~F*C samples. The profiler's start-up (before sampling) is
    # excluded by bounding the on-CPU time inside the sampling window.
    if cpu is not None and st.get("duration_s"):
        window_cpu_min = max(0.0, cpu - max(0.0, res.elapsed - st["duration_s"]))
        lo, hi = 0.7 * freq * window_cpu_min, 1.15 * freq * cpu + 20
        if not (lo <= st.get("collected", 0) <= hi):
            errors.append("(e) collected %s samples; expected %.0f..%.0f for %.2f s of target "
                          "CPU at %d Hz (duration_s %.2f, profiler wall %.2f s)"
                          % (st.get("collected"), lo, hi, cpu, freq, st["duration_s"],
                             res.elapsed))
    if errors:
        fail("; ".join(errors) + " [shares: %s; %d samples] %s"
             % (", ".join(share_report), n, res.where()))


def st_seconds(res):
    return res.stats().get("duration_s") or SECONDS


def _top(d, k=4):
    return "; ".join("%s x%d" % (key, v) for key, v in
                     sorted(d.items(), key=lambda kv: -kv[1])[:k])
