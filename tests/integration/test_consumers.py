"""Our files in a real consumer: the speedscope web app (npm package, pinned
by scripts/speedscope.sh) imports collapsed stacks, speedscope JSON and pprof,
each with its own importer. One workload (callgraph.py, whose leaf_heavy is
40 % of the work by construction) is profiled once per format; each file is
loaded into the app in headless Chromium, and the app's own function table
must say what the profile says: the importer we meant, no console error,
every hot function, leaf_heavy's share, and <module> on every sample.
"""
import re

from common import (WORKLOADS, art_path, check, primary_python, run_profiler, speedscope_app,
                    start_workload, timeout)

FREQ = 999
SECONDS = 2
HOT = ["leaf_heavy", "leaf_medium", "leaf_mid", "leaf_light", "leaf_tiny"]
HEAVY_SHARE = (28.0, 52.0)      # percent; leaf_heavy is 40 % of each cycle
FORMATS = [("collapsed", "prof.folded", "collapsed stack format"),
           ("speedscope", "prof.speedscope.json", "speedscope json file"),
           ("pprof", "prof.pb.gz", "protobuf encoded pprof file")]
ERRORS = re.compile(r"Uncaught|[Ee]rror|[Ff]ailed to|Cannot")


def _check_app(fmt, path, importer, where):
    imported, rows, console, _ = speedscope_app(path)
    check(imported and importer in imported,
          "%s: speedscope imported it as %r, want %r %s" % (fmt, imported, importer, where))
    bad = [ln for ln in console if ERRORS.search(ln) and "WebGL" not in ln]
    check(not bad, "%s: speedscope logged errors: %s" % (fmt, bad[:3]))
    # collapsed stacks name a frame by its whole label, "name (file:line)"
    for r in rows:
        r["name"] = r["name"].split(" (")[0]
    names = [r["name"] for r in rows]
    missing = [h for h in HOT if h not in names]
    check(not missing, "%s: speedscope's table lacks %s (has %s) %s"
          % (fmt, missing, names[:12], where))
    # several rows can share a name (one per file:line); self shares add up
    heavy = sum(r["self_pct"] for r in rows if r["name"] == "leaf_heavy")
    check(HEAVY_SHARE[0] <= heavy <= HEAVY_SHARE[1],
          "%s: speedscope shows leaf_heavy at %.1f%% self, want %.0f-%.0f%% %s"
          % (fmt, heavy, HEAVY_SHARE[0], HEAVY_SHARE[1], where))
    module = [r for r in rows if r["name"] == "<module>"]
    check(module and abs(module[0]["total_pct"] - 100.0) < 0.01,
          "%s: <module> is not on every sample in speedscope: %s" % (fmt, module[:1]))


@timeout(240)
def test_speedscope_app_imports():
    python = primary_python()
    w = start_workload(python, "callgraph.py", art_path("callgraph.truth.json"),
                       "--max-seconds", 120, cwd=WORKLOADS)
    try:
        for fmt, name, importer in FORMATS:
            out = art_path(name)
            res = run_profiler(w.pid, ["-F", FREQ, "-d", SECONDS], timeout=SECONDS + 30,
                               stats=True, outfile=out).expect_ok()
            check(res.stats()["written"] >= 300, "%s: only %d samples %s"
                  % (fmt, res.stats()["written"], res.where()))
            _check_app(fmt, out, importer, res.where())
    finally:
        w.stop()
