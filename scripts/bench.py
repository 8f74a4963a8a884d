#!/usr/bin/env python3
"""make bench: the performance figures of tachyon-bpf, measured side by side
in one run on this machine. Prints one table per figure and writes them all
to bench.json, so runs can be compared.

  - BPF cost per sample for every installed interpreter at stack depths 10,
    30 and 100: the kernel's own run-time statistics (bpf_stats_enabled) with
    every CPU running the target, so nearly every run is a full walk; and the
    program's self-timing (bpf_ktime_get_ns around the walk); and at depth
    30 both stack walkers side by side on this kernel: bpf_loop's and the one
    of bounded loops and tail calls that serves 5.10 to 5.16;
  - the target's slowdown at 99 Hz, 1 kHz and 10 kHz: the same fixed work
    run profiled and unprofiled, interleaved, median of several rounds, with
    the floor the timer interrupts alone cost on this machine;
  - profiler CPU time (user + sys) per sample after warm-up, lost %, the
    code-object cache hit rate and the profiler's peak RSS; its CPU use
    while the target idles;
  - --timeline (every sample a timed ring-buffer record) next to counting
    in the kernel: BPF ns per sample, and what is lost at 10 kHz;
  - throughput: every CPU running the target at -F 100000/CPUs (>= 100k
    samples per second in total), capped at the safe 20 kHz per CPU; lost %;
  - the whole cost of a sample (target, other CPU, profiler, BPF) for the
    tick, per-thread and per-CPU events and austin, side by side
    (scripts/bench-cost.py; TB_BENCH_COST=0 skips);
  - memory over a long --all-python run with process, thread and code churn
    (scripts/bench-memory.py; TB_BENCH_SOAK_S seconds, default 600, 0 skips);
  - BPF cost per sample with and without --async-aware at depth 30 on
    Debian's real 3.14 and 3.15 (scripts/real-pythons.sh), the running task
    three tasks deep (TB_BENCH_ASYNC=0 skips);
  - BPF cost per sample at depth 30 with the caches and TLB evicted between
    samples, and with the code objects scattered over pages as well: the
    cold-memory share of the real application's figure;
  - BPF cost per sample on a real application: a Django 3.2 site under
    gunicorn (scripts/bench-app/, Debian's python3-django and gunicorn), two
    forked sync workers profiled with -p MASTER -s while HTTP clients load
    them, for every interpreter that can run it: ~40-50 frames, hundreds of
    distinct stacks, the caches cold between samples.

Figures, not pass/fail: these machines are shared and noisy.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("TB_BIN", os.path.join(REPO, "tachyon-bpf"))
PYENV = os.environ.get("PYENV_ROOT", "/root/.pyenv")
ROUNDS = int(os.environ.get("TB_BENCH_ROUNDS", "5"))
SOAK_S = int(os.environ.get("TB_BENCH_SOAK_S", "600"))
NCPUS = os.cpu_count() or 1
DEPTHS = (10, 30, 100)
TARGET_NS = {30: 2000, 100: 5000}
SAFE_HZ = 20000     # TB_SAFE_CLOCK_HZ: above it the profiler wants --unsafe-rate
FAULTS = os.path.join(REPO, "tests", "workloads", "faults.py")
APP_DIR = os.path.join(REPO, "scripts", "bench-app")
DIST_PACKAGES = "/usr/lib/python3/dist-packages"    # Debian's python3-django, gunicorn

# Call down a chain of distinct functions (one code object per level, as a
# real stack has, so no per-walk cache can make a deep stack look cheap),
# then spin, or run a fixed amount of work.
WORKLOAD = r'''
import sys, time
def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x
LEVELS = {"spin": spin}
SCATTER, PAD = 0, []
def level(d):
    if d <= 1:
        return spin
    if d not in LEVELS:
        src = "def f%d(n):\n    return callee(n)\n" % d
        ns = {"callee": level(d - 1)}
        exec(compile(src, "<level%d>" % d, "exec"), ns)
        LEVELS[d] = ns["f%d" % d]
        if SCATTER:     # objects of the code object's size after it, kept
            co = LEVELS[d].__code__
            PAD.append([bytes(sys.getsizeof(co) - 33) for _ in range(SCATTER)])
    return LEVELS[d]
def down(d, n):
    return level(d)(n)
def evict(n):
    # Touch one byte per 4 KiB page plus one cache line of BUF (the next
    # line each time, so every cache set is hit): between two samples the
    # leaf pushes the profiler's and the chain's lines and TLB entries out.
    b, x = BUF, 0
    for i in range(0, len(b), 4160):
        x += b[i]
    return x
mode, depth, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.setrecursionlimit(10000)
if mode == "scatter":                    # and each code object on pages of its own,
    SCATTER, mode = 64, "evict"          # as an application's lie among its heap
if mode == "evict":                      # the spin's leaf walks n MiB instead
    import mmap
    BUF = mmap.mmap(-1, n << 20)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        BUF.madvise(mmap.MADV_NOHUGEPAGE)     # 4 KiB pages: one TLB entry each
    for i in range(0, n << 20, 4096):
        BUF[i] = 1
    spin, mode = evict, "spin"
if mode == "spin":
    print("READY", flush=True)
    while True:
        down(depth, n)
elif mode == "sleep":                    # a target that does nothing
    print("READY", flush=True)
    time.sleep(3600)
else:
    down(depth, 1000)                    # warm up
    print("READY", flush=True)
    sys.stdin.readline()
    t, c = time.perf_counter(), time.process_time()
    for _ in range(n):
        down(depth, 20000)
    # wall and CPU seconds of the work
    print("%.6f %.6f" % (time.perf_counter() - t, time.process_time() - c), flush=True)
'''


# --async-aware: a chain of three tasks (main -> outer -> inner, each
# awaiting the next), the innermost running a chain of `depth` frames.
ASYNC_WORKLOAD = r'''
import asyncio, sys
def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x
def down(d, n):
    return spin(n) if d <= 1 else down(d - 1, n)
async def inner(depth):
    print("READY", flush=True)
    while True:
        down(depth - 1, 2000)
async def outer(depth):
    await asyncio.create_task(inner(depth), name="inner")
async def main(depth):
    await asyncio.create_task(outer(depth), name="outer")
asyncio.run(main(int(sys.argv[1])))
'''
SID_BIN = os.path.join(os.environ.get("TB_CACHE", os.path.expanduser("~/.cache/tachyon-bpf")),
                       "debian-sid", "root", "usr", "bin")


def paired_medians(py, script, arg, variants, seconds, rounds):
    """{name: median BPF ns per run} of each (name, extra options) variant,
    one `script arg` per CPU, the variants back to back `rounds` times."""
    runs = {name: [] for name, _ in variants}
    for _ in range(rounds):
        for name, extra in variants:
            ws = [start(py, script, arg) for _ in range(NCPUS)]
            try:
                st, _ = profile(",".join(str(w.pid) for w in ws), 999, seconds, extra)
            finally:
                stop(ws)
            runs[name].append(st["bpf_ns_per_run"])
    return {k: statistics.median(v) for k, v in runs.items()}


def async_table(out, seconds=3, rounds=3):
    """BPF ns per sample with and without --async-aware, one task-running
    spinner per CPU, the two runs back to back, `rounds` times per
    interpreter: the median of each (a shared host's noise moves single runs
    by microseconds)."""
    rows = []
    print("\nBPF ns per sample at depth 30, -F 999, every CPU running a task three tasks deep:"
          " kernel run-time stats, median of %d rounds" % rounds)
    print("%-10s %16s %16s %10s" % ("python", "plain", "--async-aware", "extra"))
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(ASYNC_WORKLOAD)
        script = f.name
    try:
        for v in ("3.14", "3.15"):
            py = os.path.join(SID_BIN, "python%s-host" % v)
            if not os.path.exists(py):
                print("%-10s (missing: run scripts/real-pythons.sh)" % ("sid-" + v))
                continue
            cells = paired_medians(py, script, 30, (("plain", ()), ("async", ("--async-aware",))),
                                   seconds, rounds)
            rows.append({"python": "sid-" + v, "depth": 30, "plain_ns": cells["plain"],
                         "async_ns": cells["async"]})
            print("%-10s %16.0f %16.0f %+9.0f" % ("sid-" + v, cells["plain"], cells["async"],
                                                  cells["async"] - cells["plain"]))
    finally:
        os.unlink(script)
    out["async"] = rows


NATIVE_WORKLOAD = r'''
import sys
def spin(n):
    x = 0
    for i in range(n):
        x += i
def level(d, n):
    if d == 0:
        while True:
            spin(n)
    return list(map(level, [d - 1], [n]))
def down(d, n, levels):
    return level(levels, n) if d == 0 else down(d - 1, n, levels)
print("READY", flush=True)
down(int(sys.argv[1]), 2000, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
'''


NATIVE_VARIANTS = (("plain", ()), ("fp", ("--native=fp",)), ("tables", ("--native",)))


def native_table(out, seconds=3, rounds=3):
    """BPF ns per sample: Python only, --native=fp (the kernel's frame-pointer
    walk) and --native (the unwind tables walked in BPF), at Python depth 30
    with three map() levels below it (about 20-30 native frames to unwind),
    on Debian's 3.15 (frame pointers) and pyenv's 3.13 (none: only the
    tables unwind it); median of `rounds` back-to-back triples."""
    print("\nBPF ns per sample, -F 999, every CPU busy, depth 30 with ~20-30 native"
          " frames: kernel run-time stats, median of %d rounds" % rounds)
    print("%-10s %10s %12s %12s %10s %10s   target: fp <= 500, tables <= 3000 more"
          % ("python", "plain", "--native=fp", "--native", "fp extra", "tbl extra"))
    pys = (("sid-3.15", os.path.join(SID_BIN, "python3.15-host")),
           ("3.13.0", os.path.join(PYENV, "versions", "3.13.0", "bin", "python3.13")))
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(NATIVE_WORKLOAD)
        script = f.name
    rows = []
    try:
        for label, py in pys:
            if not os.path.exists(py):
                print("%-10s (missing: run scripts/real-pythons.sh)" % label)
                continue
            c = paired_medians(py, script, 26, NATIVE_VARIANTS, seconds, rounds)
            print("%-10s %10.0f %12.0f %12.0f %+10.0f %+10.0f" % (
                label, c["plain"], c["fp"], c["tables"], c["fp"] - c["plain"],
                c["tables"] - c["plain"]))
            rows.append({"python": label, "plain_ns": c["plain"], "fp_ns": c["fp"],
                         "tables_ns": c["tables"]})
    finally:
        os.unlink(script)
    out["native"] = rows
    # Means of whole runs move by a microsecond with this host's noise: the
    # per-sample medians of a measuring build tell the extra (latprobe.py).
    print("\nthe same, per-sample medians of a measuring build (scripts/latprobe.py --native):",
          flush=True)
    import latprobe     # noqa: E402 (imports this module)
    out["native_medians"] = latprobe.native_main(
        argparse.Namespace(bin=None, rounds=rounds + 2, hz=999, seconds=3, levels=2))


def interpreters():
    found = []
    for v in ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13"):
        d = os.path.join(PYENV, "versions")
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if name.startswith(v + "."):
                found.append((name, os.path.join(d, name, "bin", "python3")))
    if os.path.exists("/usr/bin/python3.11"):
        found.append(("debian-3.11", "/usr/bin/python3.11"))
    # Debian's real builds (scripts/real-pythons.sh): static, as most
    # distributions ship them; the wrappers exec them, keeping the pid.
    deb11 = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(SID_BIN))),
                         "debian-bullseye", "root", "usr", "bin", "python3.9-host")
    if os.path.exists(deb11):
        found.append(("deb11-3.9", deb11))
    for v in ("3.13", "3.14", "3.15"):
        if os.path.exists(os.path.join(SID_BIN, "python%s-host" % v)):
            found.append(("sid-" + v, os.path.join(SID_BIN, "python%s-host" % v)))
    return found


def default_python():
    for name, path in interpreters():
        if name.startswith("3.13"):
            return name, path
    return interpreters()[-1]


def start(py, script, *args):
    p = subprocess.Popen([py, script] + [str(a) for a in args], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if line.split(" ", 1)[0].strip() != "READY":
        p.kill()
        raise SystemExit("bench: workload did not start")
    return p


def profile(pid, hz, seconds, extra=()):
    """Run the profiler to completion; returns (stats dict, rusage of it)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as st:
        cmd = [BIN, "-p", str(pid), "-F", str(hz), "-d", str(seconds), "-o", os.devnull,
               "--stats", st.name] + list(extra)
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        _, status, ru = os.wait4(p.pid, 0)
        err = p.stderr.read()
        p.stderr.close()
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit("bench: profiler failed: " + err)
        return json.load(open(st.name)), ru


def spinners(py, script, depth, n):
    return [start(py, script, "spin", depth, 2000) for _ in range(n)]


def stop(ws):
    for w in ws:
        w.kill()
    for w in ws:
        w.wait()


def bpf_cost(py, script, depth, seconds=3, hz=999, extra=()):
    """One spinner per CPU, so the kernel's per-run figure is a walk's."""
    ws = spinners(py, script, depth, NCPUS)
    try:
        stats, _ = profile(",".join(str(w.pid) for w in ws), hz, seconds, extra)
    finally:
        stop(ws)
    return stats


def timeline_cost(py, script, rounds):
    """Counted in the kernel vs --timeline, interleaved, depth 30, every CPU
    busy: the median BPF ns per run at 999 Hz, and the lost samples at
    10 kHz per CPU (the budget: <= 500 ns more, 0 lost)."""
    rows = []
    for label, extra in (("counted", ()), ("--timeline", ("--timeline",))):
        rows.append({"mode": label, "extra": extra, "ns": [], "self": []})
    for _ in range(rounds):
        for r in rows:
            s = bpf_cost(py, script, 30, seconds=2, extra=r["extra"])
            r["ns"].append(s["bpf_ns_per_run"])
            r["self"].append(s["bpf_ns_per_sample"])
    for r in rows:
        s = bpf_cost(py, script, 30, seconds=5, hz=10000, extra=r["extra"])
        r.update({"ns_per_run": statistics.median(r["ns"]),
                  "ns_per_sample_self": statistics.median(r["self"]),
                  "samples_10k": s["collected"], "lost_10k": s["lost"]})
        del r["extra"]
    return rows


def timeline_table(py, script, out):
    rows = timeline_cost(py, script, ROUNDS)
    out["timeline"] = rows
    print("\n%-22s %12s %12s %14s %10s" % ("timeline vs counted", "BPF ns/run", "(self)",
                                          "10 kHz samples", "lost"))
    for r in rows:
        print("%-22s %12.0f %12.0f %14d %10d" % (r["mode"], r["ns_per_run"],
                                                 r["ns_per_sample_self"], r["samples_10k"],
                                                 r["lost_10k"]))
    print("  depth 30, every CPU busy; medians of %d rounds at 999 Hz, interleaved;"
          " budget: <= 500 ns more per sample\n  with --timeline, 0 lost at 10 kHz" % ROUNDS)


def walkers_row(py, script, depth=30, rounds=3):
    """Both stack walkers on this kernel, back to back at depth 30: bpf_loop's
    and the one for kernels without it (bounded loops and tail calls, forced
    with TACHYON_WALKER). A figure from a 5.10 VM under TCG compares with no
    other machine's, so the two are compared here, on the same kernel."""
    got = {"bpf_loop": [], "tailcall": []}
    for _ in range(rounds):
        for w, runs in got.items():
            os.environ["TACHYON_WALKER"] = w
            try:
                s = bpf_cost(py, script, depth, seconds=2)
                runs.append((s["bpf_ns_per_run"], s["bpf_ns_per_sample"]))
            except SystemExit as e:     # no bpf_loop here: the fallback alone
                print("  %s walker: %s" % (w, str(e).strip().splitlines()[-1]))
                runs.clear()
                break
            finally:
                del os.environ["TACHYON_WALKER"]
    row = {w: {"ns_per_run": statistics.median(r for r, _ in v),
               "ns_per_sample_self": statistics.median(x for _, x in v)}
           for w, v in got.items() if v}
    cells = ["%8.0f (%6.0f)" % (row[w]["ns_per_run"], row[w]["ns_per_sample_self"])
             if w in row else "%17s" % "-" for w in got]
    print("%-14s %-10s %17s %17s %8s" % ("walkers", "depth %d" % depth, "bpf_loop",
                                         "tail-call", "ratio"))
    ratio = (row["tailcall"]["ns_per_run"] / row["bpf_loop"]["ns_per_run"]
             if len(row) == 2 and row["bpf_loop"]["ns_per_run"] else 0)
    print("%-14s %-10s %s %s %7.2fx" % ("", "ns/sample", cells[0], cells[1], ratio))
    print("  same kernel (%s), medians of %d rounds; the tail-call walker serves 5.10 to 5.16"
          % (os.uname().release, rounds))
    return row


def throughput(py, script, seconds=5, faults=False):
    """Every CPU busy with the target at -F 100000/CPUs, at most the safe
    timer rate (20 kHz per CPU without --unsafe-rate). With `faults`, the
    targets take page faults under a 30-deep chain (tests/workloads/
    faults.py) and every fault is a sample (-e page-faults -c 1): a rate no
    timer has to deliver, for machines whose timer cannot."""
    hz = min(-(-100000 // NCPUS), SAFE_HZ)
    rate = None
    if faults:
        ws = [start(py, FAULTS, 30, 3600) for _ in range(NCPUS)]
        rate = ["-e", "page-faults", "-c", "1"]
    else:
        ws = spinners(py, script, 30, NCPUS)
    try:
        stats, ns, window, _ = steady(",".join(str(w.pid) for w in ws), hz, seconds,
                                      rate=rate)
    finally:
        stop(ws)
    n = max(stats["collected"], 1)
    return {"hz": 0 if faults else hz, "event": stats["event"], "samples": stats["collected"],
            "samples_per_s": stats["collected"] / stats["duration_s"],
            "lost_pct": 100 * stats["lost"] / n,
            "dropped_pct": 100 * sum(stats["dropped"].values()) / n,
            "bpf_ns_per_run": stats["bpf_ns_per_run"],
            "profiler_us_per_sample": ns / 1e3 / max(window, 1),
            "rss_peak_kb": stats.get("rss_peak_kb", 0)}


def run_ns(pid):
    """CPU time the (single-threaded) profiler has run, in ns (schedstat)."""
    with open("/proc/%d/schedstat" % pid) as f:
        return int(f.read().split()[0])


def steady(pids, hz, seconds, warm=2.0, rate=None):
    """Profile for warm + seconds; returns (stats, CPU ns used after warm-up,
    samples in that window). Start-up (BPF load, first symbol reads) is left
    out; samples in the window are the run's rate times its length. `rate`
    replaces -F hz (e.g. an event and its period)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as st:
        p = subprocess.Popen([BIN, "-p", str(pids), "-d", str(warm + seconds), "-o", os.devnull,
                              "--stats", st.name] + (rate or ["-F", str(hz)]),
                             stderr=subprocess.PIPE, text=True)
        time.sleep(warm)
        t0, c0 = time.monotonic(), run_ns(p.pid)
        time.sleep(seconds - 0.2)
        c1, t1 = run_ns(p.pid), time.monotonic()
        err = p.communicate()[1]
        if p.returncode != 0:
            raise SystemExit("bench: profiler failed: " + err)
        stats = json.load(open(st.name))
    window = stats["collected"] * (t1 - t0) / max(stats["duration_s"], 1e-9)
    return stats, c1 - c0, window, t1 - t0


def idle_cpu(py, seconds=10):
    """Profiler CPU while its target sleeps: the cost of waking up at all."""
    w = subprocess.Popen([py, "-c", "import time; time.sleep(3600)"])
    try:
        time.sleep(0.3)
        stats, ns, _, secs = steady(w.pid, 999, seconds)
    finally:
        w.kill()
        w.wait()
    return {"seconds": secs, "cpu_pct": 100 * ns / 1e9 / secs}


def timed_work(py, script, depth, n, hz, other=None):
    """(seconds of the fixed work, ns the BPF program ran meanwhile),
    profiled at hz (0 = not profiled). With `other`, the profiler samples
    that (idle) process instead: the same timer interrupts hit the work, but
    the BPF program returns at its pid check, which measures the floor that
    the perf event itself costs on this machine."""
    w = start(py, script, "work", depth, n)
    prof = None
    with tempfile.NamedTemporaryFile(suffix=".json") as st:
        try:
            if hz:
                pid = other if other else w.pid
                prof = subprocess.Popen([BIN, "-p", str(pid), "-F", str(hz), "-o", os.devnull,
                                         "-v", "--stats", st.name],
                                        stderr=subprocess.PIPE, text=True)
                for line in prof.stderr:           # attached once it says so
                    if "profiling" in line:
                        break
            w.stdin.write("go\n")
            w.stdin.flush()
            secs = float(w.stdout.readline().split()[0])
        finally:
            if prof:
                prof.terminate()
                prof.communicate()
            w.kill()
            w.wait()
        if not prof:
            return secs, 0
        stats = json.load(open(st.name))    # written when the profiler ended
        return secs, stats["bpf_runs"] * stats["bpf_ns_per_run"]


def slowdown(py, script, hz, rounds):
    """The work's wall time unprofiled, profiled and under the bare timer,
    interleaved; and, immune to the host's noise, the BPF program's own run
    time (the kernel's statistics) as a share of the profiled work's time:
    the part of the slowdown that is the walk, paid in the target's CPU."""
    idle = subprocess.Popen([py, "-c", "import time; time.sleep(3600)"])
    base, prof, floor, acct = [], [], [], []
    try:
        time.sleep(0.3)
        for _ in range(rounds):        # interleaved so drift hits all alike
            base.append(timed_work(py, script, 30, 400, 0)[0])
            secs, bpf_ns = timed_work(py, script, 30, 400, hz)
            prof.append(secs)
            acct.append(100 * bpf_ns / 1e9 / secs)
            floor.append(timed_work(py, script, 30, 400, hz, other=idle.pid)[0])
    finally:
        idle.kill()
        idle.wait()
    b, p, f = statistics.median(base), statistics.median(prof), statistics.median(floor)
    return {"hz": hz, "base_s": b, "profiled_s": p, "floor_s": f,
            "slowdown_pct": 100 * (p - b) / b, "floor_pct": 100 * (f - b) / b,
            "ours_pct": 100 * (p - f) / b, "bpf_pct": statistics.median(acct),
            "spread_pct": 100 * (max(base) - min(base)) / b}


def userspace_cost(py, script, hz):
    """Steady-state userspace CPU per sample, start-up left out."""
    w = start(py, script, "spin", 30, 2000)
    try:
        s2, ns, window, _ = steady(w.pid, hz, 6)
    finally:
        w.kill()
        w.wait()
    return {"hz": hz, "samples": s2["collected"], "cpu_s": ns / 1e9,
            "us_per_sample": ns / 1e3 / max(window, 1),
            "lost_pct": 100 * s2["lost"] / max(s2["collected"], 1),
            "code_hit_rate": s2.get("code_hit_rate", 0), "code_reads": s2.get("code_reads", 0),
            "rss_peak_kb": s2.get("rss_peak_kb", 0)}


# HTTP clients for the application: a mix of pages, so the workers' stacks
# vary the way a real site's do.
CLIENT = r'''
import sys, urllib.request
base, i = sys.argv[1], 0
paths = ["/", "/page/20", "/page/150", "/api/40", "/page/5", "/api/300"]
while True:
    i += 1
    try:
        urllib.request.urlopen(base + paths[i % len(paths)], timeout=10).read()
    except OSError:
        pass
'''


def app_env(py):
    """PYTHONPATH for Debian's Django and gunicorn under `py`, or None if
    they are not installed or `py` cannot import them."""
    ver = subprocess.run([py, "-c", "import sys; print(sys.version_info[1])"],
                         capture_output=True, text=True).stdout.strip()
    path = [DIST_PACKAGES]
    if ver.isdigit() and int(ver) >= 13:
        path.insert(0, os.path.join(APP_DIR, "compat"))   # cgi, removed in 3.13
    env = dict(os.environ, PYTHONPATH=":".join(path))
    # the application itself, not just the packages: Debian's pytz needs
    # zoneinfo (3.9+), so Django imports on 3.8 but the site does not start
    ok = subprocess.run([py, "-c", "import gunicorn, app"], env=env, cwd=APP_DIR,
                        capture_output=True).returncode == 0
    return env if ok else None


def free_port():
    import socket
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def app_server(py, env, workers=2):
    """gunicorn with `workers` forked sync workers; returns (master, url)."""
    import urllib.request
    url = "http://127.0.0.1:%d" % free_port()
    p = subprocess.Popen([py, "-m", "gunicorn", "--chdir", APP_DIR, "-w", str(workers),
                          "-b", url[7:], "--log-level", "warning", "app:application"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            urllib.request.urlopen(url + "/page/1", timeout=5).read()
            return p, url
        except OSError:
            if p.poll() is not None:
                break
            time.sleep(0.1)
    p.kill()
    p.wait()
    raise SystemExit("bench: the Django application did not start under " + py)


def app_cost(py, env, hz, seconds, clients=2):
    """The BPF cost per sample of the application's forked workers, loaded
    by `clients` HTTP clients (they share the CPUs, as real clients would
    not: the figure is per sample, not per second)."""
    master, url = app_server(py, env)
    cl = [subprocess.Popen([sys.executable, "-c", CLIENT, url]) for _ in range(clients)]
    try:
        time.sleep(1.0)                 # every worker has served requests
        stats, _ = profile(master.pid, hz, seconds, extra=("-s",))
    finally:
        stop(cl + [master])
    ev = max(stats["events"], 1)
    frames = stats["bpf_frames"] / ev
    return {"hz": hz, "samples": stats["collected"], "frames": frames,
            "stacks": stats["stacks"], "stacks_per_s": stats["stacks"] / stats["duration_s"],
            "memo_pct": 100.0 * stats["bpf_code_memo"] / max(stats["bpf_frames"], 1),
            "ns_per_sample_self": stats["bpf_ns_per_sample"],
            # every run of the program over the samples: an upper bound
            # (the runs on the clients' and master's events are counted too)
            "ns_per_sample_kernel": stats["bpf_ns_per_run"] * stats["bpf_runs"] / ev,
            "partial": stats["partial"], "target_ns": 2000.0 * frames / 30}


def cold_table(out, rounds=3, mib=128):
    """The depth-30 chain hot, with the caches and TLB evicted between
    samples (its leaf walks `mib` MiB a page and a line at a time), and
    evicted with each code object on a page of its own (as an
    application's lie among its heap), interleaved: what cold memory costs
    a walk on this machine, next to the real application's figure."""
    print("\nBPF ns per sample at depth 30, -F 999, every CPU busy, caches cold:"
          " kernel run-time stats (self-timed), median of %d rounds" % rounds)
    print("%-14s %18s %18s %18s" % ("python", "hot", "evicted", "+ code scattered"))
    out["cold"] = []
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(WORKLOAD)
        script = f.name
    try:
        for vname, vpy in interpreters():
            if vname != default_python()[0] and vname != "debian-3.11":
                continue
            cells = {m: [] for m in ("spin", "evict", "scatter")}
            for _ in range(rounds):
                for m, runs in cells.items():
                    ws = [start(vpy, script, m, 30, mib if m != "spin" else 2000)
                          for _ in range(NCPUS)]
                    try:
                        st, _ = profile(",".join(str(w.pid) for w in ws), 999, 2)
                    finally:
                        stop(ws)
                    runs.append((st["bpf_ns_per_run"], st["bpf_ns_per_sample"]))
            row = {"python": vname, "mib": mib}
            for m, runs in cells.items():
                row[m] = (statistics.median(r for r, _ in runs),
                          statistics.median(x for _, x in runs))
            out["cold"].append(row)
            print("%-14s" % vname + "".join("%10.0f (%5.0f)" % row[m] for m in cells),
                  flush=True)
    finally:
        os.unlink(script)
    print("  evicted: the leaf walks %d MiB, 4 KiB + 64 bytes a step, between samples;"
          " scattered: 64 objects\n  of each code object's size kept after it"
          " (scripts/latprobe.py: medians and pages per sample)" % mib)


def app_table(out):
    print("\nBPF ns per sample on a Django 3.2 site under gunicorn: 2 forked sync workers,"
          " -p MASTER -s,\n2 HTTP clients; self-timed (kernel run-time stats over the"
          " samples*); target <= 2000 at depth 30, scaled by depth")
    print("%-14s %6s %7s %9s %8s %6s %9s %10s %8s" % ("python", "Hz", "frames", "stacks/s",
                                                    "samples", "memo", "BPF ns", "(kernel*)",
                                                    "target"))
    out["app"] = []
    for vname, vpy in interpreters():
        env = app_env(vpy)
        if env is None:
            print("%-14s cannot run the site with Django and gunicorn from %s (scripts/deps.sh"
                  " installs python3-django and gunicorn; Debian's need Python 3.9+)"
                  % (vname, DIST_PACKAGES))
            continue
        for hz, secs in ((999, 3), (99, 5)):
            r = app_cost(vpy, env, hz, secs)
            r["python"] = vname
            out["app"].append(r)
            mark = "!" if r["ns_per_sample_self"] > r["target_ns"] else ""
            print("%-14s %6d %7.1f %9.0f %8d %5.0f%% %8.0f%-1s (%8.0f) %8.0f" % (
                vname, hz, r["frames"], r["stacks_per_s"], r["samples"], r["memo_pct"],
                r["ns_per_sample_self"], mark, r["ns_per_sample_kernel"], r["target_ns"]),
                flush=True)
    print("  ! above the target; * includes the program's runs on other processes' events;"
          " memo: callers' fingerprints\n  taken from the previous walk rather than read")


def whole_cost(py):
    with tempfile.NamedTemporaryFile(suffix=".json") as j:
        subprocess.run([sys.executable, os.path.join(REPO, "scripts", "bench-cost.py"),
                        "--python", py, "--rounds", str(ROUNDS), "--json", j.name], check=True)
        return json.load(open(j.name))


def soak(seconds):
    with tempfile.NamedTemporaryFile(suffix=".json") as j:
        subprocess.run([sys.executable, os.path.join(REPO, "scripts", "bench-memory.py"),
                        "--duration", str(seconds), "--json", j.name], check=True)
        return json.load(open(j.name))


def bpf_table(script, out):
    """BPF ns per sample per interpreter at depths 10, 30 and 100."""
    print("\nBPF ns per sample, -F 999, every CPU running the target: kernel run-time stats"
          " (self-timed)")
    print("%-14s" % "python" + "".join("%18s" % ("depth %d" % d) for d in DEPTHS)
          + "%8s" % "memo*" + "   target: <= 2000 at 30, <= 5000 at 100")
    out["bpf"] = []
    for vname, vpy in interpreters():
        cells, memo, reads = [], 0, 0
        for depth in DEPTHS:
            s = bpf_cost(vpy, script, depth, seconds=2)
            out["bpf"].append({"python": vname, "depth": depth,
                               "ns_per_run": s["bpf_ns_per_run"],
                               "ns_per_sample_self": s["bpf_ns_per_sample"],
                               "partial": s["partial"], "samples": s["collected"],
                               "code_reads": s["bpf_frames"] - s["bpf_code_memo"],
                               "code_memo": s["bpf_code_memo"]})
            memo += s["bpf_code_memo"]
            reads += s["bpf_frames"] - s["bpf_code_memo"]
            mark = "" if depth not in TARGET_NS or s["bpf_ns_per_run"] <= TARGET_NS[depth] else "!"
            cells.append("%6.0f%-1s (%6.0f)" % (s["bpf_ns_per_run"], mark, s["bpf_ns_per_sample"]))
        print("%-14s" % vname + "".join("%18s" % c for c in cells)
              + "%7.0f%%" % (100.0 * memo / max(1, memo + reads)))
    print("  ! above the target; * callers' fingerprints taken from the previous walk"
          " (the interpreter's code counter stood still) rather than read")


def main():
    if os.geteuid() != 0:
        raise SystemExit("tachyon-bpf: bench: needs root (run: sudo make bench)")
    if sys.argv[1:] == ["app"]:         # the real-application table alone
        cold_table({})
        app_table({})
        return
    if sys.argv[1:] == ["cold"]:        # the chain with cold caches alone
        cold_table({})
        return
    if sys.argv[1:] == ["async"]:       # the --async-aware table alone
        async_table({})
        return
    if sys.argv[1:] == ["native"]:      # the --native table alone
        native_table({})
        return
    if sys.argv[1:] == ["bpf"]:         # the per-interpreter BPF table alone
        with tempfile.NamedTemporaryFile("w", suffix=".py") as f:
            f.write(WORKLOAD)
            f.flush()
            bpf_table(f.name, {})
        return
    name, py = default_python()
    if sys.argv[1:] == ["timeline"]:    # timeline vs counted alone
        with tempfile.NamedTemporaryFile("w", suffix=".py") as f:
            f.write(WORKLOAD)
            f.flush()
            timeline_table(py, f.name, {})
        return
    out = {"machine": {"kernel": os.uname().release, "cpus": os.cpu_count()}, "python": name}
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(WORKLOAD)
        script = f.name
    try:
        print("tachyon-bpf bench on %s, %d CPUs, Python %s (rounds: %d)" %
              (os.uname().release, os.cpu_count(), name, ROUNDS))
        if os.environ.get("TB_BENCH_COST", "1") != "0":
            out["cost"] = whole_cost(py)
        bpf_table(script, out)
        print()
        out["walkers"] = walkers_row(py, script)

        print("\n%-20s %6s %10s %12s %10s %8s %10s" % ("target slowdown", "Hz", "total",
                                                    "timer floor*", "BPF walk", "noise",
                                                    "BPF run**"))
        out["slowdown"] = []
        for hz in (99, 1000, 10000):
            r = slowdown(py, script, hz, ROUNDS)
            out["slowdown"].append(r)
            print("%-20s %6d %9.2f%% %11.2f%% %9.2f%% %7.2f%% %9.3f%%" % (
                "median of %d" % ROUNDS, hz, r["slowdown_pct"], r["floor_pct"], r["ours_pct"],
                r["spread_pct"], r["bpf_pct"]))
        print("  * the same perf events with the BPF program returning at its pid check")
        print("  ** the program's run time (kernel statistics) over the work's time: the walk's"
              " share, free of the host's noise\n"
              "     target: <= 0.1 % at 99 Hz, <= 1 % at 1 kHz, <= 5 % at 10 kHz")

        print("\n%-22s %8s %12s %9s %10s %9s" % ("profiler userspace", "Hz", "CPU us/smpl",
                                                  "lost %", "code hits", "peak RSS"))
        out["userspace"] = []
        for hz in (999, 10000):
            r = userspace_cost(py, script, hz)
            out["userspace"].append(r)
            print("%-22s %8d %12.2f %8.3f%% %9.2f%% %6.1f MiB" % (
                "%d samples" % r["samples"], hz, r["us_per_sample"], r["lost_pct"],
                100 * r["code_hit_rate"], r["rss_peak_kb"] / 1024))
        r = idle_cpu(py)
        out["idle"] = r
        print("%-22s %8d %11.3f%% of a CPU while the target sleeps (%.0f s)"
              % ("idle target", 999, r["cpu_pct"], r["seconds"]))

        timeline_table(py, script, out)

        out["throughput"] = [throughput(py, script), throughput(py, script, faults=True)]
        print("\n%-22s %14s %10s %9s %10s %7s %11s %9s" % (
            "throughput", "driven by", "samples/s", "lost %", "dropped %", "BPF ns",
            "us/sample*", "peak RSS"))
        for r in out["throughput"]:
            print("%-22s %14s %10.0f %8.3f%% %9.3f%% %7.0f %11.2f %5.1f MiB" % (
                "%d CPUs busy, depth 30" % NCPUS,
                "%d Hz/CPU" % r["hz"] if r["hz"] else "each fault", r["samples_per_s"],
                r["lost_pct"], r["dropped_pct"], r["bpf_ns_per_run"],
                r["profiler_us_per_sample"], r["rss_peak_kb"] / 1024))
        print("  target: >= 100000 samples/s in total, < 0.1 % lost; * profiler userspace CPU")

        if os.environ.get("TB_BENCH_ASYNC", "1") != "0":
            async_table(out)
        native_table(out)

        cold_table(out)
        app_table(out)

        if SOAK_S > 0:
            print("\nmemory: %d s of --all-python over process, thread and code churn"
                  " (TB_BENCH_SOAK_S=0 skips)" % SOAK_S, flush=True)
            out["memory"] = soak(SOAK_S)
    finally:
        os.unlink(script)
    path = os.path.join(REPO, "bench.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("\nwritten to %s" % path)


if __name__ == "__main__":
    main()
