#!/usr/bin/env python3
"""--all-python at scale: N Python processes (half busy, half idle) profiled
with `tachyon-bpf --all-python -F 99 -d 20`; prints one table and exits 0.

Figures:
  - profiler CPU %: user+sys of the profiler process (getrusage of the
    child, so everything it did: startup scan, BPF load, symbolization,
    output) over its wall time; and the kernel-side BPF time (the kernel's
    own run-time statistics: run count x ns per run) as % of one CPU.
  - samples per busy process: mean, min, max over the busy processes, and
    the mean ratio to what their CPU time is worth at -F (their utime+stime
    over the run, from /proc, times the frequency; 1.0 = none missed).
  - setup latency of a process started mid-run, two ways, for PROBES probes
    started one after the other while the N processes run:
      registered: spawn -> the profiler's `debug: pid N: latency.py, Python
        X.Y` line (-v) arrives on its stderr pipe. That line is printed right
        after the pid's layout is written to the BPF map, so from then on
        the process is sampled. Time base: CLOCK_MONOTONIC on both sides.
        It includes the probe's own time to map libpython (ld.so) and the
        profiler's retry schedule for a new exec (attempts 2, 12, 42, 142,
        442, 1442 ms after it; then the 2 s rescans of --all-python).
      first sample: tests/workloads/latency.py spins from the moment its
        script starts in 10 ms slices named after their start (ms since the
        spawn); the earliest slice with a sample bounds the time to the first
        sample from above. It includes the interpreter's own startup and the
        probe's share of the 2 CPUs among N/2 busy processes (the probe runs
        at nice -10 to get on a CPU), so it is an upper bound only.
  The profiler itself runs at normal priority among the busy processes, as
  it would on a loaded machine: its wake-up delays are part of the figures
  (--prof-nice -10 shows them without most of that).

usage: scripts/bench-all-python.py [--procs N] [--duration S] [--freq HZ]
                                   [--python PATH] [--probes K] [--prof-nice N]
Env: TB_BIN (default ./tachyon-bpf), PYENV_ROOT. Needs root.
Run by hand or by `make bench`; figures, not pass/fail (shared, noisy VMs).
"""
import argparse
import json
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("TB_BIN", os.path.join(REPO, "tachyon-bpf"))
PYENV = os.environ.get("PYENV_ROOT", "/root/.pyenv")
LATENCY = os.path.join(REPO, "tests", "workloads", "latency.py")

WORKER = r'''
import os, sys, time
def busy_fn():
    acc = 0
    while True:
        for i in range(1000):
            acc = (acc * 31 + i) & 0xFFFFF
def idle_fn():
    while True:
        time.sleep(3600)
sys.stdout.write("READY\n")
sys.stdout.flush()
sys.stdout.close()
busy_fn() if sys.argv[1] == "busy" else idle_fn()
'''

ROOT_RE = re.compile(r"^(.*?) \[(\d+)\];")


def cpu_s(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


def default_python():
    p = os.path.join(PYENV, "versions", "3.13.0", "bin", "python3")
    return p if os.path.exists(p) else sys.executable


class LineReader:
    """Non-blocking line reader over a pipe, timestamping each line."""

    def __init__(self, f):
        self.fd = f.fileno()
        os.set_blocking(self.fd, False)
        self.buf = b""
        self.lines = []          # (monotonic time, str)
        self.eof = False

    def poll(self, timeout):
        if self.eof:
            return
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return
        try:
            chunk = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        now = time.monotonic()
        if not chunk:
            self.eof = True
            return
        self.buf += chunk
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            self.lines.append((now, line.decode("utf-8", "replace")))

    def wait_for(self, pattern, timeout):
        """Time of the first line matching pattern (regex), or None."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for t, l in self.lines[seen:]:
                if rx.search(l):
                    return t
            seen = len(self.lines)
            left = deadline - time.monotonic()
            if left <= 0 or self.eof:
                return None
            self.poll(min(left, 0.05))


def start_workers(py, n, tmp):
    script = os.path.join(tmp, "allpy_worker.py")
    with open(script, "w") as f:
        f.write(WORKER)
    procs = []
    for i in range(n):
        kind = "busy" if i % 2 == 0 else "idle"
        p = subprocess.Popen([py, script, kind], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        procs.append((kind, p))
    for kind, p in procs:
        if p.stdout.readline().strip() != b"READY":
            raise SystemExit("bench-all-python: a %s worker did not start" % kind)
        p.stdout.close()
    return procs


def run_probe(py, prof_err, spin=0.3):
    """Start latency.py; return (registered_ms, first_slice_ms, pid, script_start_ms)."""
    t0 = time.monotonic()
    env = dict(os.environ, TB_T0=repr(t0), PYTHONUNBUFFERED="1")
    # nice -10 in the child, not through nice(1): a second exec would add
    # the profiler's retry delay for processes that exec twice.
    p = subprocess.Popen([py, LATENCY, str(spin)], env=env, preexec_fn=lambda: os.nice(-10),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    t_reg = prof_err.wait_for(r"debug: pid %d: latency\.py, Python" % p.pid, 10)
    out = p.communicate(timeout=30)[0].decode()
    res = json.loads(out.split("RESULT ", 1)[1]) if "RESULT " in out else {}
    reg_ms = (t_reg - t0) * 1000 if t_reg else None
    return reg_ms, p.pid, res.get("script_start_ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--procs", type=int, default=100)
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--freq", type=int, default=99)
    ap.add_argument("--python", default=default_python())
    ap.add_argument("--probes", type=int, default=5)
    ap.add_argument("--prof-nice", type=int, default=0,
                    help="nice value for the profiler (default 0, like the busy processes)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench-all-python: run as root (loads BPF programs)")
    if not os.access(BIN, os.X_OK):
        raise SystemExit("bench-all-python: %s not built (run make)" % BIN)

    tmp = tempfile.mkdtemp(prefix="tb-bench-allpy-")
    workers = []
    prof = None
    try:
        t = time.monotonic()
        workers = start_workers(a.python, a.procs, tmp)
        t_start_workers = time.monotonic() - t
        busy = [p for k, p in workers if k == "busy"]
        stats_path = os.path.join(tmp, "stats.json")
        out_path = os.path.join(tmp, "out.folded")
        with open(out_path, "wb") as outf:
            t_prof = time.monotonic()
            prof = subprocess.Popen([BIN, "--all-python", "-F", str(a.freq), "-d",
                                     str(a.duration), "--pids", "-v", "--stats", stats_path],
                                    stdin=subprocess.DEVNULL, stdout=outf,
                                    stderr=subprocess.PIPE,
                                    preexec_fn=lambda: os.nice(a.prof_nice))
        err = LineReader(prof.stderr)
        t_ready = err.wait_for(r"debug: profiling \d+ process", 120)
        if t_ready is None:
            raise SystemExit("bench-all-python: the profiler did not start: %s"
                             % "\n".join(l for _, l in err.lines[-5:]))
        startup_s = t_ready - t_prof
        cpu0 = {p.pid: cpu_s(p.pid) for p in busy}     # from when sampling is on
        # Probes spread over the middle of the run.
        probes = []
        gap = a.duration * 0.6 / max(1, a.probes)
        time.sleep(a.duration * 0.2)
        for _ in range(a.probes):
            t_next = time.monotonic() + gap
            probes.append(run_probe(a.python, err))
            while time.monotonic() < t_next:
                err.poll(0.05)
        while True:     # wait4, not Popen.wait: we want its rusage
            pid, status, ru = os.wait4(prof.pid, os.WNOHANG)
            if pid:
                prof.returncode = os.waitstatus_to_exitcode(status)
                break
            err.poll(0.1)
        t_end = time.monotonic()
        err.poll(0)
        cpu1 = {p.pid: cpu_s(p.pid) for p in busy}
        wall = t_end - t_prof
        if prof.returncode != 0 or not os.path.exists(stats_path):
            tail = [l for _, l in err.lines if "debug:" not in l][-5:]
            how = ("killed by signal %d" % -prof.returncode if prof.returncode < 0
                   else "exit %d" % prof.returncode)
            print("bench-all-python: the profiler failed (%s) after %.1f s:\n  %s"
                  % (how, wall, "\n  ".join(tail) or "(no message)"), file=sys.stderr)
            return 1
        prof_cpu = ru.ru_utime + ru.ru_stime
        with open(stats_path) as f:
            st = json.load(f)

        # Samples per busy process (their root frames carry the pid).
        per_pid = {}
        first_slice = {}
        with open(out_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = ROOT_RE.match(line)
                if not m:
                    continue
                pid = int(m.group(2))
                n = int(line.rsplit(" ", 1)[1])
                per_pid[pid] = per_pid.get(pid, 0) + n
                leaf = line.rsplit(" ", 1)[0].rsplit(";", 1)[-1]
                ms = re.match(r"at_(\d+)ms ", leaf)
                if ms:
                    v = int(ms.group(1))
                    first_slice[pid] = min(first_slice.get(pid, v), v)
        counts = [per_pid.get(p.pid, 0) for p in busy]
        ratios = []
        for p in busy:
            if cpu0[p.pid] is not None and cpu1[p.pid] is not None:
                worth = (cpu1[p.pid] - cpu0[p.pid]) * a.freq
                if worth > 0:
                    ratios.append(per_pid.get(p.pid, 0) / worth)
        idle_sampled = sum(1 for k, p in workers if k == "idle" and per_pid.get(p.pid))
        reg = [r for r, _, _ in probes if r is not None]
        first = [first_slice[pid] for _, pid, _ in probes if pid in first_slice]
        starts = [s for _, _, s in probes if s is not None]
        bpf_cpu = st.get("bpf_runs", 0) * st.get("bpf_ns_per_run", 0) / 1e9

        def ms(v):
            return "%.0f ms" % v if v is not None else "n/a"

        rows = [
            ("processes", "%d Python (%d busy, %d idle), %s; started in %.1f s"
             % (a.procs, len(busy), a.procs - len(busy), a.python, t_start_workers)),
            ("run", "--all-python -F %d -d %g (nice %d): %.1f s wall, %d processes seen, "
                    "startup (scan + BPF load) %.2f s" % (a.freq, a.duration, a.prof_nice, wall,
                                                          st.get("processes", 0), startup_s)),
            ("profiler CPU", "%.2f %% of one CPU (user %.2f s + sys %.2f s over %.1f s)"
             % (100 * prof_cpu / wall, ru.ru_utime, ru.ru_stime, wall)),
            ("BPF CPU (kernel stats)", "%.2f %% of one CPU (%d runs x %.0f ns)"
             % (100 * bpf_cpu / wall, st.get("bpf_runs", 0), st.get("bpf_ns_per_run", 0))),
            ("samples", "collected %d, written %d, lost %d, dropped %d"
             % (st["collected"], st["written"], st["lost"], sum(st["dropped"].values()))),
            ("samples per busy process", "mean %.1f, min %d, max %d; %.0f%% of their CPU "
             "time's worth (mean)" % (statistics.mean(counts), min(counts), max(counts),
                                      100 * statistics.mean(ratios) if ratios else 0)),
            ("idle processes sampled", "%d of %d" % (idle_sampled, a.procs - len(busy))),
            ("setup latency: registered", "median %s, max %s (%d probes)"
             % (ms(statistics.median(reg)) if reg else "n/a", ms(max(reg)) if reg else "n/a",
                len(reg))),
            ("setup latency: 1st sample", "median %s, max %s after spawn (script started "
             "at median %s: interpreter startup)" % (
                 ms(statistics.median(first)) if first else "n/a",
                 ms(max(first)) if first else "n/a",
                 ms(statistics.median(starts)) if starts else "n/a")),
        ]
        w = max(len(k) for k, _ in rows)
        print("tachyon-bpf --all-python benchmark")
        for k, v in rows:
            print("  %-*s  %s" % (w, k, v))
        if prof.returncode != 0:
            print("  (profiler exit status %d)" % prof.returncode)
    finally:
        for _, p in workers:
            if p.poll() is None:
                p.kill()
        for _, p in workers:
            try:
                p.wait(timeout=5)
            except Exception:
                pass
        if prof is not None and prof.poll() is None:
            prof.kill()
            prof.wait()
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
    sys.exit(main())
