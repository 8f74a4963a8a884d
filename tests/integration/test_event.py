"""-e: a hardware event this VM lacks falls back to cpu-clock with a warning."""
from common import check, fmt_stacks, run_profiler, start_workload, timeout, total


@timeout(40)
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
