"""-e: a hardware event this VM lacks falls back to cpu-clock with a warning;
a software event (page-faults) drives sampling with -c."""
import signal

from common import python_independent
from common import (check, check_stats_invariant, fmt_stacks, primary_python, run_profiler,
                    start_profiler, start_workload, timeout, total)
from test_all_python import wait_profiling


@timeout(40)
@python_independent
def test_event_cycles_fallback(python):
    w = start_workload(python, "spinner.py", 60)
    res = run_profiler(w.pid, ["-e", "cycles", "-F", 199, "-d", 2], timeout=30,
                       stats=True).expect_ok()
    warn = [l for l in res.err_lines() if "cpu-clock" in l]
    check(warn, "no warning line mentioning cpu-clock on stderr %s" % res.where())
    stacks = res.stacks()
    n = total(stacks)
    check(n >= 100, "only %d samples in 2 s at 199 Hz after the fallback %s" % (n, res.where()))
    check(any(s.leaf.name == "spin_inner" for s in stacks),
          "spin_inner missing [top: %s]" % fmt_stacks(stacks, 4))
    st = res.stats()
    check(st.get("event") == "cpu-clock", "stats event %r, expected the fallback 'cpu-clock'"
          % st.get("event"))


@timeout(40)
@python_independent
def test_page_faults_event(python):
    """-e page-faults -c 1: a sample per page fault, taken in the faulting
    thread, with the stack that faulted (faults.py: touch under a 20-deep
    chain). The summary says how the rate was asked (-c 1, not -F)."""
    w = start_workload(python, "faults.py", 20, 30)
    res = run_profiler(w.pid, ["-e", "page-faults", "-c", 1, "-d", 2], timeout=30,
                       stats=True).expect_ok()
    st = res.stats()
    check(st.get("event") == "page-faults", "stats event %r" % st.get("event"))
    check(any("page-faults, -c 1)" in l for l in res.err_lines()),
          "the summary line does not say 'page-faults, -c 1' %s" % res.where())
    stacks = res.stacks()
    n = total(stacks)
    check(n >= 5000, "only %d samples in 2 s of page faults at -c 1 %s" % (n, res.where()))
    deep = sum(s.count for s in stacks if s.leaf.name == "touch" and "f20" in s.names)
    check(deep >= 0.9 * n, "only %d of %d samples fault in touch under f20 [top: %s]"
          % (deep, n, fmt_stacks(stacks, 4)))


@timeout(40)
def test_page_faults_exact_counts():
    """A stack taken exactly once is counted once, twice twice: under
    -e page-faults -c 1 each first write to a fresh page is one sample
    (once_faults.py: stack d writes 1 + d % 3 pages). Most of these stacks
    are new when taken: their first sample travels in the stack record, the
    later ones count in the kernel's map; one lost, dropped or counted in
    both shows here. The pages of a stack are 0.5 s, then 1 s apart, so its
    samples fall in different reads of the in-kernel counts (every 0.5 s):
    a count key kept from an earlier read and counted again (hit, or freed
    and added again) must count each sample once."""
    python = primary_python()
    kinds = 40
    w = start_workload(python, "once_faults.py", kinds, 0.5)
    prof = start_profiler(w.pid, ["-e", "page-faults", "-c", 1, "-v"], stats=True)
    wait_profiling(prof)
    w.signal(signal.SIGUSR1)
    w.wait(20)
    res = prof.finish(20).expect_ok()
    st = res.stats()
    check_stats_invariant(st, res.where())
    got = {}
    for s in res.stacks():
        if s.leaf.name == "touch":
            d = s.names.count("level") - 1
            got[d] = got.get(d, 0) + s.count
    want = {d: 1 + d % 3 for d in range(1, kinds + 1)}
    bad = ["depth %d: %d samples, %d faults" % (d, got.get(d, 0), n)
           for d, n in want.items() if got.get(d, 0) != n]
    bad += ["depth %d: %d samples, no fault" % (d, n) for d, n in got.items() if d not in want]
    check(not bad, "stacks not counted as often as taken: %s %s"
          % ("; ".join(bad[:8]), res.where()))
