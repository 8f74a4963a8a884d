"""Bad input and failing environments: one line `tachyon-bpf: <what>: <why>
(<what to do>)` on stderr, nothing on stdout, exit 2 (usage) or 1 (runtime).

Not parametrised: targets use the first interpreter of the list; the
unsupported-version cases use pyenv 3.7.16, 3.6.15 and 2.7.18.
"""
import re
import subprocess

from common import (check, max_sample_rate, primary_python, pyenv_python, run_profiler,
                    spawn, start_workload, timeout, unused_pid)

LINE_RE = re.compile(r"^tachyon-bpf: [^:]+(: .+)? \(.+\)$")
NOT_ROOT = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _expect_error(pids, args, rc, *, must=(), must_not=(), env=None, prefix=(),
                  what="", max_elapsed=None):
    res = run_profiler(pids, args, timeout=20, env=env, prefix=prefix)
    where = res.where()
    check(res.rc == rc, "%s: expected exit %d, got %s %s"
          % (what, rc, _desc(res.rc), where))
    check(res.out == b"", "%s: stdout not empty: %r" % (what, res.out[:200]))
    lines = res.err_text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    check(len(lines) == 1, "%s: expected exactly one line on stderr, got %d: %r"
          % (what, len(lines), res.err_text[:400]))
    line = lines[0]
    check(line.startswith("tachyon-bpf: "), "%s: stderr line does not start with "
          "'tachyon-bpf: ': %r" % (what, line))
    check(LINE_RE.match(line), "%s: stderr line is not `tachyon-bpf: <what>: <why> "
          "(<what to do>)`: %r" % (what, line))
    for m in must:
        check(re.search(m, line), "%s: message lacks %r: %r" % (what, m, line))
    for m in must_not:
        check(not re.search(m, line), "%s: message should not contain %r: %r"
              % (what, m, line))
    if max_elapsed is not None:
        check(res.elapsed < max_elapsed, "%s: failed only after %.1f s (should fail before "
              "profiling): %r" % (what, res.elapsed, line))
    return line


def _desc(rc):
    from common import sigdesc
    return sigdesc(rc)


def _target():
    return start_workload(primary_python(), "spinner.py", 60)


# ---- usage errors: exit 2

@timeout(30)
def test_error_freq_zero():
    _expect_error(_target().pid, ["-F", "0", "-d", 1], 2, what="-F 0")


@timeout(30)
def test_error_freq_negative():
    _expect_error(_target().pid, ["-F", "-5", "-d", 1], 2, what="-F -5")


@timeout(30)
def test_error_freq_not_number():
    w = _target()
    _expect_error(w.pid, ["-F", "abc", "-d", 1], 2, what="-F abc")
    _expect_error(w.pid, ["-F", "99x", "-d", 1], 2, what="-F 99x")


@timeout(30)
def test_error_freq_too_high():
    mx = max_sample_rate()
    _expect_error(_target().pid, ["-F", str(mx + 1), "-d", 1], 2,
                  must=[r"perf_event_max_sample_rate|%d" % mx],
                  what="-F %d (max %d)" % (mx + 1, mx))


@timeout(30)
def test_error_rate_unsafe():
    """Timer sampling above 20 kHz per CPU livelocked this 2-vCPU VM (-c 20000,
    50 kHz, for minutes): refused with the way out, in -F and -c form, and
    for a hardware event that fell back to cpu-clock."""
    pid = _target().pid
    _expect_error(pid, ["-F", "20001", "-d", 1], 2, must=[r"-F 20000 or less", r"--unsafe-rate"],
                  what="-F 20001")
    _expect_error(pid, ["-c", "20000", "-d", 1], 2,
                  must=[r"50000 interrupts per second", r"-c 50000 or more", r"--unsafe-rate"],
                  what="-c 20000")
    # 20000.4 Hz, which an integer rate rounded down to the limit (README: below 50000 ns)
    _expect_error(pid, ["-c", "49999", "-d", 1], 2, must=[r"-c 50000 or more"], what="-c 49999")
    _expect_error(pid, ["-e", "task-clock", "-c", "10000", "-d", 1], 2,
                  must=[r"task-clock every 10000 ns"], what="-e task-clock -c 10000")
    res = run_profiler(pid, ["-F", 20000, "-d", 1, "-o", "/dev/null"], timeout=20)
    check(res.rc == 0, "-F 20000 (the limit itself) failed %s" % res.where())


@timeout(30)
def test_error_unknown_event():
    _expect_error(_target().pid, ["-e", "bogus-event", "-d", 1], 2, must=[r"bogus-event"],
                  what="-e bogus-event")


@timeout(30)
def test_error_missing_pid():
    _expect_error(None, ["-F", "99", "-d", 1], 2, what="no -p")


# ---- runtime errors: exit 1

@timeout(30)
def test_error_no_such_pid():
    pid = unused_pid()
    _expect_error(pid, ["-d", 1], 1, must=[str(pid)], what="-p %d (no such pid)" % pid)


@timeout(30)
def test_error_not_python():
    p = spawn(["sleep", "60"], stdin=subprocess.DEVNULL)
    _expect_error(p.pid, ["-d", 1], 1, must=[str(p.pid)], what="-p <sleep 60>")


@timeout(30)
def test_error_python_3_7():
    """The newest Python too old: named with its micro version, the range
    starting at 3.8."""
    w = start_workload(pyenv_python("3.7.16"), "spinner.py", 60)
    _expect_error(w.pid, ["-d", 1], 1, must=[r"Python 3\.7\.16 is too old", r"3\.8 to 3\.1\d"],
                  what="python 3.7.16 target")


@timeout(30)
def test_error_not_root():
    _expect_error(_target().pid, ["-d", 1], 1, prefix=NOT_ROOT,
                  must=["CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE"],
                  what="as uid 65534 without capabilities")


@timeout(30)
def test_error_missing_one_capability():
    caps = ["--inh-caps=+bpf,+perfmon", "--ambient-caps=+bpf,+perfmon"]
    _expect_error(_target().pid, ["-d", 1], 1, prefix=NOT_ROOT + caps,
                  must=["CAP_SYS_PTRACE"], must_not=["CAP_BPF", "CAP_PERFMON"],
                  what="as uid 65534 with CAP_BPF+CAP_PERFMON only")


@timeout(30)
def test_error_unwritable_output():
    """-o, and --stats too, are checked before the run (--stats once failed
    only after it)."""
    for opt, path in (("-o", "/nonexistent-dir/out.folded"),
                      ("--stats", "/nonexistent-dir/s.json")):
        _expect_error(_target().pid, ["-d", 3, opt, path], 1, must=[path], max_elapsed=2.5,
                      what="%s %s" % (opt, path))


@timeout(30)
def test_error_no_btf():
    _expect_error(_target().pid, ["-d", 1], 1, env={"TACHYON_BTF": "/nonexistent"},
                  must=["BTF"], what="TACHYON_BTF=/nonexistent")


def _old_python(version, exe):
    """A sleeping interpreter from pyenv too old for spinner.py's syntax: wait
    until its libpython is mapped, as the profiler would look for it."""
    import os
    import time
    from common import PYENV_ROOT
    path = os.path.join(PYENV_ROOT, "versions", version, "bin", exe)
    check(os.path.exists(path), "%s is missing (pyenv %s)" % (path, version))
    p = spawn([path, "-c", "import time; time.sleep(60)"], stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open("/proc/%d/maps" % p.pid) as f:
            if "libpython" in f.read():
                return p
        time.sleep(0.05)
    return p


@timeout(30)
def test_error_python_2_7():
    """No _PyRuntime in 2.7: still named as the Python it is, too old."""
    p = _old_python("2.7.18", "python2.7")
    _expect_error(p.pid, ["-d", 1], 1, must=[r"Python 2\.7\b", "too old", r"3\.8 to 3\.1\d"],
                  must_not=["not a Python process"], what="python 2.7.18 target")


def _python2_unnamed():
    """Debian 11's python2.7 (static: no libpython) copied as bin/python, as a
    Python 2 virtualenv lays it out: no file of the process names a version,
    only its symbols tell Python 2. Fetched once by scripts/fetch-debian.sh."""
    import os
    import shutil
    from common import REPO, art_path
    res = subprocess.run([os.path.join(REPO, "scripts", "fetch-debian.sh"), "bullseye",
                          "python2.7-minimal", "libpython2.7-minimal"],
                         capture_output=True, text=True, timeout=600)
    check(res.returncode == 0, "cannot fetch Debian 11's python2.7: %s" % res.stderr.strip())
    root = res.stdout.strip().splitlines()[-1]
    exe = art_path("venv2/bin/python")
    os.makedirs(os.path.dirname(exe), exist_ok=True)
    shutil.copy(os.path.join(root, "usr", "bin", "python2.7"), exe)
    env = dict(os.environ, PYTHONHOME=os.path.join(root, "usr"))
    p = spawn([exe, "-c", "import sys, time; sys.stdout.write('up\\n'); sys.stdout.flush(); "
               "time.sleep(60)"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env)
    check(p.stdout.readline() == b"up\n", "python2.7 copy did not start")
    return p


@timeout(120)
def test_error_python_2_unnamed():
    """A Python 2 whose files do not name it (bin/python, static) was 'not a
    Python process': one line naming Python 2.7 as too old instead."""
    p = _python2_unnamed()
    _expect_error(p.pid, ["-d", 1], 1, must=[r"Python 2\.7 is too old", r"3\.8 to 3\.1\d"],
                  must_not=["not a Python process"], what="static python2.7 as bin/python")


@timeout(30)
def test_error_python_3_6():
    p = _old_python("3.6.15", "python3.6")
    _expect_error(p.pid, ["-d", 1], 1, must=[r"Python 3\.6\b", "too old"],
                  must_not=["not a Python process"], what="python 3.6.15 target")


@timeout(30)
def test_error_unsupported_says_it_once():
    """'unsupported Python: Python 3.9 is not supported' said it twice."""
    w = start_workload(pyenv_python("3.7.16"), "spinner.py", 60)
    line = _expect_error(w.pid, ["-d", 1], 1, must=[r"Python 3\.7\.16 is too old"],
                         what="python 3.7.16 target")
    check(len(re.findall(r"support", line)) <= 1, "the message repeats itself: %r" % line)


@timeout(30)
def test_error_output_unknown_extension():
    """-o x.xml (no format ends so) used to get collapsed text silently."""
    import os
    from common import art_path
    path = art_path("x.xml")
    _expect_error(_target().pid, ["-d", 1, "-o", path], 2, must=[r"\.xml", r"\.svg"],
                  what="-o x.xml")
    check(not os.path.exists(path), "-o x.xml: the file was created")


@timeout(30)
def test_error_pyspy_without_equivalent():
    """py-spy options we have no equivalent for get a pointer, not 'unknown option':
    dump --native (record takes it)."""
    from common import binary
    for flag in ("--native", "-n"):
        p = subprocess.run([binary(), "dump", "-p", str(_target().pid), flag],
                           capture_output=True, timeout=20)
        e = p.stderr.decode().strip()
        check(p.returncode == 2 and "\n" not in e and LINE_RE.match(e) and "native" in e
              and "record --native" in e and "unknown option" not in e,
              "dump %s: exit %d, stderr %r; want one line pointing to record --native"
              % (flag, p.returncode, e))


@timeout(30)
def test_error_subcommand_help_pointer():
    """`top --bogus` points to top's help, not the main one."""
    from common import binary
    for cmd in ("top", "dump"):
        p = subprocess.run([binary(), cmd, "--bogus"], capture_output=True, timeout=10)
        e = p.stderr.decode().strip()
        check(p.returncode == 2 and "\n" not in e and "tachyon-bpf %s --help" % cmd in e,
              "%s --bogus: exit %d, stderr %r; want a pointer to `tachyon-bpf %s --help`"
              % (cmd, p.returncode, e, cmd))


@timeout(30)
def test_error_idle_target():
    """An idle target in cpu mode: 0 samples is an error that says -m wall."""
    import os
    from common import art_path
    script = art_path("idle.py")
    with open(script, "w") as f:
        f.write("import os, time\nprint('READY {\"pid\": %d}' % os.getpid(), flush=True)\n"
                "time.sleep(60)\n")
    w = start_workload(primary_python(), None, script_path=script)
    out = art_path("idle.svg")
    res = run_profiler(w.pid, ["-d", 1, "-o", out], timeout=20)
    lines = res.err_lines()
    check(res.rc == 1, "idle target: %s, want exit 1 %s" % (_desc(res.rc), res.where()))
    check(len(lines) == 1 and "-m wall" in lines[0] and LINE_RE.match(lines[0]),
          "idle target: want one line pointing to -m wall, got %r" % lines)
    check(not os.path.exists(out), "idle target: %s was left behind (%d bytes)"
          % (out, os.path.getsize(out) if os.path.exists(out) else 0))


@timeout(60)
def test_error_busy_target_event_never_fires():
    """A busy target that the event never hit (a period longer than the run,
    page faults it does not take) was blamed as idle: 'used no CPU ... use
    -m wall'. The line says it ran, and what to change."""
    w = _target()
    for args, words in ((["-c", 4294967297], ["sampling period", "-c 4294967297"]),
                        (["-e", "page-faults", "-c", 1, "--unsafe-rate"],
                         ["page-faults", "never fired", "another event"])):
        _expect_error(w.pid, ["-d", 2] + args, 1, must=[r"ran \d+\.\d+ s of CPU"] + words,
                             must_not=["used no CPU", "-m wall"], what=" ".join(map(str, args)))


@timeout(60)
def test_error_stopped_during_setup():
    """SIGINT while BPF is being loaded: 'used no CPU in 0.0 s' blamed the
    target; the line says the run was stopped before sampling began."""
    import signal
    import time
    from common import start_profiler
    w = _target()
    prof = start_profiler(w.pid, ["-d", 10])
    time.sleep(0.1)
    prof.signal(signal.SIGINT)
    res = prof.finish(20)
    lines = res.err_lines()
    check(res.rc == 1 and len(lines) == 1 and "before sampling began" in lines[0]
          and "no CPU" not in lines[0] and LINE_RE.match(lines[0]),
          "SIGINT during set-up: want exit 1 and one line saying the run was stopped before "
          "sampling began %s" % res.where())


@timeout(30)
def test_error_subprocesses_no_python():
    """-s -p SHELL whose children never ran Python ended with '--all-python:
    no CPython process ran', an option not given: the line names -p PID -s."""
    p = spawn(["sleep", "60"], stdin=subprocess.DEVNULL)
    res = run_profiler(p.pid, ["-s", "-d", 1], timeout=20)
    last = res.err_lines()[-1] if res.err_lines() else ""
    check(res.rc == 1 and ("-p %d -s" % p.pid) in last and "--all-python" not in last
          and "children" in last and LINE_RE.match(last),
          "-s -p (not Python): want exit 1 and a last line naming -p PID -s %s" % res.where())


@timeout(30)
def test_error_btf_not_btf():
    """--btf FILE that is no BTF reached the BPF loader: 'BPF: cannot load the
    BPF program: Unknown error 4001'. Checked first, one line naming it."""
    _expect_error(_target().pid, ["--btf", "/etc/passwd", "-d", 1], 1,
                  must=["--btf /etc/passwd", "not a BTF file"], must_not=["4001", "BPF:"],
                  max_elapsed=2.5, what="--btf /etc/passwd")
