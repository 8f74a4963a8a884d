"""Shared helpers for the tachyon-bpf integration tests (stdlib only).

Everything a test needs to drive the real binary against real Python
processes: the interpreter list, starting workloads and waiting for their
ready marker, running the profiler, parsing its collapsed output and its
--stats JSON, and killing every child process at the end of a test.

Environment:
  TB_BIN             profiler binary (default: <repo>/tachyon-bpf)
  TB_TEST_PYTHONS    interpreters to test, comma or space separated; each is a
                     pyenv version ("3.12.1"), an absolute path
                     ("/usr/bin/python3.11") or a Debian sid build by its
                     label ("sid-3.14", see SID_ROOT; "deb11-3.9", DEB11_ROOT). Default: DEFAULT_PYTHONS below.
  TB_TEST_ARTIFACTS  per-test directory for outputs (set by run.py)
"""

import ctypes
import html.parser
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib

# The interpreters every parametrised test runs against. Adding one is one
# line here (or TB_TEST_PYTHONS="3.13.0 3.12.1 3.11.7 /usr/bin/python3.11 sid-3.14").
DEFAULT_PYTHONS = [
    "3.13.0",
    "3.12.1",
    "3.11.7",
    "/usr/bin/python3.11",      # Debian's static, stripped, non-PIE build
]
# Debian unstable's own builds (3.13.x, 3.14, 3.15: static executables with
# frame pointers), fetched and prepared by scripts/real-pythons.sh, which
# `make check` runs first; labelled sid-3.X.
SID_ROOT = os.path.join(os.environ.get("TB_CACHE", os.path.expanduser("~/.cache/tachyon-bpf")),
                        "debian-sid", "root", "usr", "bin")
DEFAULT_PYTHONS += [os.path.join(SID_ROOT, "python%s-host" % v) for v in ("3.13", "3.14", "3.15")
                    if os.path.exists(os.path.join(SID_ROOT, "python%s-host" % v))]
# Debian 11's static python3.9 (3.9.2), by the same script: a wrapper that
# sets PYTHONHOME and execs it; labelled deb11-3.9.
DEB11_ROOT = os.path.join(os.environ.get("TB_CACHE", os.path.expanduser("~/.cache/tachyon-bpf")),
                          "debian-bullseye", "root", "usr", "bin")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
WORKLOADS = os.path.join(REPO, "tests", "workloads")
PYENV_ROOT = os.environ.get("PYENV_ROOT", "/root/.pyenv")


class TestFailure(AssertionError):
    pass


def timeout(seconds):
    """Decorator: per-test timeout in seconds (read by run.py)."""
    def deco(fn):
        fn.tb_timeout = seconds
        return fn
    return deco


def fail(msg):
    raise TestFailure(msg)


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


# --------------------------------------------------------------------------
# Interpreters

class Interp:
    def __init__(self, spec):
        self.spec = spec
        if spec.startswith("sid-"):     # TB_TEST_PYTHONS="sid-3.14": the label
            spec = os.path.join(SID_ROOT, "python%s-host" % spec[len("sid-"):])
            self.spec = spec
        elif spec.startswith("deb11-"):
            spec = os.path.join(DEB11_ROOT, "python%s-host" % spec[len("deb11-"):])
            self.spec = spec
        if "/" in spec:
            self.path = spec
        else:
            self.path = os.path.join(PYENV_ROOT, "versions", spec, "bin", "python3")
        self.label = spec
        base = os.path.basename(spec)
        if base.startswith("python") and base.endswith("-host"):
            suite = "deb11-" if os.path.dirname(spec) == DEB11_ROOT else "sid-"
            self.label = suite + base[len("python"):-len("-host")]

    def exists(self):
        return os.path.isfile(self.path) and os.access(self.path, os.X_OK)

    def version(self):
        if getattr(self, "_version", None) is None:
            out = subprocess.run([self.path, "-c",
                                  "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30)
            self._version = out.stdout.strip()
        return self._version

    def version_tuple(self):
        return tuple(int(x) for x in self.version().split("."))

    def shown(self, qualname):
        """The name the profiler shows for a function of this qualname:
        before 3.11 code objects have no co_qualname, so names are bare."""
        if self.version_tuple() < (3, 11):
            return qualname.rsplit(".", 1)[-1]
        return qualname

    def real_executable(self):
        """(executable, environment) that run this interpreter without its
        wrapper: a wrapper script (deb11-3.9's python3.9-host) execs the
        real executable with PYTHONHOME set; anything else is its own."""
        with open(self.path, "rb") as f:
            if f.read(2) != b"#!":
                return os.path.realpath(self.path), {}
        out = subprocess.run([self.path, "-c", "import sys; print(sys.executable); "
                              "print(sys.prefix)"], capture_output=True, text=True,
                             timeout=30).stdout.split("\n")
        return os.path.realpath(out[0]), {"PYTHONHOME": out[1]}

    def __repr__(self):
        return "Interp(%r)" % self.path


def pythons():
    env = os.environ.get("TB_TEST_PYTHONS")
    specs = env.replace(",", " ").split() if env else list(DEFAULT_PYTHONS)
    return [Interp(s) for s in specs]


# 3.8 to 3.10 walk heap frame objects, a path of their own. The whole suite
# on them (`make check-old-pythons`) is too slow for `make check`; there one
# of them joins the default matrix for the tests marked @old_python_too (the
# walk, lines, instructions, dump, exceptions, generators, containers,
# reused code objects: ~55 s on an idle machine).
OLD_DEFAULT = "3.10.13"


def old_python_too(fn):
    """Decorator: in the default matrix, run on OLD_DEFAULT too."""
    fn.tb_old_python_too = True
    return fn


# Tests of what does not depend on the interpreter (signals, pipes, output
# writers, events, the kernel stack, the rate) run in the default matrix on
# its oldest and newest interpreter only: 5 of 7 runs fewer each, about 4
# minutes of make check. TB_TEST_PYTHONS (any list) or TB_FULL_MATRIX=1 runs
# them on every interpreter.
INDEPENDENT_DEFAULT = ("3.11.7", "sid-3.15")


def python_independent(fn):
    """Decorator: in the default matrix, run on INDEPENDENT_DEFAULT only."""
    fn.tb_default_matrix = lambda pys, name: \
        [p for p in pys if p.label in INDEPENDENT_DEFAULT] or pys[:1]
    return fn


# Tests of the walk and of a version's layout (call graphs, lines, threads,
# modes, recursion, names) do not depend on how the interpreter was built
# (shared or static, PIE or not, stripped, frame pointers): that is discovery's
# and the native unwinder's business, whose tests run on every build. In the
# default matrix they run on one build of each minor version (5 of 7 runs,
# about 5 minutes of make check). Which of 3.11's two builds (pyenv 3.11.7,
# Debian's static 3.11) and 3.13's (pyenv 3.13.0, sid's 3.13.x) a test gets is
# fixed by its name's CRC-32, so each build keeps about half of these tests.
# TB_TEST_PYTHONS (any list) or TB_FULL_MATRIX=1 runs them on every build.
def one_build_per_version(fn):
    """Decorator: in the default matrix, run on one build of each minor version."""
    fn.tb_default_matrix = one_build_each
    return fn


def minor_of(py):
    """"3.11" for any build of 3.11, from its label or path when it says so."""
    m = re.search(r"(\d+\.\d+)(?:\.\d+)?$", py.label)
    return m.group(1) if m else py.version()


def one_build_each(pys, name):
    builds = {}
    for p in pys:
        builds.setdefault(minor_of(p), []).append(p)
    kept = []
    for minor, group in builds.items():
        kept.append(group[zlib.crc32((name + minor).encode()) % len(group)])
    return [p for p in pys if p in kept]


def pythons_for(fn):
    """The interpreters a parametrised test runs on."""
    pys = pythons()
    default = not os.environ.get("TB_TEST_PYTHONS")
    # @python_independent, @one_build_per_version: a smaller default matrix
    reduced = getattr(fn, "tb_default_matrix", None)
    if default and reduced and not os.environ.get("TB_FULL_MATRIX"):
        pys = reduced(pys, fn.__name__)
    if default and getattr(fn, "tb_old_python_too", False):
        old = Interp(OLD_DEFAULT)
        if old.exists():
            pys.append(old)
    return pys


def pyenv_python(version):
    return Interp(version)


def primary_python():
    """The interpreter used by tests that are not parametrised (error cases)."""
    return pythons()[0]


# --------------------------------------------------------------------------
# Artifacts and binary

def artifacts():
    d = os.environ.get("TB_TEST_ARTIFACTS")
    if not d:
        d = os.path.join("/tmp", "tachyon-it-%d" % os.getpid())
        os.environ["TB_TEST_ARTIFACTS"] = d
    os.makedirs(d, exist_ok=True)
    return d


def art_path(name):
    return os.path.join(artifacts(), name)

def chromium(url, screenshot=None, dump_dom=False, window="1200,600"):
    """Load url in headless Chromium (scripts/deps.sh installs it): with
    `screenshot`, a PNG there; with `dump_dom`, the DOM once scripts ran.
    Returns (stdout text, stderr text: console messages are logged there)."""
    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    check(chrome, "chromium not installed (run scripts/deps.sh)")
    profile_dir = tempfile.mkdtemp(prefix="tb-chromium-")
    argv = [chrome, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--user-data-dir=" + profile_dir,
            "--enable-logging=stderr", "--v=0", "--window-size=" + window]
    argv += ["--screenshot=" + screenshot] if screenshot else []
    argv += ["--virtual-time-budget=3000", "--dump-dom"] if dump_dom else []
    try:
        p = subprocess.run(argv + [url], stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=90)
    finally:
        shutil.rmtree(profile_dir, ignore_errors=True)
    err = p.stderr.decode("utf-8", "replace")
    check(p.returncode == 0 and (not screenshot or os.path.isfile(screenshot)),
          "chromium failed (exit %d): %s" % (p.returncode, err[-400:]))
    return p.stdout.decode("utf-8", "replace"), err

class _TableRows(html.parser.HTMLParser):
    """speedscope's sandwich table: (total text, self text, self bar %, name, file)."""

    def __init__(self):
        super().__init__()
        self.rows, self._cells, self._td, self._bar = [], None, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr":
            self._cells = []
        elif tag == "td" and self._cells is not None:
            self._td = {"text": "", "title": a.get("title"), "bar": None}
        elif tag == "div" and self._td is not None:
            m = re.search(r"width:\s*([\d.]+)%", a.get("style") or "")
            if m:
                self._td["bar"] = float(m.group(1))

    def handle_endtag(self, tag):
        if tag == "td" and self._td is not None and self._cells is not None:
            self._cells.append(self._td)
            self._td = None
        elif tag == "tr" and self._cells is not None:
            if len(self._cells) == 3 and self._cells[1]["bar"] is not None:
                c = self._cells
                self.rows.append({"total": c[0]["text"].strip(), "self": c[1]["text"].strip(),
                                  "total_pct": c[0]["bar"], "self_pct": c[1]["bar"],
                                  "name": c[2]["text"].strip(), "file": c[2]["title"]})
            self._cells = None

    def handle_data(self, data):
        if self._td is not None:
            self._td["text"] += data


def speedscope_app(path):
    """Load a profile file into the speedscope web app (scripts/speedscope.sh
    fetches it) in headless Chromium, served over HTTP as the app requires,
    sandwich view. Returns (importer line, [rows of its function table, self
    descending], console log, DOM): the app is the consumer, what it shows
    is what its users see."""
    import http.server
    import threading
    app = subprocess.run([os.path.join(REPO, "scripts", "speedscope.sh")],
                         capture_output=True, text=True)
    check(app.returncode == 0, "speedscope app unavailable: %s" % app.stderr.strip())
    root = tempfile.mkdtemp(prefix="tb-speedscope-")
    os.symlink(app.stdout.strip(), os.path.join(root, "app"))
    name = "profile" + os.path.splitext(path)[1]
    shutil.copy(path, os.path.join(root, name))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=root, **kw)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d/" % srv.server_address[1]
    try:
        dom, log = chromium(base + "app/index.html#profileURL=" + base + name +
                            "&view=sandwich", dump_dom=True, window="1400,2000")
    finally:
        srv.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    console = [ln for ln in log.splitlines() if "CONSOLE" in ln]
    imported = [ln for ln in console if "Importing as" in ln]
    table = _TableRows()
    table.feed(dom)
    return (imported[0] if imported else None), table.rows, console, dom




def binary():
    b = os.environ.get("TB_BIN") or os.path.join(REPO, "tachyon-bpf")
    check(os.path.isfile(b) and os.access(b, os.X_OK),
          "profiler binary %s missing or not executable (run make)" % b)
    return b


# --------------------------------------------------------------------------
# Child process bookkeeping: every process a test starts is killed at the end.

_PROCS = []
_PR_SET_PDEATHSIG = 1


def _child_setup():
    # Die with the test process even if it is SIGKILLed (timeout).
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:
        pass


def spawn(argv, **kw):
    kw.setdefault("preexec_fn", _child_setup)
    p = subprocess.Popen(argv, **kw)
    _PROCS.append(p)
    return p


def cleanup():
    for p in _PROCS:
        if p.poll() is None:
            try:
                p.kill()
            except OSError:
                pass
    for p in _PROCS:
        try:
            p.wait(timeout=5)
        except Exception:
            pass
        for f in (p.stdin, p.stdout, p.stderr):
            if f:
                try:
                    f.close()
                except Exception:
                    pass
    del _PROCS[:]


def sigdesc(rc):
    if rc is None:
        return "still running"
    if rc < 0:
        try:
            return "killed by %s" % signal.Signals(-rc).name
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit %d" % rc


# --------------------------------------------------------------------------
# Workloads

class Workload:
    def __init__(self, proc, info, name):
        self.proc = proc
        self.pid = proc.pid
        self.info = info
        self.name = name

    def alive(self):
        return self.proc.poll() is None

    def signal(self, sig):
        if self.proc.poll() is None:
            os.kill(self.pid, sig)

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            fail("workload %s (pid %d) did not exit within %.0fs"
                 % (self.name, self.pid, timeout))

    def read_line(self, timeout):
        """Next stdout line of the workload (str) or None at timeout/EOF."""
        return _readline(self.proc, timeout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def cpu_seconds(self):
        """utime+stime of the whole process from /proc (seconds)."""
        try:
            with open("/proc/%d/stat" % self.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            return None


_linebuf = {}


def _readline(proc, timeout):
    fd = proc.stdout.fileno()
    buf = _linebuf.setdefault(fd, b"")
    deadline = time.monotonic() + timeout
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            _linebuf[fd] = buf
            return None
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            _linebuf[fd] = buf
            return None
        buf += chunk
    line, buf = buf.split(b"\n", 1)
    _linebuf[fd] = buf
    return line.decode("utf-8", "replace")


def start_workload(python, script, *args, cwd=None, ready_timeout=30, env=None,
                   script_path=None):
    """Start `python script args...` and wait for its `READY {json}` line.

    The workload prints READY only once its hot code is running. Returns a
    Workload; its stderr goes to an artifact file."""
    check(python.exists(), "interpreter %s is missing" % python.path)
    path = script_path or os.path.join(WORKLOADS, script)
    check(os.path.isfile(path), "workload %s missing" % path)
    name = os.path.basename(path)
    errf = open(art_path("workload-%s-%d.stderr" % (_safe(name), len(_PROCS))), "wb")
    e = dict(os.environ)
    e.pop("PYTHONPATH", None)
    e["PYTHONUNBUFFERED"] = "1"
    e["PYTHONIOENCODING"] = "utf-8"
    if env:
        e.update(env)
    proc = spawn([python.path, path] + [str(a) for a in args],
                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errf,
                 cwd=cwd or WORKLOADS, env=e)
    errf.close()
    deadline = time.monotonic() + ready_timeout
    while True:
        line = _readline(proc, max(0.0, deadline - time.monotonic()))
        if line is None:
            rc = proc.poll()
            err = _tail(errf.name)
            fail("workload %s not ready within %ds (%s)%s"
                 % (name, ready_timeout, sigdesc(rc), (": " + err) if err else ""))
        if line.startswith("READY"):
            rest = line[5:].strip()
            info = json.loads(rest) if rest else {}
            if "pid" in info:
                check(info["pid"] == proc.pid,
                      "workload reported pid %s, started %d" % (info["pid"], proc.pid))
            return Workload(proc, info, name)


def _tail(path, n=400):
    try:
        with open(path, "rb") as f:
            data = f.read()
        return data[-n:].decode("utf-8", "replace").strip().replace("\n", " | ")
    except OSError:
        return ""


def _safe(s):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s)


# --------------------------------------------------------------------------
# The profiler

class ProfResult:
    def __init__(self, argv, rc, out, err, elapsed, tag, stats_path=None, outfile=None):
        self.argv = argv
        self.rc = rc
        self.out = out          # bytes of stdout
        self.err = err          # bytes of stderr
        self.elapsed = elapsed
        self.tag = tag
        self.stats_path = stats_path
        self.outfile = outfile
        self._stacks = None
        self._stats = None

    @property
    def cmd(self):
        return " ".join(_shq(a) for a in self.argv)

    @property
    def err_text(self):
        return self.err.decode("utf-8", "replace")

    def err_lines(self):
        return [l for l in self.err_text.split("\n") if l.strip()]

    def where(self):
        return "[cmd: %s; rc: %s; stderr: %s]" % (
            self.cmd, sigdesc(self.rc), _oneline(self.err_text, 300))

    def expect_ok(self):
        check(self.rc == 0, "profiler %s, expected exit 0 %s" % (sigdesc(self.rc), self.where()))
        return self

    def profile_bytes(self):
        if self.outfile:
            with open(self.outfile, "rb") as f:
                return f.read()
        return self.out

    def stacks(self):
        if self._stacks is None:
            self._stacks = parse_collapsed(self.profile_bytes(), self.where())
        return self._stacks

    def stats(self):
        if self._stats is None:
            check(self.stats_path and os.path.isfile(self.stats_path),
                  "--stats file %s not written %s" % (self.stats_path, self.where()))
            with open(self.stats_path, "rb") as f:
                raw = f.read()
            try:
                self._stats = json.loads(raw.decode("utf-8"))
            except ValueError as e:
                fail("--stats file is not JSON (%s): %r" % (e, raw[:200]))
        return self._stats


def _shq(a):
    return a if re.match(r"^[A-Za-z0-9_./=,:-]+$", a) else "'" + a.replace("'", "'\\''") + "'"


def _oneline(s, n):
    s = s.strip().replace("\n", " | ")
    return s if len(s) <= n else s[:n] + "..."


_RUNS = [0]


def _prof_argv(pids, args, stats):
    argv = [binary()]
    if pids is not None:
        if not isinstance(pids, (list, tuple)):
            pids = [pids]
        argv += ["-p", ",".join(str(p) for p in pids)]
    argv += [str(a) for a in args]
    _RUNS[0] += 1
    tag = "prof%d" % _RUNS[0]
    stats_path = None
    if stats:
        stats_path = art_path(tag + ".stats.json")
        argv += ["--stats", stats_path]
    return argv, tag, stats_path


class RunningProfiler:
    def __init__(self, proc, argv, tag, stats_path, outf, errf, outfile, t0):
        self.proc, self.argv, self.tag = proc, argv, tag
        self.stats_path, self.outf, self.errf, self.outfile = stats_path, outf, errf, outfile
        self.t0 = t0

    @property
    def pid(self):
        return self.proc.pid

    def signal(self, sig):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def finish(self, timeout):
        """Wait for exit; on timeout kill it and fail."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            res = self._result(None)
            fail("profiler did not exit within %.0fs %s" % (timeout, res.where()))
        return self._result(rc)

    def _result(self, rc):
        elapsed = time.monotonic() - self.t0
        with open(self.outf, "rb") as f:
            out = f.read()
        with open(self.errf, "rb") as f:
            err = f.read()
        return ProfResult(self.argv, rc, out, err, elapsed, self.tag,
                          self.stats_path, self.outfile)


def start_profiler(pids, args=(), stats=False, env=None, prefix=(), outfile=None,
                   stdout=None):
    """Start the profiler in the background; stdout/stderr go to artifact files
    (or stdout= an fd/file object)."""
    argv, tag, stats_path = _prof_argv(pids, args, stats)
    if outfile:
        argv += ["-o", outfile]
    argv = list(prefix) + argv
    outp = art_path(tag + ".stdout")
    errp = art_path(tag + ".stderr")
    with open(art_path(tag + ".cmd"), "w") as f:
        f.write(" ".join(_shq(a) for a in argv) + "\n")
    e = dict(os.environ)
    if env:
        for k, v in env.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
    outfh = open(outp, "wb")
    errfh = open(errp, "wb")
    t0 = time.monotonic()
    proc = spawn(argv, stdin=subprocess.DEVNULL,
                 stdout=stdout if stdout is not None else outfh, stderr=errfh, env=e)
    outfh.close()
    errfh.close()
    return RunningProfiler(proc, argv, tag, stats_path, outp, errp, outfile, t0)


def run_profiler(pids, args=(), timeout=60, stats=False, env=None, prefix=(),
                 outfile=None):
    return start_profiler(pids, args, stats=stats, env=env, prefix=prefix,
                          outfile=outfile).finish(timeout)


# --------------------------------------------------------------------------
# Collapsed stacks

class Frame:
    __slots__ = ("raw", "name", "file", "line", "marker")

    def __init__(self, raw):
        self.raw = raw
        m = _FRAME_RE.match(raw)
        if m:
            self.name, self.file, self.line = m.group(1), m.group(2), int(m.group(3))
            self.marker = None
        else:
            self.name, self.file, self.line = raw, None, None
            self.marker = raw

    def __repr__(self):
        return self.raw


_FRAME_RE = re.compile(r"^(.+) \((.+):(\d+)\)$", re.S)
PROCESS_ROOTS = [False]     # set by tests whose profile has process root frames
_UNKNOWN_RE = re.compile(r"^<unknown 0x[0-9a-f]+>$")
MARKERS = ("[truncated]", "[partial]")
# Frames the options add: kernel functions (--kernel), the GC leaf (--gc),
# thread roots (--threads), the exception type leaf (--mode exception:
# <ValueError>, or <exception 0x..> if its name was unreadable). Process
# roots (--all-python, --subprocesses) are any name at position 0 and are
# accepted when the caller says so.
_EXTRA_RE = re.compile(r"^(.+ \[k\]|<GC>|thread \d+( .*)?|<[A-Za-z_][A-Za-z0-9_.]*>|"
                       r"<exception 0x[0-9a-f]+>)$")


class Stack:
    __slots__ = ("frames", "count", "lineno")

    def __init__(self, frames, count, lineno):
        self.frames, self.count, self.lineno = frames, count, lineno

    @property
    def names(self):
        return [f.name for f in self.frames]

    @property
    def leaf(self):
        return self.frames[-1]

    @property
    def root(self):
        return self.frames[0]

    def short(self, n=6):
        names = self.names
        if len(names) > 2 * n:
            names = names[:n] + ["...(%d)..." % (len(names) - 2 * n)] + names[-n:]
        return ";".join(names) + " %d" % self.count


def parse_collapsed(data, where=""):
    """Strictly parse collapsed-stack output. Every line must be
    `frame;...;frame COUNT` with frames `name (file:line)`, `<unknown 0x..>`,
    or a root marker."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        fail("profile output is not valid UTF-8 (%s) %s" % (e, where))
    if text and not text.endswith("\n"):
        fail("profile output does not end with a newline (last line %r) %s"
             % (text.rsplit("\n", 1)[-1][:120], where))
    stacks = []
    for i, line in enumerate(text.split("\n")[:-1] if text else [], 1):
        stack_s, sep, count_s = line.rpartition(" ")
        if not sep or not count_s.isdigit() or not stack_s:
            fail("profile line %d is not `stack COUNT`: %r %s" % (i, line[:200], where))
        count = int(count_s)
        check(count > 0, "profile line %d has count 0: %r" % (i, line[:200]))
        frames = []
        for j, raw in enumerate(stack_s.split(";")):
            check(raw != "", "profile line %d has an empty frame: %r" % (i, line[:200]))
            check(not any(ord(c) < 32 or ord(c) == 127 for c in raw),
                  "profile line %d frame %d has a control character: %r" % (i, j, raw))
            fr = Frame(raw)
            if fr.marker is not None:
                ok = ((raw in MARKERS and j <= 2) or _UNKNOWN_RE.match(raw) or
                      _EXTRA_RE.match(raw) or (j == 0 and PROCESS_ROOTS[0]))
                check(ok, "profile line %d: malformed frame %r (expected "
                          "`name (file:line)`) %s" % (i, raw[:200], where))
            frames.append(fr)
        stacks.append(Stack(frames, count, i))
    seen = {}
    for s in stacks:
        key = tuple(f.raw for f in s.frames)
        check(key not in seen, "profile lines %d and %d are the same stack (not aggregated)"
              % (seen.get(key, 0), s.lineno))
        seen[key] = s.lineno
    return stacks


def total(stacks):
    return sum(s.count for s in stacks)


def check_stats_invariant(st, where=""):
    for k in ("collected", "written", "lost", "dropped", "partial", "truncated",
              "bad_code", "unknown_code", "stacks", "duration_s", "rate_hz_per_cpu",
              "bpf_ns_per_sample", "event"):
        check(k in st, "--stats JSON lacks %r: %s %s" % (k, json.dumps(st)[:300], where))
    d = st["dropped"]
    check(isinstance(d, dict), "--stats dropped is not an object: %r" % (d,))
    for k in ("no_tstate", "no_frames", "read_tstate"):
        check(k in d, "--stats dropped lacks %r: %s" % (k, json.dumps(d)))
    dsum = sum(d.values())
    check(st["collected"] == st["written"] + st["lost"] + dsum,
          "stats invariant broken: collected %d != written %d + lost %d + dropped %d (%s) %s"
          % (st["collected"], st["written"], st["lost"], dsum, json.dumps(d), where))


# --------------------------------------------------------------------------
# Misc

def unused_pid():
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    for pid in range(pid_max - 1, 1, -1):
        if not os.path.exists("/proc/%d" % pid):
            return pid
    fail("no unused pid found")


def max_sample_rate():
    with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
        return int(f.read())


def kernel_hz():
    """CONFIG_HZ of the running kernel, read independently of the profiler
    (from the kernel's own config; else 0)."""
    import gzip
    for path, opener in (("/proc/config.gz", gzip.open),
                         ("/boot/config-" + os.uname().release, open)):
        try:
            with opener(path, "rt") as f:
                for line in f:
                    if line.startswith("CONFIG_HZ="):
                        return int(line.split("=")[1])
        except OSError:
            pass
    return 0


def fmt_stacks(stacks, n=8):
    top = sorted(stacks, key=lambda s: -s.count)[:n]
    return " || ".join(s.short(4) for s in top)
