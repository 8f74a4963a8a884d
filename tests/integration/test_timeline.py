"""Time-ordered output (--timeline): every sample with its time.

Each format is written from one run of callgraph.py (a busy main thread
whose leaves' shares it measures itself) and loaded into a real consumer,
the speedscope web app (its Trace Event Format, speedscope and Firefox
importers): no error, the hot functions by name, leaf_heavy's share as the
workload timed it, and the run's sample total (--stats "written") as the
file and the app count it. The times in the file must be monotonic per
thread and span the run. Then the markers: GC intervals (gc_cycles.py) and
wall mode's off-CPU intervals (modes.py sleep, 90 % asleep).
"""
import json
import re
import signal
import time

from common import (WORKLOADS, art_path, check, primary_python, run_profiler, speedscope_app,
                    start_workload, timeout)

FREQ = 999
SECONDS = 2
HOT = ["leaf_heavy", "leaf_medium", "leaf_mid", "leaf_light", "leaf_tiny"]
SHARE_TOL = 3.0         # percentage points from the workload's own timing
EDGE_S = 0.25           # the first and last samples are this close to the run's ends
ERRORS = re.compile(r"Uncaught|[Ee]rror|[Ff]ailed to|Cannot")


def _ms(text):
    """speedscope's '702.70ms (100%)' or '1.20s (100%)' in ms."""
    m = re.match(r"([\d.]+)(ns|µs|us|ms|s)\b", text)
    check(m, "speedscope total %r is not a duration" % text)
    scale = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]
    return float(m.group(1)) * scale


def _spans(times, where):
    """Monotonic, and from near the start to near the end of the run."""
    check(times, "no sample times %s" % where)
    back = [(a, b) for a, b in zip(times, times[1:]) if b < a]
    check(not back, "times go back: %s %s" % (back[:3], where))
    check(times[0] <= EDGE_S and times[-1] >= SECONDS - EDGE_S,
          "samples from %.3f s to %.3f s, the run was %d s %s"
          % (times[0], times[-1], SECONDS, where))


def _chrometrace_file(path, written, period, where):
    with open(path) as f:
        ev = json.load(f)
    per_tid, names = {}, {}
    for e in ev:
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[e["tid"]] = e["args"]["name"]
        elif e["ph"] in "BE":
            per_tid.setdefault(e["tid"], []).append(e)
    total_us = 0.0
    for tid, evs in per_tid.items():
        _spans([e["ts"] / 1e6 for e in evs], "(chrometrace tid %d) %s" % (tid, where))
        depth, opened = 0, None
        for e in evs:          # root frames' time adds up to the samples
            if e["ph"] == "B":
                opened = e["ts"] if depth == 0 else opened
                depth += 1
            else:
                depth -= 1
                total_us += e["ts"] - opened if depth == 0 else 0
        check(depth == 0, "chrometrace tid %d: %d frames left open %s" % (tid, depth, where))
    check(abs(total_us / 1e6 / period - written) <= 1,
          "chrometrace: frames cover %.1f periods, --stats wrote %d %s"
          % (total_us / 1e6 / period, written, where))
    return written * period * 1e3


def _speedscope_file(path, written, period, where):
    with open(path) as f:
        d = json.load(f)
    n = sum(len(p["samples"]) for p in d["profiles"])
    w = sum(sum(p["weights"]) for p in d["profiles"])
    check(all(p["unit"] == "seconds" for p in d["profiles"]),
          "speedscope --timeline: units %s %s" % ([p["unit"] for p in d["profiles"]], where))
    check(n == written and abs(w / period - written) < 0.5,
          "speedscope --timeline: %d samples weighing %.1f periods, --stats wrote %d %s"
          % (n, w / period, written, where))
    return written * period * 1e3


def _gecko_samples(d):
    """[(time ms, stack or None)] of the thread, with its tables."""
    return [(s[1], s[0]) for s in d["samples"]["data"]]


def _gecko_file(path, written, period, where):
    """Checks the file; returns speedscope's import of it: the Firefox
    DevTools recording wrapper its importer reads, round our thread."""
    with open(path) as f:
        d = json.load(f)
    check(d["meta"]["version"] >= 24 and d["threads"], "gecko: meta %s %s" % (d["meta"], where))
    n = 0
    for t in d["threads"]:
        smp = _gecko_samples(t)
        n += sum(1 for _, st in smp if st is not None)
        check(smp[-1][1] is None, "gecko %s: no closing idle sample %s" % (t["name"], where))
        _spans([ms / 1e3 for ms, st in smp if st is not None], "(gecko %s) %s"
               % (t["name"], where))
    check(n == written, "gecko: %d samples, --stats wrote %d %s" % (n, written, where))
    main = [t for t in d["threads"] if t["tid"] == t["pid"]]
    check(main, "gecko: no main thread in %s %s" % ([t["tid"] for t in d["threads"]], where))
    # speedscope imports the single thread of a DevTools recording
    d["threads"] = main
    wrapped = art_path("prof.firefox.json")
    with open(wrapped, "w") as f:
        json.dump({"systemHost": {"name": "Firefox"}, "duration": d["meta"]["profilingEndTime"],
                   "profile": d}, f)
    return wrapped, None


FORMATS = [
    ("chrometrace", "prof.trace.json", [], "Trace Event Format profile", _chrometrace_file),
    ("speedscope --timeline", "prof.speedscope.json", ["--timeline"], "speedscope json file",
     _speedscope_file),
    ("gecko", "prof.gecko.json", [], "Firefox profile", _gecko_file),
]


def _gecko_share(path, leaf):
    """leaf's share of the samples in a gecko file, in percent."""
    with open(path) as f:
        d = json.load(f)
    hits = n = 0
    for t in d["threads"]:
        st, fr, stk = t["stringTable"], t["frameTable"]["data"], t["stackTable"]["data"]
        for s in t["samples"]["data"]:
            if s[0] is not None:
                n += 1
                hits += st[fr[stk[s[0]][1]][0]].startswith(leaf + " (")
    return 100.0 * hits / max(n, 1)


def _check_app(fmt, path, importer, total_ms, truth, where):
    imported, rows, console, _ = speedscope_app(path)
    check(imported and importer in imported,
          "%s: speedscope imported it as %r, want %r %s" % (fmt, imported, importer, where))
    bad = [ln for ln in console if ERRORS.search(ln) and "WebGL" not in ln]
    check(not bad, "%s: speedscope logged errors: %s" % (fmt, bad[:3]))
    for r in rows:      # chrometrace names carry py-spy's args: 'name {"filename": ...}'
        r["name"] = r["name"].split(" {")[0].split(" (")[0]
    names = [r["name"] for r in rows]
    missing = [h for h in HOT if h not in names]
    check(not missing, "%s: speedscope's table lacks %s (has %s) %s"
          % (fmt, missing, names[:12], where))
    want = 100 * truth["leaf_share"]["leaf_heavy"]
    heavy = sum(r["self_pct"] for r in rows if r["name"] == "leaf_heavy")
    if total_ms is None:
        # speedscope's Firefox importer weighs a sample by the time to the
        # next one, which a loaded machine stretches: count the file's
        heavy = _gecko_share(art_path("prof.gecko.json"), "leaf_heavy")
    check(abs(heavy - want) <= SHARE_TOL,
          "%s: speedscope shows leaf_heavy at %.1f%% self, the workload timed %.1f%% %s"
          % (fmt, heavy, want, where))
    module = [r for r in rows if r["name"] == "<module>"]
    check(module and abs(module[0]["total_pct"] - 100.0) < 0.01,
          "%s: <module> is not on every sample in speedscope: %s" % (fmt, module[:1]))
    if total_ms is not None:    # the Firefox importer counts time to the last sample
        got = _ms(module[0]["total"])
        check(abs(got - total_ms) <= max(0.01 * total_ms, 0.1),
              "%s: speedscope's total %.2f ms, the samples make %.2f ms %s"
              % (fmt, got, total_ms, where))


@timeout(300)
def test_timeline_formats_in_speedscope():
    python = primary_python()
    truth_path = art_path("callgraph.timeline.truth.json")
    w = start_workload(python, "callgraph.py", truth_path, "--max-seconds", 200, cwd=WORKLOADS)
    runs = []
    try:
        time.sleep(0.5)
        for fmt, name, extra, importer, check_file in FORMATS:
            out = art_path(name)
            res = run_profiler(w.pid, ["-F", FREQ, "-d", SECONDS] + extra,
                               timeout=SECONDS + 30, stats=True, outfile=out).expect_ok()
            st = res.stats()
            check(st["written"] >= 300 and st["lost"] == 0, "%s: %d samples, %d lost %s"
                  % (fmt, st["written"], st["lost"], res.where()))
            period = 1.0 / FREQ        # cpu-clock at -F
            got = check_file(out, st["written"], period, res.where())
            app_file, total_ms = got if isinstance(got, tuple) else (out, got)
            runs.append((fmt, app_file, importer, total_ms, res.where()))
        w.signal(signal.SIGUSR1)
        w.wait(20)
    finally:
        w.stop()
    with open(truth_path) as f:
        truth = json.load(f)
    for fmt, path, importer, total_ms, where in runs:
        _check_app(fmt, path, importer, total_ms, truth, where)


def _gecko_thread(path, where):
    with open(path) as f:
        d = json.load(f)
    main = [t for t in d["threads"] if t["tid"] == t["pid"]]
    check(main, "gecko: no main thread in %s %s" % ([t["tid"] for t in d["threads"]], where))
    t = main[0]
    st, fr, stk = t["stringTable"], t["frameTable"]["data"], t["stackTable"]["data"]

    def leaf(s):
        return st[fr[stk[s][1]][0]]

    markers = {}
    for m in t["markers"]["data"]:
        check(m[1] <= m[2], "gecko: marker %s ends before it starts %s" % (m, where))
        markers.setdefault(st[m[0]], []).append((m[1], m[2]))
    samples = [(s[1], leaf(s[0])) for s in t["samples"]["data"] if s[0] is not None]
    return markers, samples


def _inside(ms, spans):
    """Markers are [start, end): a GC marker ends at the first sample
    taken without the collector running."""
    return any(a <= ms < b for a, b in spans)


@timeout(120)
def test_gecko_gc_markers():
    """GC markers cover the samples taken in gc.collect(), and only those."""
    w = start_workload(primary_python(), "gc_cycles.py", 60)
    try:
        out = art_path("gc.gecko.json")
        res = run_profiler(w.pid, ["-F", FREQ, "-d", SECONDS], timeout=SECONDS + 30,
                           stats=True, outfile=out).expect_ok()
    finally:
        w.stop()
    markers, samples = _gecko_thread(out, res.where())
    gc = markers.get("GC", [])
    check(len(gc) >= 5, "gecko: %d GC markers in %d s of gc.collect() every ~25 ms %s"
          % (len(gc), SECONDS, res.where()))
    inside = [name for ms, name in samples if _inside(ms, gc)]
    wrong = [n for n in inside if not n.startswith("collecting ")]
    check(inside and len(wrong) <= 0.05 * len(inside),
          "gecko: %d of %d samples inside GC markers are not in collecting(): %s %s"
          % (len(wrong), len(inside), sorted(set(wrong))[:5], res.where()))
    spin = [ms for ms, name in samples if name.startswith("spinning ")]
    stray = [ms for ms in spin if _inside(ms, gc)]
    check(spin and len(stray) <= 0.02 * len(spin),
          "gecko: %d of %d samples in spinning() inside GC markers %s"
          % (len(stray), len(spin), res.where()))


@timeout(120)
def test_gecko_offcpu_markers():
    """Wall mode: off-CPU intervals as markers, ~90 % of the run asleep."""
    w = start_workload(primary_python(), "modes.py", "sleep", 60)
    try:
        out = art_path("wall.gecko.json")
        res = run_profiler(w.pid, ["-m", "wall", "-F", 199, "-d", SECONDS], timeout=SECONDS + 30,
                           stats=True, outfile=out).expect_ok()
    finally:
        w.stop()
    markers, samples = _gecko_thread(out, res.where())
    off = markers.get("Off-CPU", [])
    asleep = sum(b - a for a, b in off) / 1e3
    check(len(off) >= 10 and 0.75 * SECONDS <= asleep <= 1.02 * SECONDS,
          "gecko: %d off-CPU markers, %.2f s of %d s (the thread sleeps 90 %%) %s"
          % (len(off), asleep, SECONDS, res.where()))
    # an interval is where the thread left the CPU: mostly asleep, now and
    # then preempted while burning
    in_off = [name for ms, name in samples if _inside(ms, off)]
    asleep = [n for n in in_off if n.startswith("sleeping ")]
    check(in_off and len(asleep) >= 0.8 * len(in_off),
          "gecko: %d of %d samples in off-CPU intervals in sleeping() %s"
          % (len(asleep), len(in_off), res.where()))
    check(res.stats()["written"] == len(samples), "gecko: %d samples, --stats wrote %d %s"
          % (len(samples), res.stats()["written"], res.where()))


NAMES = ["producer", "hasher", "\u00fcn\u00efcode-worker-with-a-long-name", "renamed-later"]


@timeout(120)
def test_timeline_thread_names():
    """One thread per Python thread, named as threading names it."""
    w = start_workload(primary_python(), "named_threads.py", 60)
    try:
        outs = []
        for name in ("names.gecko.json", "names.trace.json"):
            out = art_path(name)
            res = run_profiler(w.pid, ["-F", 199, "-d", 1], timeout=30, outfile=out).expect_ok()
            outs.append((out, res.where()))
    finally:
        w.stop()
    (gecko, where), (trace, where2) = outs
    with open(gecko) as f:
        got = [t["name"] for t in json.load(f)["threads"]]
    missing = [n for n in NAMES if n not in got]
    check(not missing, "gecko: threads %s lack %s %s" % (got, missing, where))
    with open(trace) as f:
        got = [e["args"]["name"] for e in json.load(f) if e["name"] == "thread_name"]
    missing = [n for n in NAMES if n not in got]
    check(not missing, "chrometrace: thread names %s lack %s %s" % (got, missing, where2))


@timeout(120)
def test_timeline_across_compactions():
    """Live rows are folded every 10 s: the samples taken before a fold keep
    their place on the timeline, none lost, none doubled."""
    seconds = 12
    w = start_workload(primary_python(), "named_threads.py", 60)
    try:
        out = art_path("long.gecko.json")
        res = run_profiler(w.pid, ["-F", 199, "-d", seconds], timeout=seconds + 30,
                           stats=True, outfile=out).expect_ok()
    finally:
        w.stop()
    st = res.stats()
    with open(out) as f:
        d = json.load(f)
    n = sum(1 for t in d["threads"] for s in t["samples"]["data"] if s[0] is not None)
    check(st["compactions"] >= 1 and n == st["written"],
          "gecko: %d samples, --stats wrote %d, %d compactions %s"
          % (n, st["written"], st["compactions"], res.where()))
    for t in d["threads"]:
        times = [s[1] / 1e3 for s in t["samples"]["data"] if s[0] is not None]
        check(times == sorted(times), "gecko %s: times go back %s" % (t["name"], res.where()))
    first = min(s[1] for t in d["threads"] for s in t["samples"]["data"]) / 1e3
    last = max(s[1] for t in d["threads"] for s in t["samples"]["data"]) / 1e3
    check(first <= EDGE_S and last >= seconds - EDGE_S,
          "gecko: samples from %.2f s to %.2f s of a %d s run %s"
          % (first, last, seconds, res.where()))
