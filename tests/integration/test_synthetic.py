"""Synthetic CPython 3.14, 3.15, 3.13t and 3.14t processes (tests/synthetic/fakepy.c).

Neither version can be installed here, so fakepy lays out that version's
_Py_DebugOffsets, interpreter, thread states, frames, code objects, strings
and location tables in its own memory and spins two threads on a few fixed
Python stacks. The profiler must report exactly those stacks (`fakepy VERSION
--expect` prints them): names in all three str kinds, lines from real
location tables, entry/C-stack shim frames skipped, and for 3.15 nothing
past the thread state's sentinel base frame. Also: the versions it must
refuse, and --force-version. The free-threaded 3.13t and 3.14t (CPython's
real offsets; no such build can be had here) run main and three workers in
parallel, pinned round robin to the CPUs: each thread's stacks are checked
against its own, in the profile (--threads), in `dump`, and --mode gil is
refused on them.

Not parametrised: the target is fakepy, not an interpreter. Needs
`make build/tests/fakepy`.
"""
import os
import re
import subprocess

from common import (REPO, Workload, art_path, binary, check, check_stats_invariant, fail,
                    fmt_stacks, run_profiler, spawn, timeout, total)

FAKEPY = os.path.join(REPO, "build", "tests", "fakepy")
# fakepy's frame past the 3.15 sentinel: any sample showing it is wrong.
BOGUS = "must_not_appear"
PROFILE = ["-F", 499, "-d", 2, "--full-filenames"]


def _fakepy():
    check(os.path.isfile(FAKEPY) and os.access(FAKEPY, os.X_OK),
          "%s missing (run make build/tests/fakepy)" % FAKEPY)
    return FAKEPY


def _expected(version):
    """The exact collapsed stacks, without counts, that fakepy promises."""
    out = subprocess.run([_fakepy(), version, "--expect"], capture_output=True,
                         timeout=10)
    check(out.returncode == 0, "fakepy %s --expect: exit %d: %r"
          % (version, out.returncode, out.stderr[:300]))
    lines = out.stdout.decode("utf-8").split("\n")
    check(lines[-1] == "" and all(lines[:-1]) and len(lines) > 2,
          "fakepy %s --expect printed %r" % (version, out.stdout[:300]))
    want = set(lines[:-1])
    check(not any(BOGUS in line for line in want),
          "fakepy --expect lists the post-sentinel frame: %r" % want)
    return want


def _start(version, extra=()):
    """Start `fakepy VERSION` and wait for `READY <pid>`."""
    errp = art_path("fakepy-%s.stderr" % version)
    with open(errp, "wb") as errf:
        proc = spawn([_fakepy(), version] + list(extra), stdin=subprocess.DEVNULL,
                     stdout=subprocess.PIPE, stderr=errf, cwd="/")
    w = Workload(proc, {}, "fakepy " + version)
    line = w.read_line(10)
    if line is None:
        with open(errp, "rb") as f:
            err = f.read().decode("utf-8", "replace").strip()
        fail("fakepy %s not ready within 10 s (rc %s): %s" % (version, proc.poll(), err))
    check(line == "READY %d" % proc.pid,
          "fakepy %s printed %r, want 'READY %d'" % (version, line, proc.pid))
    return w


def _stack_key(s):
    return ";".join(f.raw for f in s.frames)


def _check_exact(res, want, what):
    stacks = res.stacks()
    got = {}
    for s in stacks:
        got[_stack_key(s)] = s.count
    bogus = [k for k in got if BOGUS in k]
    check(not bogus, "%s: the frame past the 3.15 sentinel base frame was reported: %r"
          % (what, bogus[:2]))
    missing = sorted(want - set(got))
    extra = sorted(set(got) - want)
    check(not missing and not extra,
          "%s: stacks differ from fakepy's.\n  missing: %r\n  unexpected: %r\n  top: %s"
          % (what, missing, [(k, got[k]) for k in extra][:4], fmt_stacks(stacks, 6)))
    check(total(stacks) >= 100, "%s: only %d samples %s" % (what, total(stacks), res.where()))


def _check_stats(res, what):
    st = res.stats()
    check_stats_invariant(st, res.where())
    check(st["written"] == total(res.stacks()),
          "%s: --stats written %d but the profile holds %d samples"
          % (what, st["written"], total(res.stacks())))
    # Nothing in fakepy is unreadable, racy or missing: every count is exact.
    nonzero = {k: st[k] for k in ("lost", "partial", "truncated", "bad_code",
                                  "unknown_code", "unreadable_code") if st.get(k)}
    nonzero.update({"dropped." + k: v for k, v in st["dropped"].items() if v})
    check(not nonzero, "%s: samples or frames went wrong: %r" % (what, nonzero))


def _profile_exact(version, extra=()):
    want = _expected(version)
    w = _start(version)
    what = "fakepy %s%s" % (version, " " + " ".join(extra) if extra else "")
    res = run_profiler(w.pid, PROFILE + list(extra), timeout=30, stats=True)
    res.expect_ok()
    _check_exact(res, want, what)
    _check_stats(res, what)
    check(w.alive(), "%s: fakepy died while profiled" % what)


@timeout(60)
def test_names_read_late():
    """Every code object's name is unreadable for the first 1.5 s of the
    run (fakepy --late-names: a negative str length), as a name being
    written or memory scribbled over would be: the names are read again
    later, and the whole profile ends up named, not `<unknown 0x...>`."""
    want = _expected("3.14")
    w = _start("3.14", ["--late-names", "1500"])
    what = "fakepy 3.14 --late-names 1500"
    res = run_profiler(w.pid, ["-F", 499, "-d", 4, "--full-filenames"], timeout=30, stats=True)
    res.expect_ok()
    _check_exact(res, want, what)
    _check_stats(res, what)
    st = res.stats()
    # Proof that the first reads failed (else the test shows nothing): each
    # code object in the profile was read at least twice.
    codes = {(f.name, f.file) for s in res.stacks() for f in s.frames}
    check(st["code_reads"] >= 2 * len(codes),
          "%s: %d code object reads for %d code objects: the names were never unreadable?"
          % (what, st["code_reads"], len(codes)))
    check(w.alive(), "%s: fakepy died while profiled" % what)


def _expect_refusal(version, must):
    w = _start(version)
    res = run_profiler(w.pid, PROFILE, timeout=30)
    what = "fakepy %s" % version
    check(res.rc == 1, "%s: expected exit 1, got rc %s %s" % (what, res.rc, res.where()))
    check(res.out == b"", "%s: stdout not empty: %r" % (what, res.out[:200]))
    lines = res.err_lines()
    check(len(lines) == 1, "%s: expected one line on stderr, got %r" % (what, lines))
    line = lines[0]
    check(line.startswith("tachyon-bpf: ") and str(w.pid) in line,
          "%s: stderr line should start with 'tachyon-bpf: ' and name pid %d: %r"
          % (what, w.pid, line))
    for m in must:
        check(m in line, "%s: message lacks %r: %r" % (what, m, line))
    return line


@timeout(60)
def test_synthetic_314():
    _profile_exact("3.14")


@timeout(60)
def test_synthetic_315():
    _profile_exact("3.15")


@timeout(60)
def test_synthetic_316_refused():
    _expect_refusal("3.16", ["3.16.0"])


@timeout(60)
def test_synthetic_316_forced():
    """--force-version on an unknown newer version: the newest layout (3.15's, which fakepy uses)."""
    _profile_exact("3.16", ["--force-version"])


@timeout(60)
def test_synthetic_315b1_refused():
    _expect_refusal("3.15b1", ["3.15.0b1", "--force-version"])


@timeout(60)
def test_synthetic_315b1_forced():
    _profile_exact("3.15b1", ["--force-version"])


@timeout(60)
def test_synthetic_315t_refused():
    """A free-threaded build of a version with no free-threaded layout."""
    _expect_refusal("3.15t", ["3.15.0t", "free-threaded", "3.13t and 3.14t"])


# ---- free-threaded 3.13t / 3.14t -------------------------------------------

FT_THREADS = ("fakepy", "ft-worker-1", "ft-worker-2", "ft-worker-3")
_THREAD_ROOT = re.compile(r"^thread (\d+) (.+)$")


def _expected_by_thread(version):
    """{thread name: set of collapsed stacks} from `fakepy VERSION --expect-threads`."""
    out = subprocess.run([_fakepy(), version, "--expect-threads"], capture_output=True,
                         timeout=10)
    check(out.returncode == 0, "fakepy %s --expect-threads: exit %d" % (version, out.returncode))
    want = {}
    for line in out.stdout.decode("utf-8").splitlines():
        name, stack = line.split("\t")
        want.setdefault(name, set()).add(stack)
    check(sorted(want) == sorted(FT_THREADS), "fakepy %s threads: %r" % (version, sorted(want)))
    return want


def _cpu_of_threads(pid):
    """{thread name: the CPU it last ran on} (fakepy pins them)."""
    cpus = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
            comm = f.read().strip()
        with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
            stat = f.read()
        cpus[comm] = int(stat.rsplit(")", 1)[1].split()[36])   # field 39: processor
    return cpus


def _profile_free_threaded(version):
    """Every thread's samples show that thread's own stacks, exactly, with
    lines from its own copy of the bytecode (3.14t), and the threads pinned
    to each CPU are all sampled: walks run in parallel on both CPUs."""
    want = _expected_by_thread(version)
    w = _start(version)
    what = "fakepy %s --threads" % version
    res = run_profiler(w.pid, ["-F", 499, "-d", 3, "--full-filenames", "--threads"],
                       timeout=30, stats=True)
    res.expect_ok()
    _check_stats(res, what)
    per_thread, tids = {}, {}
    for s in res.stacks():
        m = _THREAD_ROOT.match(s.frames[0].raw)
        check(m, "%s: stack without a thread root: %s" % (what, s.short()))
        name, stack = m.group(2), ";".join(f.raw for f in s.frames[1:])
        check(name in want, "%s: unknown thread %r" % (what, name))
        check(stack in want[name], "%s: thread %s shows a stack that is not its own: %s"
              % (what, name, stack))
        tids.setdefault(name, set()).add(m.group(1))
        per_thread[name] = per_thread.get(name, 0) + s.count
    check(all(len(t) == 1 for t in tids.values()), "%s: one tid per thread: %r" % (what, tids))
    low = {n: per_thread.get(n, 0) for n in FT_THREADS if per_thread.get(n, 0) < 10}
    check(not low, "%s: threads sampled too little: %r (all: %r)" % (what, low, per_thread))
    cpus = _cpu_of_threads(w.pid)
    if os.cpu_count() >= 2:
        check(len(set(cpus.values())) >= 2, "%s: threads not spread over CPUs: %r" % (what, cpus))
        for cpu in set(cpus.values()):
            on = [n for n in FT_THREADS if cpus.get(n) == cpu]
            check(sum(per_thread.get(n, 0) for n in on) >= 20,
                  "%s: CPU %d's threads %r hardly sampled: %r" % (what, cpu, on, per_thread))
    check(w.alive(), "%s: fakepy died while profiled" % what)


@timeout(90)
def test_synthetic_313t():
    _profile_exact("3.13t")
    _profile_free_threaded("3.13t")


@timeout(90)
def test_synthetic_314t():
    _profile_exact("3.14t")
    _profile_free_threaded("3.14t")


@timeout(60)
def test_synthetic_ft_gil_mode_refused():
    """--mode gil means nothing without a GIL: one line, exit 2, nothing on stdout."""
    for version, name in (("3.13t", "3.13.18t"), ("3.14t", "3.14.10t")):
        w = _start(version)
        res = run_profiler(w.pid, ["-m", "gil", "-d", 2], timeout=30)
        what = "fakepy %s -m gil" % version
        check(res.rc == 2, "%s: expected exit 2, got %s %s" % (what, res.rc, res.where()))
        check(res.out == b"", "%s: stdout not empty: %r" % (what, res.out[:200]))
        lines = res.err_lines()
        check(len(lines) == 1, "%s: expected one line on stderr, got %r" % (what, lines))
        for m in ("tachyon-bpf: --mode gil: ", "Python %s has no GIL" % name, "free-threaded",
                  "-m cpu"):
            check(m in lines[0], "%s: message lacks %r: %r" % (what, m, lines[0]))
        w.stop()


def _dump_threads(pid):
    """{thread name: [(function, line), ...] innermost first} from `dump -p`."""
    p = subprocess.run([binary(), "dump", "-p", str(pid)], capture_output=True, timeout=20)
    where = "[dump -p %d: rc %d; stderr: %r]" % (pid, p.returncode, p.stderr[:300])
    check(p.returncode == 0, "dump failed " + where)
    threads, cur = {}, None
    for line in p.stdout.decode("utf-8").splitlines():
        m = re.match(r"^Thread \d+ \((.+)\): ", line)
        if m:
            cur = threads.setdefault(m.group(1), [])
            continue
        m = re.match(r'^  File "(.+)", line (\d+), in (.+)$', line)
        if m and cur is not None:
            cur.append((m.group(3), int(m.group(2))))
    return threads, p.stdout.decode("utf-8")


@timeout(60)
def test_synthetic_ft_dump():
    """dump: every thread of 3.13t / 3.14t, each at one of its own stacks."""
    for version in ("3.13t", "3.14t"):
        want = {}
        for name, stacks in _expected_by_thread(version).items():
            for s in stacks:
                frames = re.findall(r"(?:^|;)(.+?) \((?:[^;]+):(\d+)\)", s)
                want.setdefault(name, []).append([(f, int(n)) for f, n in reversed(frames)])
        w = _start(version)
        threads, out = _dump_threads(w.pid)
        what = "fakepy %s dump" % version
        check("Python %s" % {"3.13t": "3.13.18t", "3.14t": "3.14.10t"}[version] in out,
              "%s: no version line: %r" % (what, out[:300]))
        check(sorted(threads) == sorted(FT_THREADS), "%s: threads %r" % (what, sorted(threads)))
        for name, frames in threads.items():
            check(frames in want[name], "%s: thread %s at %r, not one of its stacks %r"
                  % (what, name, frames, want[name]))
        w.stop()
