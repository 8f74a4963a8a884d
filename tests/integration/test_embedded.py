"""An interpreter embedded in a C program (tests/synthetic/embedded.c).

The executable is called `embedded`, holds no _PyRuntime and links
libpython3.13.so: the profiler must find the interpreter in the library and
report the Python code run through PyRun_SimpleString (file `<string>`) or
PyRun_SimpleFile (a real file), with correct lines.

Not parametrised: the program is built against pyenv's 3.13. Needs
`make build/tests/embedded`.
"""
import os
import subprocess

from common import (REPO, Workload, art_path, check, check_stats_invariant, fail,
                    fmt_stacks, run_profiler, spawn, timeout, total)

EMBEDDED = os.path.join(REPO, "build", "tests", "embedded")

# tests/synthetic/embedded.c's built-in program: function -> allowed lines.
STRING_LINES = {"<module>": {15}, "embedded_hot": {11, 12}, "embedded_leaf": set(range(4, 9))}

SCRIPT = """\
import os


def file_leaf(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def file_hot():
    while True:
        file_leaf(2000)


os.write(1, b"READY %d\\n" % os.getpid())
file_hot()
"""
SCRIPT_LINES = {"<module>": {17}, "file_hot": {12, 13}, "file_leaf": set(range(4, 9))}


def _start(args=(), cwd=None):
    check(os.path.isfile(EMBEDDED) and os.access(EMBEDDED, os.X_OK),
          "%s missing (run make build/tests/embedded)" % EMBEDDED)
    errp = art_path("embedded-%d.stderr" % len(args))
    env = dict(os.environ)
    for k in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):
        env.pop(k, None)
    with open(errp, "wb") as errf:
        proc = spawn([EMBEDDED] + list(args), stdin=subprocess.DEVNULL,
                     stdout=subprocess.PIPE, stderr=errf, cwd=cwd or "/", env=env)
    w = Workload(proc, {}, "embedded")
    line = w.read_line(20)
    if line is None:
        with open(errp, "rb") as f:
            err = f.read().decode("utf-8", "replace").strip()
        fail("embedded not ready within 20 s (rc %s): %s" % (proc.poll(), err[-400:]))
    check(line == "READY %d" % proc.pid,
          "embedded printed %r, want 'READY %d'" % (line, proc.pid))
    return w


def _check_stacks(res, file, lines, hot, leaf):
    """Every stack is <module>;hot[;leaf], all in `file`, at allowed lines."""
    stacks = res.stacks()
    n = total(stacks)
    check(n >= 100, "only %d samples %s" % (n, res.where()))
    want_names = ["<module>", hot, leaf]
    for s in stacks:
        check(s.names == want_names[:len(s.names)] and len(s.names) >= 2,
              "unexpected stack %r (want <module>;%s[;%s]) [top: %s]"
              % (s.short(), hot, leaf, fmt_stacks(stacks, 4)))
        for f in s.frames:
            check(f.file == file, "frame %r: file %r, want %r" % (f.raw, f.file, file))
            check(f.line in lines[f.name], "frame %r: line %d, want one of %s"
                  % (f.raw, f.line, sorted(lines[f.name])))
    # While it calls the leaf, the hot function is on its call line.
    call_line = max(lines[hot])
    deep = [s for s in stacks if len(s.frames) == 3]
    check(all(s.frames[1].line == call_line for s in deep),
          "%s not at its call line %d in %s" % (hot, call_line, fmt_stacks(deep, 4)))
    check(sum(s.count for s in deep) >= 0.8 * n,
          "only %d of %d samples in %s [top: %s]"
          % (sum(s.count for s in deep), n, leaf, fmt_stacks(stacks, 4)))
    st = res.stats()
    check_stats_invariant(st, res.where())
    check(st["bad_code"] == 0 and st["unknown_code"] == 0 and st["partial"] == 0,
          "unreadable or bad frames: %r" % st)


@timeout(60)
def test_embedded_string():
    w = _start()
    res = run_profiler(w.pid, ["-F", 499, "-d", 2], timeout=30, stats=True).expect_ok()
    _check_stacks(res, "<string>", STRING_LINES, "embedded_hot", "embedded_leaf")


@timeout(60)
def test_embedded_file():
    """A script run with PyRun_SimpleFile: its path, shortened against the cwd."""
    d = art_path("embedded-app")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "embedded_app.py")
    with open(path, "w") as f:
        f.write(SCRIPT)
    w = _start([path], cwd=d)
    res = run_profiler(w.pid, ["-F", 499, "-d", 2], timeout=30, stats=True).expect_ok()
    _check_stacks(res, "embedded_app.py", SCRIPT_LINES, "file_hot", "file_leaf")
    res = run_profiler(w.pid, ["-F", 499, "-d", 1, "--full-filenames"], timeout=30,
                       stats=True).expect_ok()
    _check_stacks(res, path, SCRIPT_LINES, "file_hot", "file_leaf")
