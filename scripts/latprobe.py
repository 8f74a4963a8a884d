#!/usr/bin/env python3
"""Where a real application's sample goes: the cost of a sample as a
distribution (median, quartiles) rather than a mean, and the distinct user
pages it reads, for the bench's depth-N chain hot, the same chain with the
caches and TLB evicted between samples (its leaf walks a large buffer a page
and a line at a time), the evicted chain with every code object on a page of
its own, and the Django site of `make bench`, interleaved round by round.

Builds two measuring variants of the BPF program (bpf/latprobe.bpf.h) from
this tree into a scratch directory: -DTB_LAT_PROBE (every sample timed into
a histogram) and -DTB_LAT_PAGES (the pages counted too, which slows the
walk: its times are not used).

  sudo python3 scripts/latprobe.py [--python PY] [--rounds N] [--hz HZ]
                                   [--depth D] [--mib M] [--only a,b] [--phases]
  sudo python3 scripts/latprobe.py --compare A,B [--rounds N] [--hz HZ]
  sudo python3 scripts/latprobe.py --native [--rounds N] [--levels L]
  sudo python3 scripts/latprobe.py --decompose [--python PY] [--rounds N]

--decompose: how much of a Django sample is cold state, from six builds
alternated round by round against one running site: probe (as shipped,
timed), pages (the pages counted: warmed's own overhead), warmed (before
each walk, the user pages the last walk of the process read, whole, and
every line of this CPU's scratch area are read; "after" is the time from
there), twice (each event samples twice and only the second is timed:
the same stack, every cache, TLB and predictor warm, a known stack by
then), twicenew (the same, but the first pushes no stack: the second
pushes it as a new one, the record's cost with the rest warm) and reads
(each user read timed: frame-stack windows and frames read aside; the
thread state and code objects).

--phases: also the median time from each sample's start to the walk's
steps (lat_phase() in bpf/tachyon.bpf.c: layout copied, thread state,
current frame, memo begun, leaf step, walked, new or known stack pushed).
--compare prints the frame-stack reads per sample and the "walked" point.

--native: what --native=fp and --native add to a sample (the whole sample
timed in 40 ns buckets), against Python-only sampling of the same targets,
the three interleaved round by round: the bench's native workload (Python
depth 26, L map() levels below it: ~22 native frames at 2, ~28 at 3) on
Debian's 3.15 (frame pointers), one target per CPU, -F 999.

--compare takes tachyon-bpf binaries built with BPF_EXTRA=-DTB_LAT_PROBE
(say from two commits) and runs them in turn, A B A B ..., against one
running Django site: only such interleaved ratios mean anything on a loaded
host.
"""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402

REPO = os.path.dirname(HERE)
BUCKETS, STEP_NS, TAIL_NS, PAGES, FINE_NS, PHASES = 128, 500, 100, 128, 40, 8   # as bpf/latprobe.bpf.h
# struct lat_probe (bpf/latprobe.bpf.h) in 8-byte words, in order; the fields
# read_probe() sums over CPUs (the others are per-sample scratch).
PROBE_LAYOUT = (
    ("hist", BUCKETS), ("walks", 1), ("upages", 1), ("ureads", 1), ("t0", 1), ("n", 1),
    ("page", PAGES), ("t1", 1), ("tail", BUCKETS), ("fine", BUCKETS), ("unative", 1),
    ("nframes", 1), ("pt", PHASES), ("ph", PHASES * BUCKETS), ("wn", 1), ("wb", 1),
    ("wreads", 1), ("wbytes", 1), ("touch", BUCKETS), ("tt", 1), ("prevn", 1),
    ("prev", PAGES), ("rest", BUCKETS), ("pbuf", 4096 // 8), ("rd", 2), ("rdn", 2),
    ("rdh", 2 * BUCKETS), ("rdsum", 2), ("rdcnt", 2), ("skip", 1))
PROBE_AT, PROBE_WORDS = {}, 0
for _name, _n in PROBE_LAYOUT:
    PROBE_AT[_name], PROBE_WORDS = PROBE_WORDS, PROBE_WORDS + _n
PROBE_FIELDS = tuple((f, n) for f, n in PROBE_LAYOUT
                     if f in ("hist", "walks", "upages", "tail", "fine", "unative", "ph",
                              "wreads", "wbytes", "touch", "rest", "rdh", "rdsum", "rdcnt"))
# Where lat_phase(k) stands in bpf/tachyon.bpf.c: each phase's time is from the sample's start.
PHASE_NAMES = ("layout copied", "thread state", "current frame", "memo begun", "walked",
               "new stack pushed", "known stack", "leaf step")


VARIANTS = (("probe", "-DTB_LAT_PROBE"), ("pages", "-DTB_LAT_PROBE -DTB_LAT_PAGES"))
# --decompose's builds (what each does: the docstring above).
DECOMPOSE = VARIANTS + (
    ("warmed", "-DTB_LAT_PROBE -DTB_LAT_PAGES -DTB_LAT_PRETOUCH=2 -DTB_LAT_PRETOUCH_K=2"),
    ("twice", "-DTB_LAT_PROBE -DTB_LAT_TWICE"),
    ("twicenew", "-DTB_LAT_PROBE -DTB_LAT_TWICE -DTB_LAT_TWICE_NEW"),
    ("reads", "-DTB_LAT_PROBE -DTB_LAT_READS"))


def build(work, kinds=("probe", "pages"), variants=VARIANTS):
    """{name: binary} for each variant named in kinds, built from this tree's sources."""
    src = os.path.join(work, "src")
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", "build*", "tachyon-bpf", "tests", "doc", "*.json"))
    bins = {}
    for name, extra in variants:
        if name not in kinds:
            continue
        subprocess.run(["make", "-s", "-C", src, "-j2", "OUT=" + os.path.join(work, name),
                        "BPF_EXTRA=" + extra, "tachyon-bpf"], check=True,
                       stdout=subprocess.DEVNULL)
        bins[name] = os.path.join(work, "tachyon-bpf-" + name)
        os.rename(os.path.join(src, "tachyon-bpf"), bins[name])
    return bins


def map_ids(pid):
    """The ids of the BPF maps process pid holds (another helper's profiler
    may have a lat_probe map too)."""
    ids = set()
    fdinfo = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(fdinfo):
        try:
            with open(os.path.join(fdinfo, fd)) as f:
                for line in f:
                    if line.startswith("map_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def read_probe(pid):
    """pid's lat_probe map summed over CPUs: (histogram, walks, user pages)."""
    shown = subprocess.run(["bpftool", "-j", "map", "show"],
                           capture_output=True, text=True, check=True).stdout
    mine = [m["id"] for m in json.loads(shown)
            if m.get("name") == "lat_probe" and m["id"] in map_ids(pid)]
    out = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(mine[0])],
                         capture_output=True, text=True, check=True).stdout
    got = {name: [0] * n for name, n in PROBE_FIELDS}
    for entry in json.loads(out):
        for v in entry["values"]:
            raw = bytes(int(b, 16) for b in v["value"])
            words = struct.unpack_from("<%dQ" % PROBE_WORDS, raw)
            for name, n in PROBE_FIELDS:
                at, acc = PROBE_AT[name], got[name]
                for i in range(n):
                    acc[i] += words[at + i]
    walks = got["walks"][0]
    per = max(walks, 1)
    read_probe.tail = got["tail"]
    read_probe.fine = got["fine"]
    read_probe.touch = got["touch"]
    read_probe.rest = got["rest"]
    read_probe.rdh = [got["rdh"][k * BUCKETS:(k + 1) * BUCKETS] for k in range(2)]
    read_probe.rd = [(got["rdsum"][k] / per, got["rdcnt"][k] / per) for k in range(2)]
    read_probe.native = got["unative"][0]
    read_probe.phases = [got["ph"][k * BUCKETS:(k + 1) * BUCKETS] for k in range(PHASES)]
    read_probe.window = (got["wreads"][0] / per, got["wbytes"][0] / per)
    return got["hist"], walks, got["upages"][0]


def quantile(hist, q, step=STEP_NS):
    total, acc = sum(hist), 0
    for i, n in enumerate(hist):
        acc += n
        if total and acc >= q * total:
            return (i + 0.5) * step
    return float("nan")


def measure(binary, pid, hz, seconds, extra=()):
    """Profile pid with a variant for `seconds` after it attached; the
    map read just before it stops."""
    p = subprocess.Popen([binary, "-v", "-p", str(pid), "-F", str(hz), "-o", os.devnull]
                         + list(extra), stderr=subprocess.PIPE, text=True)
    try:
        for line in p.stderr:
            if "profiling" in line:
                break
        time.sleep(seconds)
        got = read_probe(p.pid)
    finally:
        p.terminate()
        p.communicate()
    return got


def chain(py, script, mode, depth, mib, binary, hz, seconds):
    ws = [bench.start(py, script, mode, depth, mib) for _ in range(bench.NCPUS)]
    try:
        return measure(binary, ",".join(str(w.pid) for w in ws), hz, seconds)
    finally:
        bench.stop(ws)


def app(py, binary, hz, seconds):
    master, url = bench.app_server(py, bench.app_env(py))
    cl = [subprocess.Popen([sys.executable, "-c", bench.CLIENT, url]) for _ in range(2)]
    try:
        time.sleep(1.0)
        return measure(binary, master.pid, hz, seconds, ("-s",))
    finally:
        bench.stop(cl + [master])


def compare(py, binaries, rounds, hz, seconds):
    """Each binary's per-sample medians against one running site."""
    master, url = bench.app_server(py, bench.app_env(py))
    cl = [subprocess.Popen([sys.executable, "-c", bench.CLIENT, url]) for _ in range(2)]
    meds = {b: [] for b in binaries}
    tails = {b: [] for b in binaries}
    try:
        time.sleep(1.0)
        for r in range(rounds):
            for b in binaries:
                hist, walks, _ = measure(b, master.pid, hz, seconds, ("-s",))
                meds[b].append(quantile(hist, 0.5))
                tail = read_probe.tail
                tails[b].append(quantile(tail, 0.5, TAIL_NS))
                walked = quantile(read_probe.phases[4], 0.5, TAIL_NS)
                print("  frame-stack windows per sample %.1f, %.0f bytes" % read_probe.window)
                print("round %d %-28s walks %5d  median %6.0f ns (quartiles %6.0f-%6.0f)"
                      "  walked at %5.0f  tail %5.0f ns (%5.0f-%5.0f)"
                      % (r, b, walks, meds[b][-1], quantile(hist, 0.25),
                         quantile(hist, 0.75), walked, tails[b][-1], quantile(tail, 0.25, TAIL_NS),
                         quantile(tail, 0.75, TAIL_NS)), flush=True)
    finally:
        bench.stop(cl + [master])
    base = statistics.median(meds[binaries[0]])
    tbase = statistics.median(tails[binaries[0]])
    print("\n%s, -F %d, Django site, medians of %d rounds (tail: sample_done's"
          " new-stack and count steps)" % (py, hz, rounds))
    for b in binaries:
        m, t = statistics.median(meds[b]), statistics.median(tails[b])
        print("%-28s %8.0f ns  %.2fx   tail %6.0f ns  %.2fx" % (b, m, m / base, t, t / tbase))


def decompose(py, rounds, hz, seconds):
    """What of a Django sample is cold state: six builds of this tree
    against one running site, alternated round by round."""
    names = [n for n, _ in DECOMPOSE]
    work = tempfile.mkdtemp(prefix="tb-latprobe-")
    try:
        bins = build(work, names, DECOMPOSE)
        master, url = bench.app_server(py, bench.app_env(py))
        cl = [subprocess.Popen([sys.executable, "-c", bench.CLIENT, url]) for _ in range(2)]
        cols = ("whole", "tstate", "leaf", "walked", "known", "new", "touch", "after",
                "frame reads", "n", "other reads", "n")
        res = {n: [] for n in names}
        try:
            time.sleep(1.0)
            for r in range(rounds):
                for n in names[r % len(names):] + names[:r % len(names)]:
                    hist, walks, _ = measure(bins[n], master.pid, hz, seconds, ("-s",))
                    ph = read_probe.phases
                    row = [quantile(hist, 0.5)] + [quantile(ph[k], 0.5, TAIL_NS)
                                                   for k in (1, 7, 4, 6, 5)]
                    row += [quantile(read_probe.touch, 0.5, TAIL_NS),
                            quantile(read_probe.rest, 0.5, TAIL_NS)]
                    for k in range(2):
                        row += [quantile(read_probe.rdh[k], 0.5, TAIL_NS), read_probe.rd[k][1]]
                    res[n].append(row)
                    print("round %d %-8s walks %5d  " % (r, n, walks)
                          + "  ".join("%s %.0f" % (c, v) for c, v in zip(cols, row)
                                      if v == v), flush=True)
        finally:
            bench.stop(cl + [master])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n%s, -F %d, Django site, ns: medians over %d rounds of per-sample medians"
          " (phases from the sample's start; touch/after: warmed's pre-reads, then the"
          " rest)" % (py, hz, rounds))
    print("%-8s" % "" + "".join("%12s" % c for c in cols))
    out = {}
    for n in names:
        med = [statistics.median(col) for col in zip(*res[n])]
        out[n] = dict(zip(cols, med))
        print("%-8s" % n + "".join("%12s" % ("-" if v != v else "%.1f" % v
                                              if c == "n" else "%.0f" % v)
                                   for c, v in zip(cols, med)))
    return out


NATIVE_VARIANTS = (("plain", ()), ("fp", ("--native=fp",)), ("tables", ("--native",)))


def native(binary, rounds, hz, seconds, levels):
    """Medians of what --native=fp and --native add to a sample, interleaved."""
    py = os.path.join(bench.SID_BIN, "python3.15-host")
    if not os.path.exists(py):
        print("latprobe --native: missing %s (run scripts/real-pythons.sh)" % py)
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(bench.NATIVE_WORKLOAD)
        script = f.name
    meds = {n: [] for n, _ in NATIVE_VARIANTS}
    frames = []
    try:
        for r in range(rounds):
            order = NATIVE_VARIANTS[r % 3:] + NATIVE_VARIANTS[:r % 3]
            for name, extra in order:
                ws = [bench.start(py, script, 26, levels) for _ in range(bench.NCPUS)]
                try:
                    _, walks, _ = measure(binary, ",".join(str(w.pid) for w in ws), hz,
                                          seconds, extra)
                finally:
                    bench.stop(ws)
                meds[name].append(quantile(read_probe.fine, 0.5, FINE_NS))
                if name == "fp":
                    frames.append(read_probe.native / max(walks, 1))
            print("round %d: plain %5.0f  --native=fp %5.0f (%+4.0f)  --native %5.0f (%+4.0f) ns"
                  % (r, meds["plain"][-1], meds["fp"][-1], meds["fp"][-1] - meds["plain"][-1],
                     meds["tables"][-1], meds["tables"][-1] - meds["plain"][-1]), flush=True)
    finally:
        os.unlink(script)
    fp = statistics.median(f - p for f, p in zip(meds["fp"], meds["plain"]))
    tb = statistics.median(t - p for t, p in zip(meds["tables"], meds["plain"]))
    print("\nDebian's 3.15, depth 26, %d map() levels (%.1f native frames), -F %d: per-sample"
          " medians (40 ns buckets), median of %d rounds' differences: --native=fp %+.0f ns"
          " (target 500 at 20 frames), --native %+.0f ns (target 3000)"
          % (levels, statistics.median(frames), hz, rounds, fp, tb))
    return {"levels": levels, "frames": statistics.median(frames), "fp_extra_ns": fp,
            "tables_extra_ns": tb, "rounds": rounds}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="/usr/bin/python3.11")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--hz", type=int, default=999)
    ap.add_argument("--depth", type=int, default=30)
    ap.add_argument("--mib", type=int, default=128)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--only", default="hot,evict,scatter,django")
    ap.add_argument("--bin", help="a directory with tachyon-bpf-probe and -pages already built")
    ap.add_argument("--compare", help="comma-separated -DTB_LAT_PROBE binaries, alternated")
    ap.add_argument("--phases", action="store_true",
                    help="each sample's time to the walk's steps (lat_phase), medians")
    ap.add_argument("--decompose", action="store_true",
                    help="a Django sample's cold state apart: data warmed, sampled twice")
    ap.add_argument("--native", action="store_true", help="--native's extra per sample")
    ap.add_argument("--levels", type=int, default=2, help="--native: map() levels")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("tachyon-bpf: latprobe: needs root (run: sudo python3 %s)" % sys.argv[0])
    if a.native:
        native_main(a)
        return
    if a.decompose:
        decompose(a.python, a.rounds, a.hz, a.seconds)
        return
    if a.compare:
        compare(a.python, a.compare.split(","), a.rounds, a.hz, a.seconds)
        return
    work = tempfile.mkdtemp(prefix="tb-latprobe-")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(bench.WORKLOAD)
        script = f.name
    try:
        if a.bin:
            bins = {k: os.path.join(a.bin, "tachyon-bpf-" + k) for k in ("probe", "pages")}
        else:
            bins = build(work)
        kinds = {
            "hot": lambda b: chain(a.python, script, "spin", a.depth, 2000, b, a.hz, a.seconds),
            "evict": lambda b: chain(a.python, script, "evict", a.depth, a.mib, b, a.hz,
                                     a.seconds),
            "scatter": lambda b: chain(a.python, script, "scatter", a.depth, a.mib, b, a.hz,
                                       a.seconds),
            "django": lambda b: app(a.python, b, a.hz, a.seconds),
        }
        names = a.only.split(",")
        res = {n: {"med": [], "q1": [], "q3": [], "pages": []} for n in names}
        for r in range(a.rounds):
            for n in names:
                hist, walks, _ = kinds[n](bins["probe"])
                probed = read_probe.phases
                _, pwalks, pages = kinds[n](bins["pages"])
                x = res[n]
                x["med"].append(quantile(hist, 0.5))
                x["q1"].append(quantile(hist, 0.25))
                x["q3"].append(quantile(hist, 0.75))
                x["pages"].append(pages / max(pwalks, 1))
                print("round %d %-8s walks %6d  median %6.0f ns (quartiles %6.0f-%6.0f)"
                      "  user pages/sample %5.1f" % (r, n, walks, x["med"][-1], x["q1"][-1],
                                                     x["q3"][-1], x["pages"][-1]), flush=True)
                if a.phases:
                    print("  phases, median ns from the start: " + ", ".join(
                        "%s %.0f (%d)" % (PHASE_NAMES[k], quantile(probed[k], 0.5, TAIL_NS),
                                          sum(probed[k]))
                        for k in range(PHASES)), flush=True)
        print("\n%s, -F %d, depth %d chain, %d MiB evicted; medians over %d rounds"
              % (a.python, a.hz, a.depth, a.mib, a.rounds))
        print("%-8s %12s %20s %16s" % ("", "median ns", "quartiles", "user pages"))
        base = statistics.median(res[names[0]]["med"])
        for n in names:
            x = res[n]
            m = statistics.median(x["med"])
            print("%-8s %12.0f %9.0f-%-10.0f %16.1f   %.2fx" % (
                n, m, statistics.median(x["q1"]), statistics.median(x["q3"]),
                statistics.median(x["pages"]), m / base))
    finally:
        os.unlink(script)
        shutil.rmtree(work, ignore_errors=True)


def native_main(a):
    work = tempfile.mkdtemp(prefix="tb-latprobe-")
    try:
        binary = (os.path.join(a.bin, "tachyon-bpf-probe") if a.bin
                  else build(work, ("probe",))["probe"])
        return native(binary, a.rounds, a.hz, a.seconds, a.levels)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
