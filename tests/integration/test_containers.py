"""A Python process in its own mount and pid namespaces (a container without
the container runtime): `unshare --mount --pid --fork --mount-proc`, with the
interpreter at a path that exists only inside (a tmpfs over /srv with the
install bind-mounted or copied into it, and a tmpfs hiding /root/.pyenv).

The profiler must find _PyRuntime by reading the interpreter's ELF through
/proc/PID/root, and match threads by their namespaced ids (the
native_thread_id the interpreter stores is the tid inside the namespace: the
main thread is pid 1 there).
"""
import json
import os
import signal
import subprocess
import time

import common
from common import (PYENV_ROOT, WORKLOADS, Workload, art_path, check, check_stats_invariant,
                    fail, run_profiler, spawn, start_profiler, timeout)
from test_all_python import by_pid, wait_profiling, with_roots
from common import old_python_too

INSIDE = "/srv/tb-ct-py"        # the interpreter's path inside the namespace


def _container_cmd(python, script_args):
    """argv of a shell run as pid 1 of new mount+pid namespaces, which
    makes `python` available only at INSIDE and execs it."""
    pyenv_versions = os.path.join(PYENV_ROOT, "versions") + "/"
    real = os.path.realpath(python.path)
    if real.startswith(pyenv_versions):
        # A shared-library build: bind its whole prefix, find libpython there.
        prefix = real[:real.index("/bin/")]
        setup = ("mount --bind %s %s && mount -t tmpfs tb-hide %s && "
                 "export LD_LIBRARY_PATH=%s/lib && " % (prefix, INSIDE, PYENV_ROOT, INSIDE))
        exe = INSIDE + real[len(prefix):]
    else:
        # A static build (Debian's python3.11, Debian unstable's): copy the
        # executable alone; the standard library stays where it is. A
        # wrapper script (Debian 11's python3.9-host) names the executable
        # it execs as sys.executable: that one is copied.
        out = subprocess.run([real, "-c", "import sys; print(sys.prefix); print(sys.executable)"],
                             capture_output=True, text=True, timeout=30).stdout.split("\n")
        prefix, real = out[0].strip(), os.path.realpath(out[1].strip())
        setup = "cp %s %s/python && export PYTHONHOME=%s && " % (real, INSIDE, prefix)
        exe = INSIDE + "/python"
    script = ("set -e; mount -t tmpfs tb-srv /srv && mkdir -p %s && %s exec %s %s"
              % (INSIDE, setup, exe, " ".join(script_args)))
    return ["unshare", "--mount", "--pid", "--fork", "--mount-proc", "--kill-child",
            "sh", "-c", script]


def _start_ns(python, script_args):
    """`python script_args...` as pid 1 of new mount+pid namespaces; its
    Workload (READY read: w.info) with w.host_pid, its pid outside."""
    check(not os.path.exists(INSIDE), "%s exists outside the namespace: the test would "
          "not tell the two paths apart" % INSIDE)
    argv = _container_cmd(python, script_args)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("PYTHONPATH", None)
    errp = art_path("container-%d.stderr" % len(common._PROCS))
    with open(errp, "wb") as errf:
        proc = spawn(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errf,
                     env=env)
    w = Workload(proc, {}, "container")
    line = w.read_line(60)
    if not line or not line.startswith("READY "):
        with open(errp, "rb") as f:
            fail("container not ready (%r, rc %s): %s" % (line, proc.poll(),
                                                          f.read().decode()[-400:]))
    # unshare forks the namespace's pid 1; sh execs Python in it.
    with open("/proc/%d/task/%d/children" % (proc.pid, proc.pid)) as f:
        kids = [int(x) for x in f.read().split()]
    check(len(kids) == 1, "unshare has children %s" % kids)
    host_pid = kids[0]
    with open("/proc/%d/status" % host_pid) as f:
        nspid = [l.split()[1:] for l in f if l.startswith("NSpid:")][0]
    check(nspid == [str(host_pid), "1"], "NSpid of %d: %s" % (host_pid, nspid))
    w.info, w.host_pid = json.loads(line[6:]), host_pid
    return w


def _start_container(python, seconds=60):
    w = _start_ns(python, [os.path.join(WORKLOADS, "ct_app.py"), str(seconds)])
    info = w.info
    check(info["pid"] == 1 and info["executable"].startswith(INSIDE),
          "container READY %r" % info)
    with open("/proc/%d/maps" % w.host_pid) as f:
        maps = f.read()
    check(INSIDE in maps, "the interpreter is not mapped from %s" % INSIDE)
    return w


def _check_container(res, w, what, roots):
    procs = by_pid(with_roots(res)) if roots else None
    st = res.stats()
    check_stats_invariant(st, res.where())
    if procs is not None:
        p = procs.get(w.host_pid)
        check(p is not None, "%s: the container's Python (host pid %d) has no samples; pids "
              "%s %s" % (what, w.host_pid, sorted(procs), res.where()))
        check(p.roots == {"ct_app.py"}, "%s: roots %s" % (what, sorted(p.roots)))
        stacks = p.stacks
    else:
        stacks = res.stacks()
    main = sum(s.count for s in stacks if s.names[-1:] == ["container_main_fn"])
    thread = sum(s.count for s in stacks if s.names[-1:] == ["container_thread_fn"])
    n = sum(s.count for s in stacks)
    check(main >= 20 and thread >= 20, "%s: container_main_fn %d, container_thread_fn %d "
          "samples of %d [%s]" % (what, main, thread, n, common.fmt_stacks(stacks, 4)))
    for s in stacks:
        if s.names[-1:] == ["container_main_fn"]:
            check(s.names == ["<module>", "container_main_fn"], "%s: %s" % (what, s.short()))
        # (module code objects run at import time may be freed before they
        # are read: <unknown> is allowed there, not in the running code)
        if s.names[-1:] in (["container_main_fn"], ["container_thread_fn"]):
            check(not any(f.raw.startswith("<unknown") for f in s.frames),
                  "%s: unreadable code in %s" % (what, s.short()))
    return st


@old_python_too
@timeout(90)
def test_container_all_python(python):
    """--all-python started first; then the container starts: it is found
    (exec event, ELF through /proc/PID/root) and both threads are sampled."""
    prof = start_profiler(None, ["--all-python", "-F", 199, "-d", 60, "--pids", "-v"],
                          stats=True)
    wait_profiling(prof)
    w = _start_container(python)
    time.sleep(2)
    prof.signal(signal.SIGINT)
    res = prof.finish(30).expect_ok()
    st = _check_container(res, w, "--all-python", True)
    check(st["dropped"]["no_tstate"] <= 0.05 * st["collected"] + 5,
          "no_tstate %d of %d: namespaced thread ids not matched?"
          % (st["dropped"]["no_tstate"], st["collected"]))


@timeout(90)
def test_container_pid():
    """-p HOST_PID of a process already running in the container (Debian's
    static 3.11: _PyRuntime in the executable, copied inside)."""
    w = _start_container(common.Interp("/usr/bin/python3.11"))
    time.sleep(0.3)
    res = run_profiler(w.host_pid, ["-F", 199, "-d", 1.5], timeout=30, stats=True).expect_ok()
    st = _check_container(res, w, "-p", False)
    check(st["dropped"]["no_tstate"] == 0, "no_tstate %d: namespaced thread ids not matched?"
          % st["dropped"]["no_tstate"])
    # --pids/--subprocesses root frame names the process by its host pid.
    res = run_profiler(w.host_pid, ["-F", 199, "-d", 1, "--subprocesses", "--pids"],
                       timeout=30, stats=True).expect_ok()
    _check_container(res, w, "-p --subprocesses --pids", True)


@timeout(120)
def test_container_many_threads():
    """A process in its own pid namespace with more threads than the BPF
    side searches (the newest 512): userspace enters its thread states in
    the BPF cache by the kernel's tids (NSpid maps the namespace's), so its
    oldest thread, busy, is sampled and no sample lacks a thread state."""
    w = _start_ns(common.Interp("/usr/bin/python3.11"),
                  [os.path.join(WORKLOADS, "many_threads.py"), "600", "90"])
    res = run_profiler(w.host_pid, ["-F", 99, "-d", 2], timeout=60, stats=True).expect_ok()
    st = res.stats()
    check_stats_invariant(st, res.where())
    n = sum(s.count for s in res.stacks())
    spin = sum(s.count for s in res.stacks() if s.names[-1:] == ["spin_main"])
    check(st["dropped"]["no_tstate"] == 0 and st["tstates_seeded"] >= 600,
          "no_tstate %d, thread states entered %d of 600 threads %s"
          % (st["dropped"]["no_tstate"], st["tstates_seeded"], res.where()))
    check(n >= 60 and spin >= 0.9 * n, "%d samples, %d in spin_main [%s] %s"
          % (n, spin, common.fmt_stacks(res.stacks(), 3), res.where()))
