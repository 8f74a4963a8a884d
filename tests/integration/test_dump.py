"""tachyon-bpf dump: every thread's current Python stack, read in userspace.

The workload (written into the artifact directory) runs 3 threads besides the
main one, each parked in a known function: one sleeping under 12 levels of
recursion, one busy in a pure-Python loop, one blocked on a lock. The dump
must show exactly those 4 threads (the process's tids), each with its frames
innermost first, the exact line each one is on, the threading.py frames under
the workers, and the kernel state of the blocked ones.
"""
import os
import re
import subprocess

from common import (art_path, binary, check, fail, primary_python, spawn, start_workload,
                    timeout, unused_pid)
from common import old_python_too

WORKLOAD = r'''
import os, sys, threading, time
lock = threading.Lock()
lock.acquire()
ready = threading.Barrier(4)

def nest(n):
    if n:
        return nest(n - 1)  # DUMP nest
    while True:
        time.sleep(1000)  # DUMP sleep

def sleeper():
    ready.wait()
    nest(11)  # DUMP sleeper

def busy():
    ready.wait()
    x = 0
    while True: x = (x * 31 + 7) & 0xFFFF  # DUMP busy

def waiter():
    ready.wait()
    with lock:  # DUMP waiter
        pass

class Main:
    def run(self):
        for f in (sleeper, busy, waiter):
            threading.Thread(target=f, name=f.__name__, daemon=True).start()
        ready.wait()
        time.sleep(0.3)  # let each thread reach its spot
        print('READY {"pid": %d}' % os.getpid(), flush=True)
        time.sleep(120)  # DUMP main

Main().run()  # DUMP module
'''

HEADER_RE = re.compile(r"^Thread (\d+) \((.*)\): (running|sleeping|waiting in the kernel \(D\)|"
                       r"stopped|zombie|idle|gone|unknown)(, holds the GIL)?$")
FRAME_RE = re.compile(r'^  File "(.+)", line (\d+), in (.+)$')


def _workload(python, script=WORKLOAD, name="dump_workload.py"):
    """Write `script` into the artifacts and start it; also returns the
    line of each `# DUMP tag` in it."""
    path = art_path(name)
    with open(path, "w") as f:
        f.write(script)
    lines = {}
    for i, text in enumerate(script.split("\n"), 1):
        m = re.search(r"# DUMP (\w+)", text)
        if m:
            lines[m.group(1)] = i
    w = start_workload(python, None, script_path=path, cwd=os.path.dirname(path))
    return w, lines


def _dump(args, timeout=20):
    p = subprocess.run([binary(), "dump"] + [str(a) for a in args], capture_output=True,
                       timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def _parse(out, where):
    """{tid: (name, state, gil, [(file, line, func), ...])} plus the two header lines."""
    lines = out.split("\n")
    check(len(lines) > 3, "dump output too short: %r %s" % (out[:300], where))
    threads, cur = {}, None
    for i, l in enumerate(lines[3:], 4):
        if not l:
            cur = None
            continue
        m = HEADER_RE.match(l)
        if m:
            tid = int(m.group(1))
            check(tid not in threads, "thread %d listed twice %s" % (tid, where))
            threads[tid] = cur = (m.group(2), m.group(3), bool(m.group(4)), [])
            continue
        m = FRAME_RE.match(l)
        check(m and cur is not None, "dump line %d is neither a `Thread TID (NAME): state` "
              "header nor a `  File \"f\", line N, in name` frame: %r %s" % (i, l, where))
        cur[3].append((m.group(1), int(m.group(2)), m.group(3)))
    return lines[0], lines[1], threads


@old_python_too
@timeout(60)
def test_dump_threads(python):
    w, L = _workload(python)
    rc, out, err = _dump(["-p", w.pid])
    where = "[dump -p %d: rc %d; stderr: %s; stdout: %s]" % (w.pid, rc, err.strip()[:300],
                                                          out[:1500].replace("\n", " | "))
    check(rc == 0, "dump failed %s" % where)
    check(err == "", "dump wrote to stderr %s" % where)
    proc_line, py_line, threads = _parse(out, where)
    check(proc_line.startswith("Process %d: " % w.pid) and "dump_workload.py" in proc_line,
          "first line %r, expected `Process %d: <command line>`" % (proc_line, w.pid))
    check(re.match(r"^Python %s\.\d+ \(/.+\)$" % re.escape(python.version()), py_line),
          "second line %r, expected `Python %s.N (<path of the interpreter>)`"
          % (py_line, python.version()))

    tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % w.pid))
    check(sorted(threads) == tids, "dump lists threads %s, the process has %s %s"
          % (sorted(threads), tids, where))
    check(list(threads)[0] == w.pid, "the main thread is not listed first %s" % where)

    by_leaf = {}
    for tid, (name, state, gil, frames) in threads.items():
        check(frames, "thread %d has no frames %s" % (tid, where))
        by_leaf[frames[0][2]] = (tid, state, frames)
    main_run = python.shown("Main.run")
    want = {main_run, "nest", "busy", "waiter"}
    check(set(by_leaf) == want, "innermost functions %s, expected %s %s"
          % (sorted(by_leaf), sorted(want), where))
    # Python's thread names (threading), not the kernel's comm ("python3")
    py_names = {main_run: "MainThread", "nest": "sleeper", "busy": "busy", "waiter": "waiter"}
    for leaf, (tid, _, _) in by_leaf.items():
        name = threads[tid][0]
        check(name == py_names[leaf], "thread %d (in %s) named %r, its Python name is %r %s"
              % (tid, leaf, name, py_names[leaf], where))

    script = "dump_workload.py"

    def expect(frames, spec, what):
        got = [(os.path.basename(f), n, fn) for f, n, fn in frames[:len(spec)]]
        check(got == spec, "%s: frames (innermost first) %s, expected %s %s"
              % (what, got, spec, where))

    tid, state, fr = by_leaf[main_run]
    check(tid == w.pid, "Main.run is on thread %d, not the main thread %d" % (tid, w.pid))
    expect(fr, [(script, L["main"], main_run), (script, L["module"], "<module>")], "main")
    check(len(fr) == 2, "main thread has %d frames, expected 2: %s" % (len(fr), fr))
    check(state == "sleeping", "main thread (in time.sleep) is %r" % state)

    workers = [("nest", [(script, L["sleep"], "nest")] + [(script, L["nest"], "nest")] * 11 +
                [(script, L["sleeper"], "sleeper")]),
               ("busy", [(script, L["busy"], "busy")]),
               ("waiter", [(script, L["waiter"], "waiter")])]
    for leaf, spec, in workers:
        tid, state, fr = by_leaf[leaf]
        check(tid != w.pid, "%s runs on the main thread %s" % (leaf, where))
        expect(fr, spec, leaf)
        rest = [(os.path.basename(f), fn) for f, _, fn in fr[len(spec):]]
        check(rest == [("threading.py", python.shown(q)) for q in
                       ("Thread.run", "Thread._bootstrap_inner", "Thread._bootstrap")],
              "%s: frames under the thread function %s, expected Thread.run, "
              "_bootstrap_inner, _bootstrap in threading.py %s" % (leaf, rest, where))
    for leaf in ("nest", "waiter"):
        check(by_leaf[leaf][1] == "sleeping", "%s thread is %r, expected sleeping"
              % (leaf, by_leaf[leaf][1]))
    check(w.alive(), "the workload died during the dump")


@timeout(60)
def test_dump_paths_and_pids(python):
    """--full-filenames gives absolute paths; several pids are dumped in turn."""
    w1, _ = _workload(python)
    w2, _ = _workload(python)
    rc, out, err = _dump(["--full-filenames", "-p", "%d,%d" % (w1.pid, w2.pid)])
    where = "[rc %d; stderr %s; stdout %s]" % (rc, err.strip(), out[:600].replace("\n", " | "))
    check(rc == 0, "dump of two pids failed %s" % where)
    blocks = re.split(r"\n\n(?=Process \d+: )", out)
    check(len(blocks) == 2, "expected 2 process blocks separated by a blank line %s" % where)
    for pid, block in zip((w1.pid, w2.pid), blocks):
        check(block.startswith("Process %d: " % pid), "block does not start with Process %d %s"
              % (pid, where))
        files = re.findall(r'^  File "(.+?)"', block, re.M)
        check(files and all(f.startswith("/") for f in files),
              "--full-filenames: not every file is absolute: %s" % files[:6])
        check(art_path("dump_workload.py") in files, "the workload's full path %s is missing: %s"
              % (art_path("dump_workload.py"), files[:6]))


@timeout(30)
def test_dump_errors():
    """Bad targets: one line each, exit 1; bad options: exit 2."""
    nonpy = spawn(["sleep", "30"])
    cases = [(["-p", unused_pid()], 1, r"no such process"),
             (["-p", nonpy.pid], 1, r"not a Python process"),
             ([], 2, r"dump: no target"),
             (["-p", "1", "-F", "99"], 2, r"--frequency: not an option of dump"),
             (["-p", "1", "-o", "x"], 2, r"--output: not an option of dump"),
             (["--all-python"], 2, r"not an option of dump")]
    for args, want_rc, msg in cases:
        rc, out, err = _dump(args)
        lines = err.strip().split("\n")
        check(rc == want_rc, "dump %s: exit %d, expected %d (%s)" % (args, rc, want_rc, err))
        check(out == "", "dump %s: stdout %r" % (args, out[:200]))
        check(len(lines) == 1 and lines[0].startswith("tachyon-bpf: ") and re.search(msg, lines[0]),
              "dump %s: expected one line matching %r, got %r" % (args, msg, err))
    rc, out, _ = _dump(["--help"])
    check(rc == 0 and "innermost frame first" in out.lower(), "dump --help does not say the "
          "frame order: %r" % out[:400])
