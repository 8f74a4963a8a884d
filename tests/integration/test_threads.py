"""Threads: 8 busy threads in worker_0..worker_7 all appear, each on its own."""
import re
import subprocess

from common import (binary, check, check_stats_invariant, fail, fmt_stacks, run_profiler,
                    start_workload, timeout, total, one_build_per_version)


@timeout(60)
@one_build_per_version
def test_threads(python):
    w = start_workload(python, "threads8.py", 60)
    res = run_profiler(w.pid, ["-F", 499, "-d", 2], timeout=30, stats=True).expect_ok()
    stacks = res.stacks()
    n = total(stacks)
    check(n >= 200, "only %d samples in 2 s at 499 Hz %s" % (n, res.where()))
    per = {"worker_%d" % i: 0 for i in range(8)}
    errors = []
    for s in stacks:
        ws = [f.name for f in s.frames if re.match(r"^worker_\d$", f.name)]
        if len(ws) > 1:
            errors.append("stack mixes threads: %s" % s.short(4))
        if not ws:
            continue
        per[ws[0]] += s.count
        if s.leaf.name != ws[0]:
            errors.append("worker stack with leaf %r: %s" % (s.leaf.raw, s.short(4)))
        if s.root.file != "threading.py":
            errors.append("thread stack root %r, want a frame in threading.py "
                          "(Thread._bootstrap)" % s.root.raw)
        idx = s.names.index(ws[0])
        if idx == 0 or s.frames[idx - 1].name != python.shown("Thread.run"):
            errors.append("%s not called from Thread.run: %s" % (ws[0], s.short(4)))
    missing = [k for k, v in sorted(per.items()) if v == 0]
    if missing:
        errors.insert(0, "threads missing from the profile: %s (counts %s)" % (missing, per))
    few = [k for k, v in per.items() if 0 < v < n / 8 / 5]
    if few:
        errors.append("threads with < 1/5 of their fair share of %d samples: %s (counts %s)"
                      % (n, few, per))
    if errors:
        fail("; ".join(sorted(set(errors), key=errors.index)[:6]) + " [top: %s] %s"
             % (fmt_stacks(stacks, 4), res.where()))


def _comm(pid, tid):
    with open("/proc/%d/task/%d/comm" % (pid, tid)) as f:
        return f.read().strip()


@timeout(90)
@one_build_per_version
def test_thread_names(python):
    """--threads roots and pprof labels carry Python's thread names
    (threading), renamed ones as renamed, names longer than the kernel's
    15-byte comm in full; a thread threading does not know (started with
    _thread) shows its comm."""
    import gzip
    from common import art_path
    from test_formats import _decode_pprof, pprof_labels

    w = start_workload(python, "named_threads.py", 60)
    tids = dict((name, tid) for name, tid in w.info["tids"].items())
    want = dict((tid, name) for name, tid in tids.items() if name not in ("raw", "MainThread"))
    want[tids["raw"]] = _comm(w.pid, tids["raw"])
    res = run_profiler(w.pid, ["-F", 499, "-d", 2, "--threads"], timeout=30).expect_ok()
    got = {}
    for s in res.stacks():
        m = re.match(r"^thread (\d+) (.+)$", s.root.raw)
        check(m, "stack without a `thread TID NAME` root: %s" % s.short(3))
        got[int(m.group(1))] = m.group(2)
    for tid, name in sorted(want.items()):
        check(got.get(tid) == name, "thread %d: root frame name %r, want %r (all: %s) %s"
              % (tid, got.get(tid), name, got, res.where()))
    out = art_path("names.pb.gz")
    res = run_profiler(w.pid, ["-F", 499, "-d", 2], timeout=30, outfile=out).expect_ok()
    with open(out, "rb") as f:
        prof = _decode_pprof(gzip.decompress(f.read()))
    seen = {}
    for s in prof["samples"]:
        lab = pprof_labels(prof, s)
        seen[lab.get("tid")] = lab.get("thread_name")
    for tid, name in sorted(want.items()):
        check(seen.get(tid) == name, "pprof: thread %d labelled thread_name=%r, want %r (all: %s)"
              % (tid, seen.get(tid), name, seen))
    out = art_path("names.json")
    res = run_profiler(w.pid, ["-F", 499, "-d", 2], timeout=30, outfile=out).expect_ok()
    import json
    with open(out, encoding="utf-8") as f:
        names = [p["name"] for p in json.load(f)["profiles"]]
    for tid, name in sorted(want.items()):
        check(any(n.endswith(" tid %d %s" % (tid, name)) for n in names),
              "speedscope: no profile named '... tid %d %s': %s" % (tid, name, names))


@timeout(90)
def test_top_thread_names():
    """top --threads: the thread rows carry Python's names."""
    from common import binary, primary_python
    from test_top import Tmux

    w = start_workload(primary_python(), "named_threads.py", 60)
    tids = w.info["tids"]
    want = ["thread %d %s" % (tids[n], n) for n in ("producer", "hasher", "renamed-later")]
    t = Tmux("names", "%s top -p %d -F 499 --threads" % (binary(), w.pid))
    try:
        t.wait_screen(lambda s: all(x in s for x in want), 30,
                      "rows %s" % ", ".join(repr(x) for x in want))
        t.keys("q")
        check(t.wait_exit(15) == 0, "top did not exit 0 on q%s" % t.stderr())
    finally:
        t.close()


@timeout(90)
def test_thread_rename_after_compaction():
    """A thread renamed during the run carries its new name once the names
    are read again, after the next compaction (every 10 s)."""
    from common import primary_python

    w = start_workload(primary_python(), "named_threads.py", 60, 4)
    tid = w.info["tids"]["producer"]
    res = run_profiler(w.pid, ["-F", 199, "-d", 14, "--threads"], timeout=40).expect_ok()
    roots = set(s.root.raw for s in res.stacks() if s.root.raw.startswith("thread %d " % tid))
    want = {"thread %d producer" % tid, "thread %d producer-2" % tid}
    check(roots == want, "producer's root frames %s, want %s (before and after the rename) %s"
          % (sorted(roots), sorted(want), res.where()))


MANY = 600  # more than the BPF side's thread list walk (TB_MAX_THREADS, 512)


@timeout(120)
@one_build_per_version
def test_many_threads_oldest_sampled(python):
    """A process with more threads than the BPF side searches (the newest 512
    of a thread list): its oldest thread, the main one, busy, is sampled, with
    no sample dropped for want of a thread state (userspace enters every
    thread's state in the BPF side's cache); in wall mode every thread shows;
    `dump` lists them all. Before: 0 samples ("no thread state"), dump 512."""
    w = start_workload(python, "many_threads.py", MANY, 90, ready_timeout=60)
    main = w.info["main"]
    res = run_profiler(w.pid, ["-F", 99, "-d", 2], timeout=60, stats=True).expect_ok()
    st = res.stats()
    check_stats_invariant(st, res.where())
    n = total(res.stacks())
    spin = sum(s.count for s in res.stacks() if s.leaf.name == "spin_main")
    check(st["dropped"]["no_tstate"] == 0,
          "%d samples dropped with no thread state found %s" % (st["dropped"]["no_tstate"],
                                                               res.where()))
    check(st["tstates_seeded"] >= MANY, "only %d thread states entered in the BPF cache for "
          "%d threads %s" % (st["tstates_seeded"], MANY, res.where()))
    # -F 99 on the tick is ~83 Hz (every 3rd tick at HZ 250) or 99 Hz: the main
    # thread spins the whole 2 s, give or take the host's other jobs.
    check(n >= 60 and spin >= 0.9 * n, "%d samples, %d in spin_main: the busy oldest thread "
          "not sampled [%s] %s" % (n, spin, fmt_stacks(res.stacks(), 3), res.where()))

    res = run_profiler(w.pid, ["-F", 49, "-d", 2, "-m", "wall", "--threads"], timeout=60,
                       stats=True).expect_ok()
    tids = set()
    for s in res.stacks():
        m = re.match(r"^thread (\d+) ", s.root.raw)
        check(m, "stack without a `thread TID NAME` root: %s" % s.short(3))
        tids.add(int(m.group(1)))
    check(len(tids) == MANY and main in tids, "wall mode: %d threads of %d in the profile "
          "(main %d %s) %s" % (len(tids), MANY, main, "in" if main in tids else "missing",
                              res.where()))

    p = subprocess.run([binary(), "dump", "-p", str(w.pid)], capture_output=True, timeout=60)
    out = p.stdout.decode("utf-8", "replace")
    heads = re.findall(r"^Thread (\d+) ", out, re.M)
    check(p.returncode == 0 and len(heads) == MANY and str(main) in heads,
          "dump: exit %d, %d threads listed of %d, main %s: %s" %
          (p.returncode, len(heads), MANY, str(main) in heads, p.stderr.decode()[:300]))
    check("in spin_main" in out.split("Thread %d " % main, 1)[1].split("\nThread ", 1)[0],
          "dump: the main thread's stack does not show spin_main")
