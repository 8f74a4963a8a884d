#!/usr/bin/env python3
"""Memory over a long --all-python run with process, thread and code churn.

A churn driver keeps CONCURRENT short-lived Python processes alive (each
lives 1-4 s; while it lives it starts ~100 threads a second and compiles,
runs and drops a fresh function every ~20 ms, so code objects and their
addresses churn too). `tachyon-bpf --all-python -F HZ -d DURATION` profiles
the machine meanwhile; its RSS (VmRSS from /proc) is read every INTERVAL
seconds. Flat means: what the profiler holds grows only with what the
output must hold (distinct rows), not with time, processes or threads.

Prints one table and, with --json, writes the figures there. Figures, not
pass/fail (shared, noisy VMs).

usage: scripts/bench-memory.py [--duration S] [--freq HZ] [--concurrent N]
                               [--interval S] [--python PATH] [--json FILE]
Env: TB_BIN (default ./tachyon-bpf). Needs root.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("TB_BIN", os.path.join(REPO, "tachyon-bpf"))

# One churning process: threads come and go, functions are compiled and dropped.
CHILD = r'''
import sys, threading, time
deadline = time.monotonic() + float(sys.argv[1])
def task(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) & 0xFFFF
    return x
epoch = 0
last_thread = 0.0
while time.monotonic() < deadline:
    src = "def fn_%d(n):\n    x = 0\n    for i in range(n):\n        x += i\n    return x\n" % epoch
    ns = {}
    exec(compile(src, "gen_%d.py" % epoch, "exec"), ns)
    end = time.monotonic() + 0.02
    while time.monotonic() < end:
        ns["fn_%d" % epoch](500)
        if time.monotonic() - last_thread > 0.01:
            threading.Thread(target=task, args=(200,)).start()
            last_thread = time.monotonic()
    del ns
    epoch += 1
'''


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def default_python():
    for v in ("3.13.0", "3.12.1", "3.11.7"):
        p = os.path.join(os.environ.get("PYENV_ROOT", "/root/.pyenv"), "versions", v, "bin", "python3")
        if os.path.exists(p):
            return p
    return sys.executable


def run(args):
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(CHILD)
        child = f.name
    stats = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    prof = subprocess.Popen([BIN, "--all-python", "-F", str(args.freq), "-d", str(args.duration),
                             "-o", os.devnull, "--stats", stats],
                            stderr=subprocess.PIPE, text=True)
    kids, started, points = [], 0, []
    t0 = time.monotonic()
    next_read = t0 + 5
    try:
        while prof.poll() is None:
            kids = [k for k in kids if k.poll() is None]
            while len(kids) < args.concurrent:
                kids.append(subprocess.Popen([args.python, child, "%.1f" % random.uniform(1, 4)],
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                started += 1
            now = time.monotonic()
            if now >= next_read:
                points.append((now - t0, rss_kb(prof.pid)))
                next_read += args.interval
            time.sleep(0.05)
        err = prof.stderr.read()
    finally:
        for k in kids:
            k.kill()
        for k in kids:
            k.wait()
        os.unlink(child)
    if prof.returncode != 0:
        raise SystemExit("bench-memory: the profiler failed: " + err[-500:])
    with open(stats) as f:
        st = json.load(f)
    os.unlink(stats)
    points = [p for p in points if p[1] > 0]
    return st, points, started


def slope_kb_per_min(points):
    """Least-squares RSS growth over the second half of the run."""
    half = [p for p in points if p[0] >= points[-1][0] / 2]
    if len(half) < 2:
        return 0.0
    n = len(half)
    mx = sum(t for t, _ in half) / n
    my = sum(r for _, r in half) / n
    sxx = sum((t - mx) ** 2 for t, _ in half) or 1
    return 60 * sum((t - mx) * (r - my) for t, r in half) / sxx


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=int, default=600)
    ap.add_argument("--freq", type=int, default=499)
    ap.add_argument("--concurrent", type=int, default=6)
    ap.add_argument("--interval", type=float, default=10)
    ap.add_argument("--python", default=default_python())
    ap.add_argument("--json")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("tachyon-bpf: bench-memory: needs root (run: sudo make bench)")
    st, points, started = run(args)
    if not points:
        raise SystemExit("bench-memory: no RSS readings")
    first = next((r for t, r in points if t >= 60), points[0][1])
    out = {"duration_s": args.duration, "freq": args.freq, "processes_started": started,
           "processes_profiled": st["processes"], "samples": st["collected"],
           "lost": st["lost"], "dropped": sum(st["dropped"].values()),
           "dropped_by_reason": st["dropped"], "aggregated": st.get("aggregated", 0),
           "rss_kb_at_60s": first, "rss_kb_end": points[-1][1],
           "rss_kb_max": max(r for _, r in points), "rss_peak_kb": st["rss_peak_kb"],
           "growth_kb_per_min_second_half": slope_kb_per_min(points),
           "compactions": st["compactions"], "code_reads": st["code_reads"],
           "code_evicted": st["code_evicted"], "code_cached_end": st["code_cached"],
           "code_hit_rate": st["code_hit_rate"], "rss_series": points}
    print("%-34s %s" % ("memory soak", "%d s --all-python -F %d, %d processes started, "
                        "%d profiled" % (args.duration, args.freq, started, st["processes"])))
    print("%-34s %.1f MiB at 60 s, %.1f MiB at the end, %.1f MiB max"
          % ("profiler RSS", first / 1024, points[-1][1] / 1024, out["rss_kb_max"] / 1024))
    print("%-34s %+.1f KiB/min" % ("RSS growth, second half", out["growth_kb_per_min_second_half"]))
    print("%-34s %d samples, %d lost, %d dropped; %d compactions"
          % ("samples", st["collected"], st["lost"], out["dropped"], st["compactions"]))
    print("%-34s %s; %d counted in the kernel"
          % ("dropped, by reason", ", ".join("%s %d" % kv for kv in sorted(st["dropped"].items())),
             out["aggregated"]))
    print("%-34s %d read, %d evicted unused, %d cached at the end (hit rate %.1f%%)"
          % ("code objects", st["code_reads"], st["code_evicted"], st["code_cached"],
             100 * st["code_hit_rate"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
