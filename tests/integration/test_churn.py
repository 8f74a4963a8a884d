"""Stack integrity under call churn: samples taken while frames are pushed
and popped must still be correct stacks.

Fails on: interpreter shim frames or any frame outside churn.py, <unknown>
frames, [truncated], impossible caller->callee pairs, and stacks that do not
reach <module> without being marked [partial]. Marked [partial] stacks are the
contract's way to report a stack that could not be read to the bottom; they
are tolerated up to PARTIAL_MAX of the samples (their frames must be right).
The stats counters must agree with the output.
"""
from common import check, fail, run_profiler, start_workload, timeout, total, one_build_per_version

PARTIAL_MAX = 0.01


@timeout(60)
@one_build_per_version
def test_call_churn(python):
    w = start_workload(python, "churn.py", 60)
    edges = set(tuple(e) for e in w.info["edges"])
    res = run_profiler(w.pid, ["-F", 999, "-d", 3], timeout=30, stats=True).expect_ok()
    stacks = res.stacks()
    n = total(stacks)
    check(n >= 1000, "only %d samples in 3 s at 999 Hz %s" % (n, res.where()))
    bad = {}
    marked = {"[partial]": 0, "[truncated]": 0}

    def note(kind, s, detail):
        b = bad.setdefault(kind, [0, []])
        b[0] += s.count
        if len(b[1]) < 2:
            b[1].append(detail)

    for s in stacks:
        if s.root.raw in marked:
            marked[s.root.raw] += s.count
        if s.root.raw == "[truncated]":
            note("[truncated] in a shallow stack", s, s.short(3))
        unk = [f.raw for f in s.frames if f.raw.startswith("<unknown")]
        if unk:
            note("<unknown> frames", s, "%d x %s in %s" % (len(unk), unk[0], s.short(3)))
        real = [f for f in s.frames if f.file is not None]
        foreign = [f for f in real if f.file != "churn.py"]
        if foreign:
            note("foreign/shim frames", s, "%s in %s" % (foreign[0].raw, s.short(5)))
            continue
        if real and s.root.marker is None and s.root.name != "<module>":
            note("incomplete stack not marked [partial]", s, s.short(4))
        for a, b in zip(real, real[1:]):
            if (a.name, b.name) not in edges:
                note("impossible pair", s, "%s -> %s in %s" % (a.raw, b.raw, s.short(4)))
                break
    if marked["[partial]"] > PARTIAL_MAX * n:
        bad["[partial] above %.0f%%" % (100 * PARTIAL_MAX)] = [
            marked["[partial]"], ["bare [partial] stacks: %d" % sum(
                s.count for s in stacks if len(s.frames) == 1 and s.root.raw == "[partial]")]]
    st = res.stats()
    if bad:
        fail("%d samples: " % n + "; ".join(
            "%s x%d (e.g. %s)" % (k, v[0], " | ".join(v[1])) for k, v in sorted(bad.items()))
            + " [stats partial=%s truncated=%s bad_code=%s unknown_code=%s] %s"
            % (st.get("partial"), st.get("truncated"), st.get("bad_code"),
               st.get("unknown_code"), res.where()))
    check(st.get("partial") == marked["[partial]"] and st.get("truncated") == marked["[truncated]"],
          "stats partial=%s truncated=%s but the output has %d [partial] and %d [truncated] samples"
          % (st.get("partial"), st.get("truncated"), marked["[partial]"], marked["[truncated]"]))
    check("stale_cframe" in st, "--stats lacks stale_cframe: %s" % sorted(st))
    dropped = sum(st["dropped"].values())
    check(dropped <= 0.01 * st["collected"],
          "%d of %d samples dropped (%s)" % (dropped, st["collected"], st["dropped"]))


@timeout(60)
@one_build_per_version
def test_stdlib_churn(python):
    """Fraction arithmetic: frames are pushed constantly (closures, __new__
    from C). No sample may contain garbage: no <unknown> frames, no
    [truncated] (the real stacks are < 10 deep), every unmarked stack
    reaches <module>; marked [partial] stacks at most PARTIAL_MAX."""
    w = start_workload(python, "fractions_loop.py", 60)
    res = run_profiler(w.pid, ["-F", 999, "-d", 3], timeout=30, stats=True).expect_ok()
    stacks = res.stacks()
    n = total(stacks)
    check(n >= 1000, "only %d samples in 3 s at 999 Hz %s" % (n, res.where()))
    bad = {}
    partial = 0

    def note(kind, s, detail):
        b = bad.setdefault(kind, [0, []])
        b[0] += s.count
        if len(b[1]) < 2:
            b[1].append(detail)

    for s in stacks:
        if s.root.raw == "[partial]":
            partial += s.count
        if s.root.raw == "[truncated]":
            note("[truncated]", s, "%d frames" % len(s.frames))
        unk = [f.raw for f in s.frames if f.raw.startswith("<unknown")]
        if unk:
            leafward = [f.raw for f in s.frames if f.file is not None][-2:]
            note("<unknown> frames", s, "%d x, first %s, last %s, then %s"
                 % (len(unk), unk[0], unk[-1], ";".join(leafward)))
        elif s.root.marker is None and s.root.name != "<module>":
            note("incomplete stack not marked [partial]", s, s.short(3))
        if len(s.frames) > 40 and s.root.raw != "[truncated]":
            note("implausibly deep", s, "%d frames" % len(s.frames))
    if partial > PARTIAL_MAX * n:
        bad["[partial] above %.0f%%" % (100 * PARTIAL_MAX)] = [partial, [""]]
    if bad:
        st = res.stats()
        fail("%d samples: " % n + "; ".join(
            "%s x%d (e.g. %s)" % (k, v[0], " | ".join(v[1])) for k, v in sorted(bad.items()))
            + " [stats partial=%s truncated=%s bad_code=%s unknown_code=%s] %s"
            % (st.get("partial"), st.get("truncated"), st.get("bad_code"),
               st.get("unknown_code"), res.where()))
