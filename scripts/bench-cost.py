#!/usr/bin/env python3
"""The whole cost of a sample, side by side with austin (make bench).

One busy single-threaded target pinned to CPU 0 runs a fixed amount of work
(a depth-30 chain of distinct functions); CPU 1 runs a SCHED_IDLE spinner
that counts loop turns, and the profiler itself. Each configuration profiles
the same work, interleaved round by round with an unprofiled run:

  target   the work's wall time over the unprofiled run's (CPU 0 is the
           target's alone: what the interrupts and the BPF walk take from it)
  other    the spinner's lost turns, as seconds of CPU 1 (the profiler's CPU
           and any interrupt of CPU 1, where no target runs)
  total    (target + other) / samples: what one sample costs the machine

with, beside it, the parts measured directly: the profiler's CPU (wait4),
the BPF program's run time (the kernel's statistics) and the target's CPU
(its own process_time). Then the same with the target asleep: the cost of
profiling a process that does nothing.

Configurations: -e tick (every tick, HZ), per-thread cpu-clock events (the
default above HZ), per-CPU cpu-clock events (--per-cpu, as --all-python),
and austin (Debian's package, fetched by scripts/fetch-debian.sh) at the
same interval.

usage: bench-cost.py [--rounds N] [--seconds S] [--json FILE]
"""
import argparse
import json
import mmap
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("TB_BIN", os.path.join(REPO, "tachyon-bpf"))
TARGET_CPU, OTHER_CPU = 0, 1

# The fixed work and the sleeping target: bench.py's chain of distinct
# functions ("work DEPTH REPS": READY, then on a line from stdin the work,
# then "WALL CPU" seconds; "sleep": READY, then nothing).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import WORKLOAD as WORK  # noqa: E402

# Counts its turns into a shared page, at the lowest priority there is:
# it gets exactly the CPU time nothing else wants.
SPINNER = r'''
import mmap, os, struct, sys
os.sched_setaffinity(0, {int(sys.argv[2])})
os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
with open(sys.argv[1], "r+b") as f:
    m = mmap.mmap(f.fileno(), 8)
n = 0
while True:
    for _ in range(10000):
        pass
    n += 1
    struct.pack_into("Q", m, 0, n)
'''


def austin_cmd():
    """austin 3.7 from Debian unstable, run through its own loader."""
    try:
        root = subprocess.run([os.path.join(REPO, "scripts", "fetch-debian.sh"), "sid",
                               "austin", "libc6"], check=True, capture_output=True,
                              text=True).stdout.strip()
    except subprocess.CalledProcessError as e:
        print("bench-cost: no austin (%s): its rows are left out" % e.stderr.strip(),
              file=sys.stderr)
        return None
    return [root + "/usr/lib64/ld-linux-x86-64.so.2", "--library-path",
            root + "/usr/lib/x86_64-linux-gnu", root + "/usr/bin/austin"]


class Spinner:
    def __init__(self, script):
        self.page = tempfile.NamedTemporaryFile()
        self.page.write(b"\0" * 8)
        self.page.flush()
        self.proc = subprocess.Popen([sys.executable, script, self.page.name, str(OTHER_CPU)])
        self.m = mmap.mmap(self.page.fileno(), 8)
        time.sleep(0.5)

    def read(self):
        return struct.unpack_from("Q", self.m, 0)[0], time.monotonic()

    def close(self):
        self.proc.kill()
        self.proc.wait()


def pinned(cmd, cpu):
    return ["taskset", "-c", str(cpu)] + cmd


def profiler_cmd(cfg, pid, stats, out, austin):
    kind, rate = cfg
    if kind == "austin":
        # -s: on-CPU samples only, as our cpu mode
        return austin + ["-s", "-i", str(int(1e6 / rate)), "-p", str(pid), "-o", out]
    cmd = [BIN, "-p", str(pid), "-F", str(rate), "-o", out, "--stats", stats]
    if kind == "tick":
        cmd += ["-e", "tick"]
    else:
        cmd += ["-e", "cpu-clock"] + (["--per-cpu"] if kind == "per-cpu" else [])
    return cmd


def start_profiler(cfg, pid, stats, out, austin):
    p = subprocess.Popen(pinned(profiler_cmd(cfg, pid, stats, out, austin), OTHER_CPU),
                         stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0 if cfg[0] == "austin" else 0.6)     # attached and warmed up
    return p


def stop_profiler(p, cfg, idle=False):
    """SIGINT, as a user's Ctrl-C. A run that profiled nothing (the idle
    target) exits 1 by design; austin exits non-zero on SIGINT."""
    if p.poll() is None:
        p.send_signal(2)
    p.wait()
    err = p.stderr.read()
    p.stderr.close()
    if p.returncode not in ((0, 1) if idle else (0,)) and cfg[0] != "austin":
        raise SystemExit("bench-cost: profiler failed (%s): %s" % (label(cfg), err))

def cpu_of(pid):
    """utime + stime of a process so far, in seconds (/proc)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def samples_of(cfg, stats, out):
    if cfg[0] == "austin":
        with open(out, errors="replace") as f:
            return sum(1 for line in f if line.startswith("P"))
    with open(stats) as f:
        st = json.load(f)
    return st["collected"], st.get("bpf_runs", 0) * st.get("bpf_ns_per_run", 0) / 1e9


class Window:
    """What CPU 1's spinner and the profiler did between start and stop."""

    def __init__(self, spinner, prof):
        self.spinner, self.prof = spinner, prof
        self.p0 = cpu_of(prof.pid) if prof else 0.0
        self.c0, self.t0 = spinner.read()

    def stop(self):
        c1, t1 = self.spinner.read()
        # The profiler's CPU while the work ran: start-up is its own figure.
        self.prof_cpu = cpu_of(self.prof.pid) - self.p0 if self.prof else 0.0
        self.turns_per_s = (c1 - self.c0) / (t1 - self.t0)
        self.seconds = t1 - self.t0


def one_run(cfg, script, reps, spinner, austin):
    """One configuration (None: unprofiled) on the busy target."""
    w = subprocess.Popen(pinned([PY, script, "work", "30", str(reps)],
                                TARGET_CPU), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    w.stdout.readline()
    with tempfile.TemporaryDirectory() as d:
        stats, out = os.path.join(d, "s.json"), os.path.join(d, "out")
        p = start_profiler(cfg, w.pid, stats, out, austin) if cfg else None
        win = Window(spinner, p)
        w.stdin.write("go\n")
        w.stdin.flush()
        wall, cpu = map(float, w.stdout.readline().split())
        win.stop()
        if p:
            stop_profiler(p, cfg)
        w.kill()
        w.wait()
        r = {"wall": wall, "cpu": cpu, "turns_per_s": win.turns_per_s,
             "window": win.seconds, "prof_cpu": win.prof_cpu, "samples": 0, "bpf_s": 0.0}
        if cfg:
            s = samples_of(cfg, stats, out)
            r["samples"], r["bpf_s"] = s if isinstance(s, tuple) else (s, 0.0)
        return r


def idle_run(cfg, script, seconds, spinner, austin):
    """Profiling a process that sleeps: the spinner's loss and the profiler's CPU."""
    w = subprocess.Popen(pinned([PY, script, "sleep", "30", "0"], TARGET_CPU),
                         stdout=subprocess.PIPE, text=True)
    w.stdout.readline()
    with tempfile.TemporaryDirectory() as d:
        stats, out = os.path.join(d, "s.json"), os.path.join(d, "out")
        p = start_profiler(cfg, w.pid, stats, out, austin) if cfg else None
        win = Window(spinner, p)
        time.sleep(seconds)
        win.stop()
        if p:
            stop_profiler(p, cfg, idle=True)
        w.kill()
        w.wait()
    return {"turns_per_s": win.turns_per_s, "prof_cpu": win.prof_cpu, "window": win.seconds}


def label(cfg):
    kind, rate = cfg
    return {"tick": "tick", "thread": "cpu-clock/thread", "per-cpu": "cpu-clock/CPU",
            "austin": "austin 3.7"}[kind] + " @ %d" % rate


def summarize(cfg, runs, base):
    b_wall = statistics.median(r["wall"] for r in base)
    b_turns = statistics.median(r["turns_per_s"] for r in base)
    rows = []
    for r in runs:
        target = r["wall"] - b_wall
        other = max(0.0, 1 - r["turns_per_s"] / b_turns) * r["window"]
        rows.append({"target_s": target, "other_s": other, "samples": r["samples"],
                     "total_us": 1e6 * (target + other) / max(r["samples"], 1),
                     "prof_us": 1e6 * r["prof_cpu"] / max(r["samples"], 1),
                     "bpf_us": 1e6 * r["bpf_s"] / max(r["samples"], 1),
                     "slowdown_pct": 100 * target / b_wall})
    med = {k: statistics.median(x[k] for x in rows) for k in rows[0]}
    med["config"] = label(cfg)
    med["rounds"] = rows
    return med


PY = None


def main():
    global PY
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0, help="the work's length")
    ap.add_argument("--json")
    ap.add_argument("--python", default="/root/.pyenv/versions/3.12.1/bin/python3")
    a = ap.parse_args()
    PY = a.python
    if os.cpu_count() < 2:
        raise SystemExit("bench-cost: needs 2 CPUs (target and spinner apart)")
    austin = austin_cmd()
    hz = int(subprocess.run(["sh", "-c", "zcat /proc/config.gz | sed -n 's/^CONFIG_HZ=//p'"],
                            capture_output=True, text=True).stdout or 0)
    rates = [hz or 250, 1000, 10000]
    cfgs = []
    for rate in rates:
        kinds = (["tick"] if rate == hz else []) + ["thread", "per-cpu"]
        kinds += ["austin"] if austin else []
        cfgs += [(k, rate) for k in kinds]
    d = tempfile.mkdtemp()
    script, spin = os.path.join(d, "work.py"), os.path.join(d, "spin.py")
    open(script, "w").write(WORK)
    open(spin, "w").write(SPINNER)
    spinner = Spinner(spin)
    # About a.seconds of work unprofiled.
    reps = 10
    r = one_run(None, script, reps, spinner, austin)
    reps = max(1, int(reps * a.seconds / r["wall"]))
    results = {c: [] for c in cfgs}
    base = []
    try:
        for rnd in range(a.rounds):
            for c in cfgs:
                base.append(one_run(None, script, reps, spinner, austin))
                results[c].append(one_run(c, script, reps, spinner, austin))
            print("bench-cost: round %d of %d done" % (rnd + 1, a.rounds), file=sys.stderr)
        idle_base = idle_run(None, script, 4, spinner, austin)
        idle = {}
        for c in cfgs:
            if c[1] in (1000,) or c[0] == "tick":
                idle[label(c)] = idle_run(c, script, 4, spinner, austin)
    finally:
        spinner.close()
    out = {"hz": hz, "reps": reps, "base_wall_s": statistics.median(r["wall"] for r in base),
           "rows": [summarize(c, results[c], base) for c in cfgs], "idle": []}
    print("\nwhole cost per sample: a busy target on CPU %d, the profiler and a SCHED_IDLE"
          " spinner on CPU %d (median of %d rounds, %.1f s of work)"
          % (TARGET_CPU, OTHER_CPU, a.rounds, out["base_wall_s"]))
    print("%-22s %8s %10s %10s %11s %9s %9s %9s" % ("config", "samples", "target ms",
                                                     "other ms", "total us/s*", "prof us",
                                                     "BPF us", "slowdown"))
    for row in out["rows"]:
        print("%-22s %8d %10.1f %10.1f %11.1f %9.2f %9.2f %8.2f%%" % (
            row["config"], row["samples"], 1e3 * row["target_s"], 1e3 * row["other_s"],
            row["total_us"], row["prof_us"], row["bpf_us"], row["slowdown_pct"]))
    print("  * (target's lost time + CPU %d's lost time) / samples; prof and BPF: the parts"
          " measured directly (profiler CPU by wait4, BPF by the kernel's run-time stats)"
          % OTHER_CPU)
    for rate in rates:
        ours = [r for r in out["rows"] if r["config"].endswith("@ %d" % rate)]
        aus = [r for r in ours if r["config"].startswith("austin")]
        for r in ours:
            # A total at or below zero is within the noise of the unprofiled
            # runs: no ratio, the directly measured parts say more.
            if aus and r is not aus[0] and r["total_us"] > 0:
                r["vs_austin"] = aus[0]["total_us"] / r["total_us"]
    print("  ratio to austin at the same rate: " + ", ".join(
        "%s %.1fx" % (r["config"], r["vs_austin"]) if "vs_austin" in r else
        "%s within noise (BPF %.2f + profiler %.2f us measured)" % (
            r["config"], r["bpf_us"], r["prof_us"])
        for r in out["rows"] if not r["config"].startswith("austin")))
    print("\nprofiling a sleeping target for 4 s: CPU %d's loss and the profiler's CPU"
          % OTHER_CPU)
    for name, r in idle.items():
        loss = max(0.0, 1 - r["turns_per_s"] / idle_base["turns_per_s"]) * r["window"]
        out["idle"].append({"config": name, "other_ms": 1e3 * loss,
                            "prof_ms": 1e3 * r["prof_cpu"]})
        print("  %-22s other CPU lost %7.1f ms, profiler CPU %7.1f ms"
              % (name, 1e3 * loss, 1e3 * r["prof_cpu"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
