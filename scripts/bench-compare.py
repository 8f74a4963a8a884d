#!/usr/bin/env python3
"""make bench-compare BASE=REV: this tree's binary side by side with another
build (a commit before a refactor, a release), interleaved in one run.

  bench-compare.py BASE_BIN NEW_BIN

Each figure is measured for both builds back to back, the order alternating
between figures and rounds, so the host's slow and fast spells (this VM's
figures move by up to 2x between minutes) land on both alike:

  - BPF ns per sample at depth 30, every CPU running the target, from the
    kernel's run-time statistics: the default interpreter and Debian's real
    3.14 when scripts/real-pythons.sh has made it;
  - profiler userspace CPU per sample after warm-up, at 999 Hz and 10 kHz;
  - the profiler's whole CPU time for a 1 s run against a sleeping target:
    start-up (BPF load and verification, first symbol reads) dominates it;
  - BPF ns per sample (self-timed) on bench.py's Django site under gunicorn
    at 999 Hz, where python3-django and gunicorn are installed: ~45 frames,
    most samples a new stack (the chain's figures miss that cost).

Prints each build's median and minimum, and the median over rounds of the
back-to-back ratio new / base with the spread of those ratios, so a ratio
inside the noise reads as such. Figures, not pass/fail: the machine is
shared.
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


def measures(pythons, script):
    """(name, function of no arguments measuring bench.BIN) for each figure."""
    out = []
    for name, py in pythons:
        out.append(("BPF ns/sample, depth 30, %s" % name,
                    lambda py=py: bench.bpf_cost(py, script, 30, seconds=2)["bpf_ns_per_run"]))
    name, py = pythons[0]
    for hz in (999, 10000):
        out.append(("userspace us/sample, %d Hz" % hz,
                    lambda hz=hz: bench.userspace_cost(py, script, hz)["us_per_sample"]))
    out.append(("CPU s of a 1 s run, idle target", lambda: startup_cpu_run(py)))
    env = bench.app_env(py)
    if env is not None:
        out.append(("BPF ns/sample, Django app, %s" % name,
                    lambda: bench.app_cost(py, env, 999, 3)["ns_per_sample_self"]))
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
    runs = {"base": {}, "new": {}}
    ratios = {}
    try:
        print("bench-compare on %s, %d CPUs, %d rounds, each figure measured for both builds"
              " back to back, in alternating order\n  base: %s\n  new:  %s"
              % (os.uname().release, os.cpu_count(), ROUNDS, bins["base"], bins["new"]),
              flush=True)
        figs = measures(pythons, script)
        for i in range(ROUNDS):
            for j, (key, measure) in enumerate(figs):
                got = {}
                for which in (("base", "new") if (i + j) % 2 == 0 else ("new", "base")):
                    bench.BIN = bins[which]
                    got[which] = measure()
                    runs[which].setdefault(key, []).append(got[which])
                if got["base"]:
                    ratios.setdefault(key, []).append(got["new"] / got["base"])
            print("  round %d done" % (i + 1), flush=True)
    finally:
        os.unlink(script)
    table = []
    print("\n%-36s %10s %10s %10s %10s %9s %7s" % ("figure", "base med", "new med", "base min",
                                                  "new min", "new/base*", "spread"))
    for key, _ in figs:
        b, n, r = runs["base"][key], runs["new"][key], sorted(ratios.get(key, [float("nan")]))
        row = {"figure": key, "base_median": statistics.median(b),
               "new_median": statistics.median(n), "base_min": min(b), "new_min": min(n),
               "ratio": statistics.median(r), "ratio_spread": r[-1] - r[0]}
        table.append(row)
        print("%-36s %10.3f %10.3f %10.3f %10.3f %9.3f %7.2f" % (
            key, row["base_median"], row["new_median"], row["base_min"], row["new_min"],
            row["ratio"], row["ratio_spread"]))
    print("  * median over rounds of new/base measured back to back (the host's slow and fast"
          " spells cancel);\n    spread: max - min of those ratios: a ratio within 1 +- spread/2"
          " is no change")
    path = os.path.join(bench.REPO, "bench-compare.json")
    with open(path, "w") as f:
        json.dump({"bins": bins, "runs": runs, "ratios": ratios, "table": table}, f, indent=1)
    print("\nwritten to %s" % path)


if __name__ == "__main__":
    main()
