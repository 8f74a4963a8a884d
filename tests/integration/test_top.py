"""tachyon-bpf top: the live table, driven in a real terminal (tmux).

`top` runs in a detached tmux session of a fixed size (its own tmux server,
killed at the end). capture-pane reads the screen; send-keys types. Against
tests/workloads/callgraph.py, whose leaves have known shares (leaf_heavy 40%,
leaf_medium 25%, leaf_mid 20%, ...), the table must name the hot functions
with plausible percentages, sort by the column the keys choose, freeze on
`p`, and leave on `q`, Ctrl-C or the target's exit with status 0 and the
terminal restored (`stty -a` after it shows echo and canonical mode back).

Also here, for the same tmux helper: recording's progress line on a terminal
and --summary (`run.py record_` selects those two).
"""
import os
import re
import shutil
import signal
import subprocess
import time

from common import (WORKLOADS, art_path, binary, check, fail, primary_python, pyenv_python,
                    run_profiler, sigdesc, spawn, start_workload, timeout, unused_pid)

COLS, ROWS = 140, 40
ROW_RE = re.compile(r"^\s*([\d.]+)%\s+([\d.]+)%\s+([\d.]+)\s+([\d.]+)\s+(.+?) \((.+):(\d+)\)\s*$")


class Tmux:
    """One tmux server (own socket) with one session running `cmd`."""

    def __init__(self, name, cmd, stderr_to_file=True):
        check(shutil.which("tmux"), "tmux is not installed (run scripts/deps.sh)")
        self.sock = "tb-%s-%d" % (name, os.getpid())
        self.rc_path = art_path(name + ".rc")
        self.err_path = art_path(name + ".stderr")
        self.stty_path = art_path(name + ".stty")
        if stderr_to_file:
            cmd += " 2>" + self.err_path
        # The exit status appears atomically, after `stty -a` has recorded
        # the terminal modes top left behind. The pane then lives a little
        # longer for capture-pane, and ends by itself should close() not run.
        shell = ("%s; echo $? > %s.tmp; stty -a > %s; mv %s.tmp %s; sleep 90"
                 % (cmd, self.rc_path, self.stty_path, self.rc_path, self.rc_path))
        self._tmux("new-session", "-d", "-s", "t", "-x", str(COLS), "-y", str(ROWS), shell)

    def _tmux(self, *args):
        p = subprocess.run(["tmux", "-L", self.sock] + list(args), capture_output=True,
                           timeout=10, env=dict(os.environ, TERM="xterm"))
        check(p.returncode == 0, "tmux %s failed: %s" % (args[0], p.stderr.decode().strip()))
        return p.stdout.decode("utf-8", "replace")

    def screen(self):
        return self._tmux("capture-pane", "-p", "-t", "t")

    def keys(self, *keys):
        self._tmux("send-keys", "-t", "t", *keys)

    def wait_screen(self, pred, secs, what):
        deadline = time.monotonic() + secs
        while True:
            s = self.screen()
            if pred(s):
                return s
            if time.monotonic() > deadline:
                fail("%s: not on the screen within %ds; screen:\n%s%s"
                     % (what, secs, s, self.stderr()))
            time.sleep(0.2)

    def wait_exit(self, secs):
        deadline = time.monotonic() + secs
        while not os.path.exists(self.rc_path):
            if time.monotonic() > deadline:
                fail("top did not exit within %ds; screen:\n%s%s"
                     % (secs, self.screen(), self.stderr()))
            time.sleep(0.1)
        with open(self.rc_path) as f:
            return int(f.read().strip())

    def stderr(self):
        try:
            with open(self.err_path) as f:
                t = f.read().strip()
            return ("\nstderr: " + t) if t else ""
        except OSError:
            return ""

    def check_terminal_restored(self):
        with open(self.stty_path) as f:
            st = f.read()
        for flag in ("icanon", "echo", "isig"):
            check(re.search(r"(^|\s)%s(\s|$)" % flag, st),
                  "terminal not restored after top: `stty -a` lacks %s: %s" % (flag, st))
        s = self.screen()
        check("%Self" not in s, "top's table is still on the screen after exit:\n%s" % s)

    def close(self):
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True,
                       timeout=10)
        tmpdir = os.environ.get("TMUX_TMPDIR") or "/tmp"
        try:
            os.unlink(os.path.join(tmpdir, "tmux-%d" % os.getuid(), self.sock))
        except OSError:
            pass


def _rows(screen):
    rows = []
    for l in screen.split("\n"):
        m = ROW_RE.match(l)
        if m:
            rows.append({"wself": float(m.group(1)), "wtotal": float(m.group(2)),
                         "self": float(m.group(3)), "total": float(m.group(4)),
                         "name": m.group(5), "file": m.group(6), "line": int(m.group(7))})
    return rows


def _table_ready(s):
    rows = _rows(s)
    return any(r["name"] == "leaf_heavy" and r["wself"] > 0 for r in rows) and \
        "Samples:" in s


def _sorted_by(rows, key):
    vals = [r[key] for r in rows]
    return all(a >= b for a, b in zip(vals, vals[1:]))


def _callgraph():
    return start_workload(primary_python(), "callgraph.py", art_path("truth.json"),
                          "--max-seconds", 50, cwd=WORKLOADS)


@timeout(180)
def test_top_table_and_keys():
    w = _callgraph()
    t = Tmux("keys", "%s top -p %d -F 499" % (binary(), w.pid))
    try:
        s = t.wait_screen(_table_ready, 40, "a table row for leaf_heavy")
        # Let a full window pass so the shares settle.
        time.sleep(1.5)
        s = t.screen()
        rows = _rows(s)
        where = "\nscreen:\n%s" % s
        check("pid %d" % w.pid in s and "callgraph.py" in s,
              "the title does not name the target%s" % where)
        check("Sort: %Self" in s, "default sort is not %%Self%s" % where)
        check(_sorted_by(rows, "wself"), "rows not sorted by %%Self%s" % where)
        check(rows[0]["name"] == "leaf_heavy", "top row is %r, expected leaf_heavy (40%% of "
              "the work)%s" % (rows[0]["name"], where))
        check(15 <= rows[0]["wself"] <= 65, "leaf_heavy %%Self %.1f, expected about 40%s"
              % (rows[0]["wself"], where))
        names = {r["name"] for r in rows}
        for fn in ("leaf_heavy", "leaf_medium", "leaf_mid", "main", "<module>"):
            check(fn in names, "%s missing from the table%s" % (fn, where))
        mod = [r for r in rows if r["name"] == "<module>"][0]
        check(mod["wtotal"] >= 90 and mod["wself"] < 5, "<module> has %%Total %.1f %%Self "
              "%.1f, expected ~100 and ~0%s" % (mod["wtotal"], mod["wself"], where))
        heavy = [r for r in rows if r["name"] == "leaf_heavy"][0]
        check(heavy["file"].endswith("callgraph.py") and heavy["line"] > 0,
              "leaf_heavy's location %s:%d%s" % (heavy["file"], heavy["line"], where))
        check(heavy["self"] > 0 and heavy["total"] >= heavy["self"],
              "cumulative seconds of leaf_heavy: self %.2f total %.2f%s"
              % (heavy["self"], heavy["total"], where))

        # t: sort by %Total.
        t.keys("t")
        s = t.wait_screen(lambda s: "Sort: %Total" in s, 15, "Sort: %Total after `t`")
        rows = _rows(s)
        check(_sorted_by(rows, "wtotal"), "after `t`, rows not sorted by %%Total:\n%s" % s)
        check(rows[0]["name"] in ("<module>", "main"), "after `t`, the top row is %r, "
              "expected <module> or main:\n%s" % (rows[0]["name"], s))

        # 4: cumulative Total; s: back to %Self.
        t.keys("4")
        s = t.wait_screen(lambda s: "Sort: Total " in s, 15, "Sort: Total after `4`")
        check(_sorted_by(_rows(s), "total"), "after `4`, rows not sorted by Total:\n%s" % s)
        t.keys("s")
        s = t.wait_screen(lambda s: "Sort: %Self" in s, 15, "Sort: %Self after `s`")

        # p: the display freezes; p again: it moves on.
        t.keys("p")
        s1 = t.wait_screen(lambda s: "[PAUSED]" in s, 15, "[PAUSED] after `p`")
        time.sleep(2.5)
        s2 = t.screen()
        check(_rows(s1) == _rows(s2), "the table changed while paused:\n%s\n---\n%s" % (s1, s2))
        t.keys("p")
        t.wait_screen(lambda s: "[PAUSED]" not in s and _rows(s) != _rows(s2), 15,
                      "a refreshed table after the second `p`")

        t.keys("q")
        rc = t.wait_exit(20)
        check(rc == 0, "top exited with %d after `q`%s" % (rc, t.stderr()))
        t.check_terminal_restored()
        check(w.alive(), "the workload died")
    finally:
        t.close()


@timeout(120)
def test_top_ctrl_c():
    w = _callgraph()
    t = Tmux("ctrlc", "%s top -p %d" % (binary(), w.pid))
    try:
        t.wait_screen(lambda s: "%Self" in s, 40, "the table header")
        t.keys("C-c")
        rc = t.wait_exit(20)
        check(rc == 0, "top exited with %d after Ctrl-C%s" % (rc, t.stderr()))
        t.check_terminal_restored()
    finally:
        t.close()


@timeout(120)
def test_top_target_exits():
    w = start_workload(primary_python(), "spinner.py", 120)
    t = Tmux("exit", "%s top -p %d -F 199" % (binary(), w.pid))
    try:
        t.wait_screen(lambda s: "spin_inner" in s, 40, "spin_inner")
        w.signal(signal.SIGUSR1)    # spinner.py exits 0 on SIGUSR1
        rc = t.wait_exit(40)
        check(rc == 0, "top exited with %d when the target exited%s" % (rc, t.stderr()))
        t.check_terminal_restored()
        check("exited" in t.stderr(), "no line saying the target exited%s" % t.stderr())
    finally:
        t.close()


@timeout(30)
def test_top_needs_terminal():
    w = start_workload(primary_python(), "spinner.py", 20)
    p = spawn([binary(), "top", "-p", str(w.pid)], stdin=subprocess.DEVNULL,
              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(timeout=20)
    lines = err.decode().strip().split("\n")
    check(p.returncode == 1, "top without a terminal exited %d, expected 1" % p.returncode)
    check(len(lines) == 1 and re.match(r"^tachyon-bpf: top: .*not a terminal .*\(.+\)$", lines[0]),
          "expected one line saying top needs a terminal, got %r" % err)
    check(out == b"", "stdout not empty: %r" % out[:200])
    for args, msg in ((["-o", "x"], "--output: not an option of top"),
                      (["--", "true"], "top does not start programs"),
                      ([], "no target")):
        argv = [binary(), "top"] + (["-p", str(w.pid)] if args != [] else []) + args
        p = subprocess.run(argv, capture_output=True, timeout=10)
        e = p.stderr.decode().strip()
        check(p.returncode == 2 and "\n" not in e and msg in e,
              "top %s: exit %d, stderr %r; expected exit 2 and %r" % (args, p.returncode, e, msg))


@timeout(60)
def test_top_attach_errors():
    """A target top cannot watch: one line, exit 1, no crash (top's screen
    was never set up, so there is nothing to tear down)."""
    sleeper = spawn(["sleep", "60"], stdin=subprocess.DEVNULL)
    old = start_workload(pyenv_python("3.7.16"), "spinner.py", 60)
    for pid, what, word in ((unused_pid(), "no such pid", "no such process"),
                            (sleeper.pid, "not Python", "not a Python process"),
                            (old.pid, "Python 3.7", "3.7")):
        p = subprocess.run([binary(), "top", "-p", str(pid)], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=20)
        e = p.stderr.decode().strip()
        check(p.returncode == 1, "top -p %d (%s): %s, expected exit 1; stderr %r"
              % (pid, what, sigdesc(p.returncode), e))
        check("\n" not in e and word in e and e.startswith("tachyon-bpf: "),
              "top -p %d (%s): expected one line with %r, got %r" % (pid, what, word, e))
        check(p.stdout == b"", "top -p %d (%s): stdout not empty: %r" % (pid, what, p.stdout))


# --------------------------------------------------------------------------
# Recording's terminal features: the progress line and --summary. They live
# here for the tmux helper; `run.py record_` selects them.

SUMMARY_ROW_RE = re.compile(r"^\s*([\d.]+)% +([\d.]+)% +(\d+) +(\d+)  (.+)$")


@timeout(120)
def test_record_summary():
    """--summary: after the profile (any format), the summary table on stderr."""
    w = _callgraph()
    out = art_path("summary.svg")
    res = run_profiler(w.pid, ["-F", 499, "-d", 2, "--summary"], timeout=40,
                       outfile=out).expect_ok()
    where = res.where()
    check(open(out, "rb").read(5) in (b"<?xml", b"<svg "), "-o x.svg is not an SVG %s" % where)
    err = res.err_text
    check("\r" not in err and "\x1b" not in err,
          "stderr is a file but got a progress line: %r" % err[:300])
    lines = err.split("\n")
    heads = [i for i, l in enumerate(lines) if l.startswith("# ") and "samples in" in l]
    check(len(heads) == 1, "no single summary header (`# N samples in ...`) on stderr %s" % where)
    i = heads[0]
    check(re.match(r"^\s*self%\s+total%\s+self\s+total\s+function", lines[i + 1]),
          "summary column heads missing: %r" % lines[i + 1])
    rows = [SUMMARY_ROW_RE.match(l) for l in lines[i + 2:]]
    rows = [m for m in rows if m]
    check(rows and rows[0].group(5).startswith("leaf_heavy "),
          "summary's first row is not leaf_heavy: %r %s" % (rows[:1] and rows[0].group(0), where))
    stats_at = [j for j, l in enumerate(lines) if re.match(r"^tachyon-bpf: \d+ samples in", l)]
    check(stats_at and stats_at[0] > i, "the summary should come before the closing "
          "statistics %s" % where)


@timeout(120)
def test_record_progress():
    """On a terminal, a progress line while recording (saying how to stop),
    erased at the end."""
    w = start_workload(primary_python(), "spinner.py", 30)
    out = art_path("progress.folded")
    t = Tmux("progress", "%s -p %d -F 199 -d 4 -o %s" % (binary(), w.pid, out),
             stderr_to_file=False)
    try:
        s = t.wait_screen(lambda s: re.search(r"tachyon-bpf: \d+\.\d s, [1-9]\d* samples "
                                              r"\(\d+/s\), lost \d+, .*\(Ctrl-C to stop\)", s),
                          40, "a progress line with samples, saying Ctrl-C stops")
        rc = t.wait_exit(40)
        check(rc == 0, "recording exited %d" % rc)
        s = t.screen()
        check(not re.search(r"samples \(\d+/s\), lost", s),
              "the progress line is still on the screen after the run:\n%s" % s)
        check(re.search(r"^tachyon-bpf: \d+ samples in", s, re.M),
              "the closing statistics are not on the screen:\n%s" % s)
        check(os.path.getsize(out) > 0, "no profile written")
    finally:
        t.close()



@timeout(60)
def test_top_dumb_terminal():
    """TERM=dumb in a pty: top drew nothing usable and exited 0; a terminal
    that cannot place the cursor is refused like an unset TERM."""
    w = start_workload(primary_python(), "spinner.py", 30)
    for term in ("dumb", None):
        master, slave = os.openpty()
        env = dict(os.environ)
        env.pop("TERM", None)
        if term:
            env["TERM"] = term
        p = spawn([binary(), "top", "-p", str(w.pid), "-d", "3"], stdin=slave, stdout=slave,
                  stderr=subprocess.PIPE, env=env)
        os.close(slave)
        _, err = p.communicate(timeout=20)
        os.close(master)
        lines = err.decode().strip().split("\n")
        check(p.returncode == 1 and len(lines) == 1
              and re.match(r"^tachyon-bpf: top: .*'%s'.* \(set TERM .+\)$" % (term or ""), lines[0]),
              "top with TERM=%s: exit %d, stderr %r; want exit 1 and one line to set TERM"
              % (term, p.returncode, err))
