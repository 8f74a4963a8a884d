#!/usr/bin/env python3
"""make bench-compare BASE=REV: this tree's binary side by side with another
build (a commit before a refactor, a release), interleaved in one run.

  bench-compare.py BASE_BIN NEW_BIN

For each round, in alternating order (base first in even rounds, new first in
odd ones, so a drift of the machine lands on both alike):

  - BPF ns per sample at depth 30, every CPU running the target, from the
    kernel's run-time statistics: the default interpreter and Debian's real
    3.14 when scripts/real-pythons.sh has made it;
  - profiler userspace CPU per sample after warm-up, at 999 Hz and 10 kHz;
  - the profiler's whole CPU time for a 1 s run against a sleeping target:
    start-up (BPF load and verification, first symbol reads) dominates it.

Prints the median of each figure for both builds, their ratio (new / base)
and the spread of the rounds (max - min over the median, the larger of the
two builds') so a ratio inside the noise reads as such. Figures, not
pass/fail: the machine is shared.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (same directory: its workloads and measurements)

ROUNDS = int(os.environ.get("TB_BENCH_ROUNDS", "3"))
SID_314 = os.path.expanduser("~/.cache/tachyon-bpf/debian-sid/root/usr/bin/python3.14-host")


def startup_cpu_run(py):
    """Seconds of CPU (user + sys) of a 1 s run against a sleeping target
    (it profiles nothing, so it exits 1: only its cost matters here)."""
    w = subprocess.Popen([py, "-c", "import time; time.sleep(3600)"])
    try:
        time.sleep(0.3)
        p = subprocess.Popen([bench.BIN, "-p", str(w.pid), "-d", "1", "-o", os.devnull],
                             stderr=subprocess.DEVNULL)
        _, _, ru = os.wait4(p.pid, 0)
    finally:
        w.kill()
        w.wait()
    return ru.ru_utime + ru.ru_stime


def figures(pythons, script):
    out = {}
    for name, py in pythons:
        s = bench.bpf_cost(py, script, 30, seconds=2)
        out["BPF ns/sample, depth 30, %s" % name] = s["bpf_ns_per_run"]
    name, py = pythons[0]
    for hz in (999, 10000):
        r = bench.userspace_cost(py, script, hz)
        out["userspace us/sample, %d Hz" % hz] = r["us_per_sample"]
    out["CPU s of a 1 s run, idle target"] = startup_cpu_run(py)
    return out


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: bench-compare.py BASE_BIN NEW_BIN")
    if os.geteuid() != 0:
        raise SystemExit("tachyon-bpf: bench-compare: needs root (run: sudo make bench-compare)")
    bins = {"base": os.path.abspath(sys.argv[1]), "new": os.path.abspath(sys.argv[2])}
    for b in bins.values():
        if not os.access(b, os.X_OK):
            raise SystemExit("tachyon-bpf: bench-compare: %s: not an executable" % b)
    pythons = [bench.default_python()]
    if os.access(SID_314, os.X_OK):
        pythons.append(("sid-3.14", SID_314))
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(bench.WORKLOAD)
        script = f.name
    runs = {"base": [], "new": []}
    try:
        print("bench-compare on %s, %d CPUs, %d rounds, interleaved\n  base: %s\n  new:  %s"
              % (os.uname().release, os.cpu_count(), ROUNDS, bins["base"], bins["new"]),
              flush=True)
        for i in range(ROUNDS):
            order = ("base", "new") if i % 2 == 0 else ("new", "base")
            for which in order:
                bench.BIN = bins[which]
                runs[which].append(figures(pythons, script))
            print("  round %d done" % (i + 1), flush=True)
    finally:
        os.unlink(script)
    table = []
    print("\n%-40s %12s %12s %8s %8s" % ("figure (median)", "base", "new", "new/base",
                                          "noise"))
    for key in runs["base"][0]:
        med, spread = {}, 0.0
        for which in ("base", "new"):
            vals = [r[key] for r in runs[which]]
            med[which] = statistics.median(vals)
            if med[which]:
                spread = max(spread, (max(vals) - min(vals)) / med[which])
        ratio = med["new"] / med["base"] if med["base"] else float("nan")
        table.append({"figure": key, "base": med["base"], "new": med["new"],
                      "ratio": ratio, "noise": spread})
        print("%-40s %12.3f %12.3f %8.3f %7.0f%%" % (key, med["base"], med["new"], ratio,
                                                    100 * spread))
    print("  noise: the larger spread (max - min over median) of the two builds' rounds;"
          " a ratio within 1 +- noise is no change")
    path = os.path.join(bench.REPO, "bench-compare.json")
    with open(path, "w") as f:
        json.dump({"bins": bins, "rounds": runs, "table": table}, f, indent=1)
    print("\nwritten to %s" % path)


if __name__ == "__main__":
    main()
