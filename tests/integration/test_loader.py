"""A Python started through the dynamic loader (`ld-linux-x86-64.so.2
python3 app.py`, as relocated interpreters run) is named by its script in
the per-process root frame; the wall-mode summary line gives the rate of the
samples counted (on and off CPU), not of the perf events alone."""
import re
import subprocess

import common
from common import WORKLOADS, Workload, check, run_profiler, spawn, start_workload, timeout
from test_all_python import by_pid, read_tagged, with_roots

LOADER = "/lib64/ld-linux-x86-64.so.2"
SUMMARY_RE = re.compile(r"^tachyon-bpf: (\d+) samples in ([\d.]+) s \(wall mode.*\): ([\d.]+)/s,")


@timeout(60)
def test_loader_started_python_named_by_script(python):
    proc = spawn([LOADER, "--inhibit-cache", python.path, "spinner.py", "30"], cwd=WORKLOADS,
                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    read_tagged(Workload(proc, {}, "spinner"), "READY", 30)
    res = run_profiler(proc.pid, ["-s", "--pids", "-F", 199, "-d", 1], timeout=30).expect_ok()
    procs = by_pid(with_roots(res))
    check(proc.pid in procs and procs[proc.pid].roots == {"spinner.py"},
          "root frames %s, want spinner.py %s"
          % ({p: sorted(v.roots) for p, v in procs.items()}, res.where()))


@timeout(60)
def test_wall_summary_rate(python):
    """A thread asleep 90 % of the time: the rate is its on- and off-CPU
    counts over the duration (about 100/s at -F 100), not its on-CPU 10/s."""
    w = start_workload(python, "modes.py", "sleep", 60)
    res = run_profiler(w.pid, ["-m", "wall", "-F", 100, "-d", 1], timeout=30).expect_ok()
    m = next((SUMMARY_RE.match(l) for l in res.err_lines() if SUMMARY_RE.match(l)), None)
    check(m is not None, "no wall-mode summary line %s" % res.where())
    n, secs, rate = int(m.group(1)), float(m.group(2)), float(m.group(3))
    check(n > 0 and abs(rate - n / secs) <= 0.05 * n / secs,
          "summary rate %.1f/s for %d samples in %.1f s %s" % (rate, n, secs, res.where()))
