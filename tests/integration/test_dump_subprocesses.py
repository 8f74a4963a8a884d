"""tachyon-bpf dump --subprocesses (like py-spy's): every Python descendant's
threads too; the process given may be a non-Python parent (a shell)."""
import re
import subprocess

from common import WORKLOADS, Workload, check, spawn, start_workload, timeout
from test_all_python import read_tagged
from test_dump import _dump

PROC_RE = re.compile(r"^Process (\d+): ", re.M)
THREAD_RE = re.compile(r"^Thread (\d+) ", re.M)


def _sections(out):
    """{pid: [tid, ...]} in output order."""
    procs, cur = {}, None
    for line in out.split("\n"):
        m = PROC_RE.match(line)
        if m:
            cur = procs.setdefault(int(m.group(1)), [])
        m = THREAD_RE.match(line)
        if m and cur is not None:
            cur.append(int(m.group(1)))
    return procs


@timeout(60)
def test_dump_subprocesses(python):
    """blocked.py with two children: -s shows 3 processes of 3 threads each,
    every blocked function in each; without -s only the parent."""
    w = start_workload(python, "blocked.py", 2, 60)
    rc, out, err = _dump(["-s", "-p", w.pid])
    check(rc == 0, "dump -s exit %d: %s" % (rc, err))
    procs = _sections(out)
    check(set(procs) == {w.pid} | set(w.info["children"]),
          "processes %s, want %d and %s: %r" % (sorted(procs), w.pid, w.info["children"], out[:300]))
    check(list(procs)[0] == w.pid, "the process given is not first: %s" % list(procs))
    for pid, tids in procs.items():
        check(len(tids) == 3, "pid %d: %d threads %s" % (pid, len(tids), tids))
    for fn in ("sleeper", "lock_waiter", "recv_waiter"):
        check(out.count(", in %s\n" % fn) == 3, "%s: %d times, want 3" % (fn, out.count(", in %s\n" % fn)))
    rc, out, err = _dump(["-p", w.pid])
    check(rc == 0 and set(_sections(out)) == {w.pid}, "without -s: %s" % sorted(_sections(out)))


@timeout(60)
def test_dump_subprocesses_of_a_shell(python):
    """-s -p SHELL: the shell is skipped, its Python child dumped; a shell
    with no Python descendant: exit 1, one line."""
    proc = spawn(["/bin/sh", "-c", '"$0" spinner.py 30; true', python.path],
                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                 cwd=WORKLOADS)
    child = read_tagged(Workload(proc, {}, "sh"), "READY", 30)["pid"]
    rc, out, err = _dump(["-s", "-p", proc.pid])
    check(rc == 0 and set(_sections(out)) == {child},
          "dump -s of the shell: exit %d, processes %s, want [%d]; stderr %r"
          % (rc, sorted(_sections(out)), child, err))
    # Right after READY the spinner may still be on spin_outer's loop line,
    # before its first spin_inner call (CI saw exactly that once on 3.12.1):
    # a legitimate snapshot. A product bug is a stack without both callers
    # or with a leaf elsewhere.
    check(', in spin_outer\n' in out and ', in <module>\n' in out
          and ("spin_inner" in out or re.search(r'line 2[56], in spin_outer\n', out)),
          "the spinner's stack is missing or wrong: %r" % out[:400])
    lone = spawn(["/bin/sh", "-c", "read x"], stdin=subprocess.PIPE)
    rc, out, err = _dump(["-s", "-p", lone.pid])
    check(rc == 1 and out == "" and len(err.strip().split("\n")) == 1,
          "no Python descendant: exit %d, stdout %r, stderr %r" % (rc, out[:100], err))
