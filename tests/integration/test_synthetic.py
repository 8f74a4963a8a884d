"""Synthetic CPython 3.14 and 3.15 processes (tests/synthetic/fakepy.c).

Neither version can be installed here, so fakepy lays out that version's
_Py_DebugOffsets, interpreter, thread states, frames, code objects, strings
and location tables in its own memory and spins two threads on a few fixed
Python stacks. The profiler must report exactly those stacks (`fakepy VERSION
--expect` prints them): names in all three str kinds, lines from real
location tables, entry/C-stack shim frames skipped, and for 3.15 nothing
past the thread state's sentinel base frame. Also: the versions it must
refuse, and --force-version.

Not parametrised: the target is fakepy, not an interpreter. Needs
`make build/tests/fakepy`.
"""
import os
import subprocess

from common import (REPO, Workload, art_path, check, check_stats_invariant, fail,
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


def _start(version):
    """Start `fakepy VERSION` and wait for `READY <pid>`."""
    errp = art_path("fakepy-%s.stderr" % version)
    with open(errp, "wb") as errf:
        proc = spawn([_fakepy(), version], stdin=subprocess.DEVNULL,
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
def test_synthetic_314t_refused():
    _expect_refusal("3.14t", ["free-threaded"])
