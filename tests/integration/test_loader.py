"""A Python started through the dynamic loader (`ld-linux-x86-64.so.2
python3 app.py`, as relocated interpreters run) is named by its script in
the per-process root frame; the wall-mode summary line gives the rate of the
samples counted (on and off CPU), not of the perf events alone."""
import os
import re
import struct
import subprocess

import common
from common import python_independent
from common import WORKLOADS, Workload, check, run_profiler, spawn, start_workload, timeout
from test_all_python import by_pid, read_tagged, with_roots

SUMMARY_RE = re.compile(r"^tachyon-bpf: (\d+) samples in ([\d.]+) s \(wall mode")
RATE_RE = re.compile(r"^tachyon-bpf: collected (\d+): ([\d.]+)/s,")


def _loader(path):
    """The ELF interpreter (PT_INTERP) the executable asks for: the system's
    ld.so, or for Debian unstable's builds the one unpacked beside them."""
    with open(os.path.realpath(path), "rb") as f:
        elf = f.read()
    phoff, = struct.unpack_from("<Q", elf, 32)
    phentsize, phnum = struct.unpack_from("<HH", elf, 54)
    for i in range(phnum):
        off = phoff + i * phentsize
        ptype, = struct.unpack_from("<I", elf, off)
        if ptype == 3:                                   # PT_INTERP
            o, _, _, size = struct.unpack_from("<QQQQ", elf, off + 8)
            return elf[o:o + size].rstrip(b"\0").decode()
    return "/lib64/ld-linux-x86-64.so.2"


@timeout(60)
def test_loader_started_python_named_by_script(python):
    exe, env = python.real_executable()
    proc = spawn([_loader(exe), "--inhibit-cache", exe, "spinner.py", "30"],
                 cwd=WORKLOADS, env=dict(os.environ, **env),
                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    read_tagged(Workload(proc, {}, "spinner"), "READY", 30)
    res = run_profiler(proc.pid, ["-s", "--pids", "-F", 199, "-d", 1], timeout=30).expect_ok()
    procs = by_pid(with_roots(res))
    check(proc.pid in procs and procs[proc.pid].roots == {"spinner.py"},
          "root frames %s, want spinner.py %s"
          % ({p: sorted(v.roots) for p, v in procs.items()}, res.where()))


@timeout(60)
@python_independent
def test_wall_summary_rate(python):
    """A thread asleep 90 % of the time: the rate is its on- and off-CPU
    counts over the duration (about the sampling rate: -F 100 with the tick
    is 83.3/s), not its on-CPU share of it."""
    w = start_workload(python, "modes.py", "sleep", 60)
    res = run_profiler(w.pid, ["-m", "wall", "-F", 100, "-d", 1, "-v"], timeout=30).expect_ok()
    m = next((SUMMARY_RE.match(l) for l in res.err_lines() if SUMMARY_RE.match(l)), None)
    r = next((RATE_RE.match(l) for l in res.err_lines() if RATE_RE.match(l)), None)
    check(m is not None and r is not None, "no wall-mode summary or -v rate line %s"
          % res.where())
    n, secs, rate = int(r.group(1)), float(m.group(2)), float(r.group(2))
    check(n > 0 and abs(rate - n / secs) <= 0.05 * n / secs,
          "summary rate %.1f/s for %d samples in %.1f s %s" % (rate, n, secs, res.where()))
