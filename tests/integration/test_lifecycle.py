"""Signals and closed pipes: the profile is written, the exit is clean."""
import os
import re
import signal
import subprocess
import time

from common import python_independent
from common import (art_path, binary, check, check_stats_invariant, fail, fmt_stacks,
                    sigdesc, spawn, start_profiler, start_workload, timeout, total)

CRASH_RE = re.compile(r"Segmentation|Aborted|core dumped|Traceback|AddressSanitizer|"
                      r"panic|double free|corrupted", re.I)


def _signal_case(python, sig):
    """The signal comes ~1.5 s into sampling (after the start-up, however
    long a busy machine makes it: -v says when sampling is on)."""
    from test_all_python import wait_profiling
    w = start_workload(python, "spinner.py", 60)
    prof = start_profiler(w.pid, ["-F", 499, "-d", 60, "-v"], stats=True)
    wait_profiling(prof)
    time.sleep(1.5)
    if prof.proc.poll() is not None:
        fail("profiler exited before the signal: %s" % prof.finish(1).where())
    t_sig = time.monotonic()
    prof.signal(sig)
    res = prof.finish(15)
    lag = time.monotonic() - t_sig
    check(res.rc == 0, "after %s the profiler %s, expected exit 0 %s"
          % (sig.name, sigdesc(res.rc), res.where()))
    check(lag < 5, "profiler took %.1f s to exit after %s" % (lag, sig.name))
    check(w.alive(), "the target died with the profiler")
    stacks = res.stacks()
    n = total(stacks)
    check(n >= 100, "only %d samples after ~1.5 s at 499 Hz %s" % (n, res.where()))
    check(any(s.leaf.name == "spin_inner" for s in stacks),
          "spin_inner missing [top: %s]" % fmt_stacks(stacks, 4))
    st = res.stats()
    check_stats_invariant(st, res.where())
    check(st["written"] == n, "stats written=%d but the profile holds %d samples "
          "(samples not drained before writing?)" % (st["written"], n))
    check(0.3 < st["duration_s"] < 5,
          "stats duration_s %.2f, profiled ~1.5 s before %s" % (st["duration_s"], sig.name))
    check(CRASH_RE.search(res.err_text) is None, "stderr: %s" % res.err_text[-300:])


@timeout(40)
@python_independent
def test_sigint(python):
    _signal_case(python, signal.SIGINT)


@timeout(40)
@python_independent
def test_sigint_during_start(python):
    """Ctrl-C while the BPF program is still loading: a clean exit (0 with
    what there is, or 1 with a line), never death by the signal."""
    w = start_workload(python, "spinner.py", 60)
    prof = start_profiler(w.pid, ["-F", 499, "-d", 60], stats=True)
    # While the BPF object is being loaded: its first map exists, the
    # program's verification (most of the start-up) is still to come.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not _has_bpf_map(prof.pid):
        time.sleep(0.001)
    prof.signal(signal.SIGINT)
    res = prof.finish(15)
    _clean_exit(res.rc, res.err_text, "SIGINT during start-up")


@timeout(40)
@python_independent
def test_sigterm(python):
    _signal_case(python, signal.SIGTERM)


@timeout(40)
@python_independent
def test_sighup(python):
    _signal_case(python, signal.SIGHUP)


def _has_bpf_map(pid):
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            if "bpf-map" in os.readlink("/proc/%d/fd/%s" % (pid, fd)):
                return True
        except OSError:
            pass
    return False


def _clean_exit(rc, err, what):
    check(rc is not None and 0 <= rc < 128,
          "%s: profiler %s (expected exit 0 or a clean error exit)" % (what, sigdesc(rc)))
    check(rc in (0, 1), "%s: unexpected exit %d" % (what, rc))
    check(CRASH_RE.search(err) is None, "%s: crash on stderr: %s" % (what, err[-300:]))


@timeout(40)
@python_independent
def test_pipe_head(python):
    """`tachyon-bpf ... | head -1` (a shell pipeline, as users type it)."""
    w = start_workload(python, "threads8.py", 60)
    rcfile = art_path("pipe.rc")
    errfile = art_path("pipe.stderr")
    outfile = art_path("pipe.stdout")
    script = ('"$0" -p %d -F 499 -d 2 2>%s | head -1 >%s; echo "${PIPESTATUS[0]}" >%s'
              % (w.pid, errfile, outfile, rcfile))
    p = spawn(["bash", "-c", script, binary()], stdin=subprocess.DEVNULL)
    try:
        p.wait(timeout=25)
    except subprocess.TimeoutExpired:
        fail("`tachyon-bpf ... | head -1` did not finish within 25 s (hangs on a closed pipe?)")
    rc = int(open(rcfile).read().strip())
    err = open(errfile, "rb").read().decode("utf-8", "replace")
    check(rc < 128, "profiler died from %s under `| head -1` (shell status %d); stderr: %s"
          % (sigdesc(-(rc - 128)), rc, err[-300:]))
    _clean_exit(rc, err, "| head -1")
    out = open(outfile, "rb").read().decode("utf-8", "replace")
    check(out.count("\n") == 1 and re.match(r"^.+ \d+\n$", out),
          "head -1 got %r, expected one collapsed line" % out[:200])


@timeout(40)
@python_independent
def test_pipe_closed_early(python):
    """The reader is gone before the profile is written (e.g. `| true`):
    writes fail with EPIPE/SIGPIPE; the profiler must still exit cleanly."""
    w = start_workload(python, "threads8.py", 60)
    r, wfd = os.pipe()
    try:
        prof = start_profiler(w.pid, ["-F", 499, "-d", 2], stdout=wfd)
    finally:
        os.close(wfd)
        os.close(r)
    res = prof.finish(20)
    _clean_exit(res.rc, res.err_text, "closed stdout pipe")
