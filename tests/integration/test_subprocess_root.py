"""-p PID -s where PID is not Python (a shell, a supervisor): its Python
descendants are profiled, those running at the start and those it starts
later; with none yet, one line says so and the run goes on."""
import os
import subprocess

import common
from common import WORKLOADS, Workload, check, spawn, start_profiler, timeout
from test_all_python import by_pid, read_tagged, wait_profiling, warnings, with_roots


def _shell(script, *args):
    proc = spawn(["/bin/sh", "-c", script] + [str(a) for a in args], stdin=subprocess.PIPE,
                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=WORKLOADS)
    return Workload(proc, {}, "sh")


@timeout(60)
def test_subprocesses_of_a_shell(python):
    """sh starts one spinner, then (once told, after the profiler started)
    a second: both are profiled under -p SHELL -s."""
    sh = _shell('"$0" spinner.py 20 & read x; "$0" spinner.py 20 & wait', python.path)
    first = read_tagged(sh, "READY", 30)["pid"]
    prof = start_profiler(sh.pid, ["-s", "--pids", "-F", 199, "-d", 3, "-v"])
    wait_profiling(prof)
    sh.proc.stdin.write(b"go\n")
    sh.proc.stdin.flush()
    second = read_tagged(sh, "READY", 30)["pid"]
    res = prof.finish(30).expect_ok()
    procs = by_pid(with_roots(res))
    for pid in (first, second):
        p = procs.get(pid)
        check(p is not None and p.samples_in("spin_inner") > 0,
              "spinner pid %d not profiled; pids %s %s" % (pid, sorted(procs), res.where()))
    check(sh.pid not in procs, "the shell itself has samples")


@timeout(60)
def test_subprocesses_of_a_shell_none_yet():
    """A shell with no Python descendant: nothing profiled, so exit 1 (no
    run that profiled nothing exits 0), an empty profile, and the line
    saying there is no Python descendant (yet)."""
    sh = _shell("read x")
    res = start_profiler(sh.pid, ["-s", "-d", 1]).finish(30)
    check(res.rc == 1, "exit %r, want 1 (nothing profiled) %s" % (res.rc, res.where()))
    check(res.out == b"", "profile not empty: %r" % res.out[:200])
    check(any("not a Python process" in l and "descendants" in l for l in res.err_lines()),
          "want a line about the descendants, got %r %s" % (res.err_lines(), res.where()))
    bad = start_profiler(sh.pid, ["-d", 1]).finish(30)
    check(bad.rc == 1 and "not a Python process" in bad.err_text,
          "without -s a shell is still refused %s" % bad.where())
