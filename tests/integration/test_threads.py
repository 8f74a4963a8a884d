"""Threads: 8 busy threads in worker_0..worker_7 all appear, each on its own."""
import re

from common import check, fail, fmt_stacks, run_profiler, start_workload, timeout, total


@timeout(60)
def test_threads(python):
    w = start_workload(python, "threads8.py", 60)
    res = run_profiler(w.pid, ["-F", 499, "-d", 2], timeout=30, stats=True).expect_ok()
    stacks = res.stacks()
    n = total(stacks)
    check(n >= 200, "only %d samples in 2 s at 499 Hz %s" % (n, res.where()))
    per = {"worker_%d" % i: 0 for i in range(8)}
    errors = []
    for s in stacks:
        ws = [f.name for f in s.frames if re.match(r"^worker_\d$", f.name)]
        if len(ws) > 1:
            errors.append("stack mixes threads: %s" % s.short(4))
        if not ws:
            continue
        per[ws[0]] += s.count
        if s.leaf.name != ws[0]:
            errors.append("worker stack with leaf %r: %s" % (s.leaf.raw, s.short(4)))
        if s.root.file != "threading.py":
            errors.append("thread stack root %r, want a frame in threading.py "
                          "(Thread._bootstrap)" % s.root.raw)
        idx = s.names.index(ws[0])
        if idx == 0 or s.frames[idx - 1].name != "Thread.run":
            errors.append("%s not called from Thread.run: %s" % (ws[0], s.short(4)))
    missing = [k for k, v in sorted(per.items()) if v == 0]
    if missing:
        errors.insert(0, "threads missing from the profile: %s (counts %s)" % (missing, per))
    few = [k for k, v in per.items() if 0 < v < n / 8 / 5]
    if few:
        errors.append("threads with < 1/5 of their fair share of %d samples: %s (counts %s)"
                      % (n, few, per))
    if errors:
        fail("; ".join(sorted(set(errors), key=errors.index)[:6]) + " [top: %s] %s"
             % (fmt_stacks(stacks, 4), res.where()))
