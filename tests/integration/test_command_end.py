"""-- COMMAND when the run ends first (-d): the command is ended (SIGTERM,
then SIGKILL after 2 s) unless --keep-running is given."""
import json
import os
import time

import common
from common import python_independent
from common import WORKLOADS, art_path, check, run_profiler, timeout

IGNORE_TERM = ("import signal, time, os; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
               "print('PID', os.getpid(), flush=True); time.sleep(60)")


def _launch(args, cmd, timeout_s=30):
    outfile = art_path("end-%d.folded" % len(os.listdir(common.artifacts())))
    res = run_profiler(None, list(args) + ["-o", outfile, "--"] + [str(c) for c in cmd],
                       timeout=timeout_s)
    res.outfile = outfile
    return res


def _child_pid(res, key):
    for line in res.out.decode("utf-8", "replace").split("\n"):
        if line.startswith(key + " "):
            rest = line[len(key) + 1:]
            return json.loads(rest)["pid"] if rest.startswith("{") else int(rest)
    common.fail("the command printed no %s line: stdout %r %s" % (key, res.out[:200], res.where()))


def _gone(pid, what, res):
    """Check pid has exited; kill it if not (it is ours: no leftovers)."""
    alive = _alive(pid)
    if alive:
        os.kill(pid, 9)
    check(not alive, "the command (pid %d) %s %s" % (pid, what, res.where()))


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@timeout(60)
@python_independent
def test_command_ended_after_duration(python):
    """-d 2 -- python (sleeping 60 s): the profiler exits after about 2 s,
    with status 0, the profile written, and the command is gone."""
    cmd = [python.path, os.path.join(WORKLOADS, "modes.py"), "nap", 60]
    res = _launch(["-d", 2, "-m", "wall"], cmd).expect_ok()
    _gone(_child_pid(res, "READY"), "still runs after the profiler exited", res)
    # Far less than the command's 60 s (BPF loading is slow on a busy VM).
    check(res.elapsed < 20, "the profiler took %.1f s for -d 2" % res.elapsed)
    check(common.total(res.stacks()) > 0, "empty profile %s" % res.where())


@timeout(60)
def test_command_ignoring_sigterm_killed():
    """A command that ignores SIGTERM gets SIGKILL 2 s later. Wall mode: the
    command sleeps, and a cpu-mode run of it has a sample only when a tick
    happens to land in its ~10 ms start-up (CI: 'no samples', exit 1)."""
    python = common.primary_python()
    res = _launch(["-d", 1, "-m", "wall"], [python.path, "-c", IGNORE_TERM]).expect_ok()
    _gone(_child_pid(res, "PID"), "survived", res)
    check(3 <= res.elapsed < 20, "the profiler took %.1f s: want -d 1 + the 2 s grace"
          % res.elapsed)
    check(any("SIGKILL" in l for l in res.err_lines()), "no word of SIGKILL %s" % res.where())


@timeout(60)
def test_command_keep_running():
    """--keep-running: the command outlives the run."""
    python = common.primary_python()
    cmd = [python.path, os.path.join(WORKLOADS, "modes.py"), "nap", 60]
    res = _launch(["-d", 1, "-m", "wall", "--keep-running"], cmd).expect_ok()
    pid = _child_pid(res, "READY")
    try:
        check(_alive(pid), "the command (pid %d) was ended despite --keep-running %s"
              % (pid, res.where()))
    finally:
        if _alive(pid):
            os.kill(pid, 9)
    bad = run_profiler([os.getpid()], ["--keep-running", "-d", 1])
    check(bad.rc == 2 and "--keep-running" in bad.err_text and len(bad.err_lines()) == 1,
          "--keep-running without --: want exit 2 and one line %s" % bad.where())
