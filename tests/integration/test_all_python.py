"""--all-python: every Python process on the machine, including ones that
start after the profiler; forked children; setup latency; recycled pids.

The profiler always starts first (with -v, so the test knows when sampling
is on: the `debug: profiling N process(es)` line), then the processes start.
Other Python processes may run on the machine (other tests, other users):
every check is scoped to the pids this test started.

Helpers shared with test_command.py and test_containers.py live here
(names not starting with test_).
"""
import json
import os
import re
import signal
import subprocess
import time

import common
from common import (REPO, WORKLOADS, Interp, Workload, art_path, check,
                    check_stats_invariant, fail, fmt_stacks, spawn, start_profiler,
                    start_workload, timeout)

EMBEDDED = os.path.join(REPO, "build", "tests", "embedded")
ROOT_RE = re.compile(r"^(.*) \[(\d+)\]$")
READY_LINE = "debug: profiling "


# --------------------------------------------------------------------------
# Helpers

def with_roots(res):
    """Parse a profile whose stacks start with a per-process root frame."""
    common.PROCESS_ROOTS[0] = True
    return res.stacks()


class Proc:
    """The samples of one process (pid) of a profile with --pids roots."""

    def __init__(self, pid):
        self.pid = pid
        self.roots = set()         # root frame names seen for this pid
        self.stacks = []           # common.Stack objects, root frame removed

    @property
    def count(self):
        return sum(s.count for s in self.stacks)

    def names(self):
        out = set()
        for s in self.stacks:
            out.update(f.name for f in s.frames)
        return out

    def with_name(self, name):
        return [s for s in self.stacks if any(f.name == name for f in s.frames)]

    def samples_in(self, name):
        return sum(s.count for s in self.with_name(name))

    def short(self, n=4):
        return fmt_stacks(self.stacks, n)


def by_pid(stacks):
    """{pid: Proc} from stacks whose root frame is `name [PID]`."""
    procs = {}
    for s in stacks:
        m = ROOT_RE.match(s.root.raw)
        check(m is not None, "stack without a `name [PID]` root frame: %s" % s.short())
        pid = int(m.group(2))
        p = procs.setdefault(pid, Proc(pid))
        p.roots.add(m.group(1))
        p.stacks.append(common.Stack(s.frames[1:], s.count, s.lineno))
    return procs


def wait_profiling(prof, timeout_s=30):
    """Wait until a profiler started with -v says it is sampling."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with open(prof.errf, "rb") as f:
            if READY_LINE.encode() in f.read():
                return
        if prof.proc.poll() is not None:
            fail("profiler exited before sampling started: %s" % prof.finish(1).where())
        time.sleep(0.02)
    fail("profiler did not start sampling within %ds (no %r line on stderr)"
         % (timeout_s, READY_LINE))


def warnings(res):
    """stderr lines that are not -v debug output or the closing statistics."""
    return [l for l in res.err_lines() if "warning" in l or
            (l.startswith("tachyon-bpf: ") and "debug: " not in l and not _STATS_RE.match(l))]


_STATS_RE = re.compile(r"^tachyon-bpf: (\d+ samples in|written \d+|partial stacks|"
                       r"\d+ distinct stacks|memory: RSS|kernel BPF stats)")


def interp(spec):
    py = Interp(spec)
    check(py.exists(), "interpreter %s is missing" % py.path)
    return py


def read_tagged(w, key, timeout_s):
    """The JSON of the next `KEY {...}` line of a workload."""
    deadline = time.monotonic() + timeout_s
    while True:
        line = w.read_line(max(0.0, deadline - time.monotonic()))
        if line is None:
            fail("%s (pid %d): no %s line within %.0fs (%s)"
                 % (w.name, w.pid, key, timeout_s, common.sigdesc(w.proc.poll())))
        if line.startswith(key + " "):
            return json.loads(line[len(key) + 1:])


def spawn_script(python, script, *args, env=None, cwd=None, prefix=()):
    """Start a workload without waiting for READY (stdout is a pipe)."""
    path = script if os.path.isabs(script) else os.path.join(WORKLOADS, script)
    e = dict(os.environ)
    e.pop("PYTHONPATH", None)
    e["PYTHONUNBUFFERED"] = "1"
    if env:
        e.update(env)
    errp = art_path("spawned-%s-%d.stderr" % (os.path.basename(path), len(common._PROCS)))
    with open(errp, "wb") as errf:
        proc = spawn(list(prefix) + [python.path, path] + [str(a) for a in args],
                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errf,
                     cwd=cwd or WORKLOADS, env=e)
    return Workload(proc, {}, os.path.basename(path))


def check_chain(p, want, min_samples, what):
    """`want` (names, root first) is a suffix-free prefix of p's stacks that
    contain want[1]: those stacks must be exactly want or a prefix of it
    that reaches want[1]; at least min_samples of them."""
    hot = p.with_name(want[1])
    n = sum(s.count for s in hot)
    check(n >= min_samples, "%s (pid %d): %d samples in %s, want >= %d (roots %s) [%s]"
          % (what, p.pid, n, want[1], min_samples, sorted(p.roots), p.short()))
    for s in hot:
        check(s.names == want[:len(s.names)] and len(s.names) >= 2,
              "%s (pid %d): unexpected stack %s, want %s" % (what, p.pid, s.short(), ";".join(want)))
    return n


def start_embedded():
    check(os.path.isfile(EMBEDDED) and os.access(EMBEDDED, os.X_OK),
          "%s missing (run make build/tests/embedded)" % EMBEDDED)
    env = dict(os.environ)
    for k in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):
        env.pop(k, None)
    with open(art_path("embedded.stderr"), "wb") as errf:
        proc = spawn([EMBEDDED], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                     stderr=errf, cwd="/", env=env)
    w = Workload(proc, {}, "embedded")
    line = w.read_line(30)
    check(line == "READY %d" % proc.pid, "embedded printed %r, want 'READY %d'" % (line, proc.pid))
    return w


# --------------------------------------------------------------------------
# 1. A mix of interpreters and process kinds, all started after the profiler

TAGGED = [  # tag, interpreter, seconds of spinning
    ("v311", "3.11.7", 60),
    ("v312", "3.12.1", 1.0),        # exits mid-run: its samples must stay
    ("v313", "3.13.0", 60),
    ("deb311", "/usr/bin/python3.11", 60),
]


def _ready(w, timeout_s=30):
    w.info = read_tagged(w, "READY", timeout_s)
    check(w.info.get("pid", w.pid) == w.pid, "%s: READY from pid %s" % (w.name, w.info))
    return w


@timeout(120)
def test_all_python_mix():
    """Everything starts after the profiler: pyenv 3.11/3.12/3.13, Debian's
    static 3.11, multiprocessing pools (fork and spawn), a ~0.3 s process, an
    embedded interpreter, and a 3.7 (refused once, left alone). Each must be
    under its own `name [PID]` root with its own functions, sampled in
    proportion to the CPU it used; the 3.12 one exits mid-run."""
    prof = start_profiler(None, ["--all-python", "-F", 199, "-d", 100, "--pids", "-v"],
                          stats=True)
    wait_profiling(prof)
    py313 = interp("3.13.0")
    started = {}
    for tag, spec, secs in TAGGED:
        started[tag] = spawn_script(interp(spec), "tagged.py", tag, secs)
    old = spawn_script(interp("3.7.16"), "tagged.py", "v37", 2)
    mp_fork = spawn_script(py313, "mp_pool.py", "fork", 1.5)
    mp_spawn = spawn_script(py313, "mp_pool.py", "spawn", 1.5)
    emb = start_embedded()
    for w in list(started.values()) + [old, mp_fork, mp_spawn]:
        _ready(w)
    # The short-lived one: ~0.3 s of life, started while everything runs.
    short = spawn_script(py313, "tagged.py", "short", 0.3)
    short_done = read_tagged(short, "DONE", 30)
    check(short.wait(10) == 0, "short-lived process failed")
    fork_done = read_tagged(mp_fork, "DONE", 60)
    spawn_done = read_tagged(mp_spawn, "DONE", 60)
    cpu = {"v312": read_tagged(started["v312"], "DONE", 30)["cpu_s"], "short": short_done["cpu_s"]}
    check(started["v312"].wait(10) == 0, "the 3.12 process failed")
    read_tagged(old, "DONE", 30)
    check(old.wait(10) == 0, "the 3.7 process did not finish normally (left alone?)")
    # Stop the long-running ones (they report their CPU time), then the profiler.
    emb_cpu = emb.cpu_seconds()
    for tag in ("v311", "v313", "deb311"):
        started[tag].signal(signal.SIGUSR1)
        cpu[tag] = read_tagged(started[tag], "DONE", 30)["cpu_s"]
    emb.stop()
    prof.signal(signal.SIGINT)
    res = prof.finish(60).expect_ok()

    procs = by_pid(with_roots(res))
    st = res.stats()
    check_stats_invariant(st, res.where())

    def proc(pid, what):
        p = procs.get(pid)
        if p is None:
            fail("%s (pid %d) has no samples; pids with samples: %s %s"
                 % (what, pid, sorted(procs), res.where()))
        return p

    tags = [t for t, _, _ in TAGGED] + ["short", "v37"]
    for tag, spec, _ in TAGGED + [("short", "3.13.0", 0.3)]:
        pid = short.pid if tag == "short" else started[tag].pid
        what = "%s (%s)" % (tag, spec)
        p = proc(pid, what)
        check("tagged.py" in p.roots, "%s: root frames %s, want 'tagged.py [%d]'"
              % (what, sorted(p.roots), pid))
        exp = cpu[tag] * 199
        n = check_chain(p, ["<module>", "work_" + tag, "leaf_" + tag], 1, what)
        # The ~0.3 s one must show up; how much of it is caught is
        # test_setup_latency's business.
        check(n >= (0.5 * exp if tag != "short" else 1),
              "%s: %d samples in work_%s for %.3f s of CPU (%.0f expected at 199 Hz) [%s]"
              % (what, n, tag, cpu[tag], exp, p.short()))
        foreign = sorted(nm for nm in p.names()
                         for o in tags if o != tag and nm in ("work_" + o, "leaf_" + o))
        check(not foreign, "%s (pid %d) has another process's functions %s: %s"
              % (what, pid, foreign, p.short()))

    # 3.7: one line saying so, and nothing of it in the profile.
    lines = [l for l in res.err_lines() if re.search(r"\bpid %d\b" % old.pid, l)
             and "debug:" not in l]
    check(len(lines) == 1 and "3.7.16 is too old" in lines[0] and "not profiled" in lines[0],
          "3.7 process (pid %d): want one 'not profiled' line naming 3.7.16, got %r"
          % (old.pid, lines))
    p37 = procs.get(old.pid)
    check(p37 is None or not (p37.names() & {"work_tagged", "leaf_tagged", "work_v37"}),
          "3.7 process was profiled: %s" % (p37.short() if p37 else ""))

    # The embedded interpreter: root frame is the executable's name.
    p = proc(emb.pid, "embedded")
    check("embedded" in p.roots, "embedded: roots %s" % sorted(p.roots))
    n = check_chain(p, ["<module>", "embedded_hot", "embedded_leaf"], 1, "embedded")
    check(emb_cpu is None or n >= 0.3 * emb_cpu * 199,
          "embedded: %d samples for %.2f s of CPU" % (n, emb_cpu or 0))

    # multiprocessing: every worker that ran a task, under its own pid.
    for method, done, info in (("fork", fork_done, mp_fork.info),
                               ("spawn", spawn_done, mp_spawn.info)):
        task = "pool_task_" + method
        for wpid, wcpu in done["results"]:
            check(wpid in info["workers"], "%s pool: task ran in %d, not a worker %s"
                  % (method, wpid, info["workers"]))
            p = proc(wpid, "%s pool worker" % method)
            n = p.samples_in(task)
            check(n >= 0.5 * wcpu * 199 and n >= 1,
                  "%s pool worker %d: %d samples in %s for %.2f s of CPU [%s]"
                  % (method, wpid, n, task, wcpu, p.short()))
            for s in p.with_name(task):
                check(s.names[-1] in (task, "_spin", "pool_leaf"),
                      "%s worker %d: leaf %s under %s" % (method, wpid, s.leaf.raw, task))
            if method == "fork":
                check(p.roots == {"mp_pool.py"}, "fork worker %d: roots %s, want the "
                      "parent's name mp_pool.py" % (wpid, sorted(p.roots)))
        parent = procs.get(info["pid"])
        check(parent is None or not parent.with_name(task),
              "%s pool parent %d has %s samples" % (method, info["pid"], task))
    check(st["processes"] >= 12, "stats processes %d, this test alone started 12 Python "
          "processes" % st["processes"])
    with open(art_path("summary.txt"), "w") as f:
        for pid, p in sorted(procs.items()):
            f.write("%d %s %d\n" % (pid, sorted(p.roots), p.count))


# --------------------------------------------------------------------------
# 2. A forked child (no exec) is sampled from its first samples

@timeout(60)
def test_fork_child_subprocesses():
    """os.fork() from a process profiled with -p PID --subprocesses: the
    child shares the parent's layout and is sampled at once (the BPF side
    copies the parent's entry at fork time)."""
    w = start_workload(interp("3.13.0"), "spawner.py", "fork", 0.6, "--wait")
    prof = start_profiler(w.pid, ["--subprocesses", "--pids", "-F", 199, "-v"], stats=True)
    wait_profiling(prof)
    w.signal(signal.SIGUSR1)
    child = read_tagged(w, "CHILD", 30)
    done = read_tagged(w, "DONE", 30)
    check(done["rc"] == 0 and done["child"] == child["pid"], "spawner: %r %r" % (child, done))
    res = prof.finish(30).expect_ok()   # ends by itself: every target exited
    procs = by_pid(with_roots(res))
    check_stats_invariant(res.stats(), res.where())
    cp = procs.get(child["pid"])
    check(cp is not None, "forked child %d has no samples; pids: %s %s"
          % (child["pid"], sorted(procs), res.where()))
    check(cp.roots == {"spawner.py"}, "child roots %s, want 'spawner.py [%d]'"
          % (sorted(cp.roots), child["pid"]))
    n = cp.samples_in("forked_child_fn")
    exp = child["cpu_s"] * 199
    check(n >= 0.6 * exp, "forked child: %d samples in forked_child_fn for %.3f s of CPU "
          "(%.0f expected): not sampled from its start? [%s]" % (n, child["cpu_s"], exp, cp.short()))
    for s in cp.with_name("forked_child_fn"):
        check(s.names[:3] == ["<module>", "main", "forked_child_fn"],
              "child stack %s" % s.short())
    pp = procs.get(w.pid)
    check(pp is None or not pp.with_name("forked_child_fn"),
          "the parent has the child's function: %s" % (pp.short() if pp else ""))


# --------------------------------------------------------------------------
# 3. Setup latency of a process that starts after the profiler

def latency_run(python, freq=199, spin=0.3):
    """Run latency.py once under --all-python; return (result, Proc, res)."""
    prof = start_profiler(None, ["--all-python", "-F", freq, "-d", 60, "--pids", "-v"],
                          stats=True)
    wait_profiling(prof)
    t0 = time.monotonic()
    w = spawn_script(python, "latency.py", spin, env={"TB_T0": repr(t0)}, prefix=())
    r = read_tagged(w, "RESULT", 30)
    check(w.wait(10) == 0, "latency.py failed")
    prof.signal(signal.SIGINT)
    res = prof.finish(30).expect_ok()
    procs = by_pid(with_roots(res))
    check_stats_invariant(res.stats(), res.where())
    p = procs.get(r["pid"])
    check(p is not None, "latency.py (pid %d) has no samples %s" % (r["pid"], res.where()))
    return r, p, res


SLICE_RE = re.compile(r"^at_(\d{4})ms$")


def slice_samples(p):
    """{slice start in ms since spawn: samples} of latency.py's slices."""
    out = {}
    for s in p.stacks:
        m = SLICE_RE.match(s.leaf.name)
        if m:
            out[int(m.group(1))] = out.get(int(m.group(1)), 0) + s.count
    return out


@timeout(60)
def test_setup_latency(python):
    """latency.py spins 0.3 s from the moment its script starts, in 10 ms
    slices named after their start (ms since the spawn). It must get at
    least half the samples its CPU time is worth at -F 199, and its first
    sampled slice must be within ~100 ms of its start (or of its script's
    start, when the interpreter itself took longer to start)."""
    r, p, res = latency_run(python)
    sl = slice_samples(p)
    n = sum(sl.values())
    exp = r["cpu_s"] * 199
    first = min(sl) if sl else None
    early = sum(s.count for s in p.stacks
                if not any(f.file and f.file.endswith("latency.py") for f in s.frames))
    detail = ("script started %.0f ms after spawn, %.3f s CPU while spinning, %d slice "
              "samples (%.0f expected), first sampled slice at %s ms, %d samples before "
              "the script ran" % (r["script_start_ms"], r["cpu_s"], n, exp, first, early))
    check(n >= 0.5 * exp, "too few samples: " + detail)
    check(first is not None and first <= max(100, r["script_start_ms"] + 40),
          "first sample too late: " + detail)
    with open(art_path("latency.txt"), "w") as f:
        f.write(detail + "\n")


# --------------------------------------------------------------------------
# 4. A recycled pid does not inherit another process's symbols

RECYCLED = """\
import os, sys, time


def NAME_only_fn(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


sys.stdout.write("READY %d %d\\n" % (os.getpid(), id(NAME_only_fn.__code__)))
sys.stdout.flush()
cpu0 = time.process_time()
NAME_only_fn(float(sys.argv[1]))
sys.stdout.write("DONE %f\\n" % (time.process_time() - cpu0))
"""


def _set_last_pid(pid):
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(pid))


def _spawn_at(pid, argv, cwd, tries=50):
    """Start argv with exactly this pid (kernel.ns_last_pid = pid - 1 just
    before the fork; retried if another process took it first)."""
    for _ in range(tries):
        _set_last_pid(pid - 1)
        p = spawn(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                  stderr=subprocess.DEVNULL, cwd=cwd)
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
    fail("could not get pid %d back after %d tries (busy machine?)" % (pid, tries))


@timeout(60)
def test_recycled_pid_exec():
    """Two processes, one after the other, with the same pid, the same script
    name and (ASLR off) the same code object addresses, but different
    function names: each must be reported with its own names."""
    py = interp("3.13.0")
    dirs = {}
    for name in ("alpha", "bravo"):
        d = art_path(name)              # same length: same addresses
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "recycled.py"), "w") as f:
            f.write(RECYCLED.replace("NAME", name))
        dirs[name] = d
    prof = start_profiler(None, ["--all-python", "-F", 199, "-d", 30, "--pids", "-v"],
                          stats=True)
    wait_profiling(prof)
    argv = ["setarch", "-R", py.path, "recycled.py", "1.0"]
    a = spawn(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, cwd=dirs["alpha"])
    la = Workload(a, {}, "alpha").read_line(20)
    da = Workload(a, {}, "alpha").read_line(20)
    check(a.wait(20) == 0, "alpha failed")
    b = _spawn_at(a.pid, argv, dirs["bravo"])
    lb = Workload(b, {}, "bravo").read_line(20)
    db = Workload(b, {}, "bravo").read_line(20)
    check(b.wait(20) == 0, "bravo failed")
    check(la and lb and da and db, "workload output: %r %r %r %r" % (la, da, lb, db))
    same_code = la.split()[2] == lb.split()[2]
    cpu_a, cpu_b = float(da.split()[1]), float(db.split()[1])
    prof.signal(signal.SIGINT)
    res = prof.finish(30).expect_ok()
    procs = by_pid(with_roots(res))
    check_stats_invariant(res.stats(), res.where())
    p = procs.get(a.pid)
    check(p is not None, "pid %d has no samples %s" % (a.pid, res.where()))
    na, nb = p.samples_in("alpha_only_fn"), p.samples_in("bravo_only_fn")
    info = ("pid %d: alpha_only_fn %d samples for %.2f s CPU, bravo_only_fn %d for %.2f s "
            "(code objects at the same address: %s) [%s]"
            % (a.pid, na, cpu_a, nb, cpu_b, same_code, p.short(6)))
    check(na >= 0.5 * cpu_a * 199, "first process under-sampled: " + info)
    check(nb >= 0.5 * cpu_b * 199, "second process (same pid) under-sampled or given the "
          "first one's names: " + info)
    for s in p.stacks:
        check(not ({"alpha_only_fn", "bravo_only_fn"} <= set(s.names)), "mixed stack: " + s.short())
    with open(art_path("recycled.txt"), "w") as f:
        f.write(info + "\n")


@timeout(60)
def test_recycled_pid_fork():
    """-p PARENT --subprocesses: a forked child exits, and the next forked
    child gets its pid. The profiler is stopped (SIGSTOP) across the exit
    and the second fork, so it learns of both in one batch; the second
    child must still be sampled, under its own function only."""
    pidfile = art_path("pause.pid")
    w = start_workload(interp("3.13.0"), "recycler.py", pidfile)
    prof = start_profiler(w.pid, ["--subprocesses", "--pids", "-F", 199, "-v"], stats=True)
    wait_profiling(prof)
    with open(pidfile, "w") as f:
        f.write(str(prof.pid))
    w.signal(signal.SIGUSR1)
    done = read_tagged(w, "DONE", 30)
    check(w.wait(10) == 0, "recycler failed")
    check(done["a"] == done["b"], "the second child did not get the first one's pid: %r" % done)
    res = prof.finish(30).expect_ok()    # ends by itself: every target exited
    procs = by_pid(with_roots(res))
    check_stats_invariant(res.stats(), res.where())
    p = procs.get(done["a"])
    check(p is not None, "pid %d has no samples %s" % (done["a"], res.where()))
    na, nb = p.samples_in("alpha_child_fn"), p.samples_in("bravo_child_fn")
    info = ("pid %d: alpha_child_fn %d samples (%.2f s CPU), bravo_child_fn %d (%.2f s CPU) "
            "[%s]" % (done["a"], na, done["a_cpu_s"], nb, done["b_cpu_s"], p.short(6)))
    check(na >= 0.5 * done["a_cpu_s"] * 199, "first child under-sampled: " + info)
    check(nb >= 0.5 * done["b_cpu_s"] * 199, "second child (recycled pid) under-sampled: " + info)
    for s in p.stacks:
        check(not ({"alpha_child_fn", "bravo_child_fn"} <= set(s.names)),
              "mixed stack: " + s.short())


# --------------------------------------------------------------------------
# 5. An interpreter loaded late into a process the profiler already saw

@timeout(60)
def test_all_python_late_dlopen():
    """A C program that dlopen()s libpython3.13 2.5 s after it started (after
    the exec-time retries, and after a rescan saw it as "not Python"), then
    runs Python for 4 s: the periodic rescan (every 2 s) must find it."""
    src = os.path.join(WORKLOADS, "late_dlopen.c")
    exe = art_path("late_dlopen")
    cc = subprocess.run(["cc", "-O1", "-o", exe, src, "-ldl"], capture_output=True, text=True)
    check(cc.returncode == 0, "cannot build %s: %s" % (src, cc.stderr[-300:]))
    lib = os.path.join(common.PYENV_ROOT, "versions", "3.13.0", "lib", "libpython3.13.so")
    check(os.path.exists(lib), "%s missing" % lib)
    prof = start_profiler(None, ["--all-python", "-F", 199, "-d", 60, "--pids", "-v"],
                          stats=True)
    wait_profiling(prof)
    proc = spawn([exe, lib, "2.5", "4"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                 cwd=art_path(""))
    w = Workload(proc, {}, "late_dlopen")
    check(w.read_line(20) == "READY %d" % proc.pid, "late_dlopen did not start")
    check(w.read_line(30) == "PYTHON %d" % proc.pid, "late_dlopen: no Python")
    done = w.read_line(30)
    check(done and done.startswith("DONE ") and proc.wait(10) == 0, "late_dlopen: %r" % done)
    cpu = float(done.split()[1])
    prof.signal(signal.SIGINT)
    res = prof.finish(30).expect_ok()
    procs = by_pid(with_roots(res))
    check_stats_invariant(res.stats(), res.where())
    p = procs.get(proc.pid)
    n = p.samples_in("late_loaded_fn") if p else 0
    check(n >= 0.3 * cpu * 199,
          "interpreter loaded late: %d samples in late_loaded_fn for %.2f s of CPU (%.0f "
          "expected; at most 2 s of it may pass before a rescan) [%s]"
          % (n, cpu, cpu * 199, p.short() if p else "pid %d not in the profile" % proc.pid))
    # Between fork and exec the child is still a copy of the runner (run.py),
    # and --all-python follows forks: those few samples are rightly its.
    check("late_dlopen" in p.roots and p.roots <= {"late_dlopen", "run.py"},
          "roots %s" % sorted(p.roots))
