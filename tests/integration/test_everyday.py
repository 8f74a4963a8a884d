"""Everyday use as a newcomer tries it (issue 16): which process -p means,
py-spy's spellings, and what stderr says at the end of a run.

- `-p TID` (a thread id, as `top -H` shows) profiles the thread's process and
  says so in one line; `-p W,W` is one process.
- `--pids` with `-p A,B` gives each process its root frame `name [PID]`.
- py-spy habits: `record` as a verb, `-r/--rate`, `--idle`, `--gil`,
  `-f flamegraph`, `-f raw`, `--nonblocking`.
- stderr after a run is ONE line (samples, mode, rate, processes; `wrote
  FILE (hint)` with -o); `-v` adds the details. Extensions are read
  case-insensitively (prof.SVG is an SVG), and titles name the mode.
"""
import json
import re

import common
from common import (art_path, check, primary_python, run_profiler, start_workload, timeout)

SUMMARY_RE = re.compile(r"^tachyon-bpf: (\d+) samples in [\d.]+ s \((cpu|wall|gil) mode, "
                        r"[\w-]+, (-F|-c) \d+(: [^)]*)?\), (\d+) process(es)?")


def _one_line(res, what):
    lines = res.err_lines()
    check(len(lines) == 1, "%s: want one line on stderr, got %d: %r" % (what, len(lines), lines))
    m = SUMMARY_RE.match(lines[0])
    check(m, "%s: not the summary line: %r" % (what, lines[0]))
    return lines[0], m


@timeout(60)
def test_pid_is_a_thread():
    """-p TID of a worker thread: its process is profiled, one line says so."""
    w = start_workload(primary_python(), "threads8.py", 60)
    tid = w.info["tids"]["worker_3"]
    check(tid != w.pid, "worker_3's tid is the pid")
    res = run_profiler(tid, ["-F", 199, "-d", 1], timeout=30).expect_ok()
    stacks = res.stacks()
    workers = set(n for s in stacks for n in s.names if n.startswith("worker_"))
    check(len(workers) >= 4, "-p TID: the process's threads are not profiled: %s %s"
          % (sorted(workers), res.where()))
    said = [l for l in res.err_lines() if "thread %d" % tid in l]
    check(len(said) == 1 and "process %d" % w.pid in said[0],
          "-p TID: want one line naming thread %d and process %d, got %r"
          % (tid, w.pid, res.err_lines()))
    # The same process twice (-p W,W, or a thread and its process) is one.
    res = run_profiler([w.pid, w.pid, tid], ["-F", 199, "-d", 1], timeout=30).expect_ok()
    m = SUMMARY_RE.match(res.err_lines()[-1])     # after the line about the thread
    check(m and m.group(5) == "1", "-p W,W,TID counted %s processes: %r"
          % (m and m.group(5), res.err_lines()))


@timeout(60)
def test_pids_two_processes_two_roots():
    """--pids with -p A,B of the same script: one root frame per process."""
    a = start_workload(primary_python(), "spinner.py", 60)
    b = start_workload(primary_python(), "spinner.py", 60)
    res = run_profiler([a.pid, b.pid], ["-F", 199, "-d", 1, "--pids"], timeout=30).expect_ok()
    common.PROCESS_ROOTS[0] = True
    try:
        roots = set(s.root.raw for s in res.stacks())
    finally:
        common.PROCESS_ROOTS[0] = False
    want = {"spinner.py [%d]" % a.pid, "spinner.py [%d]" % b.pid}
    check(want <= roots, "--pids -p A,B: roots %s, want %s %s" % (sorted(roots), sorted(want),
                                                                 res.where()))


@timeout(90)
def test_pyspy_spellings():
    """py-spy's command lines work as they read."""
    w = start_workload(primary_python(), "spinner.py", 80)
    svg, raw = art_path("pyspy.svg.out"), art_path("pyspy.raw.out")
    res = run_profiler(None, ["record", "-p", w.pid, "-r", 199, "-d", 1, "-f", "flamegraph",
                              "--nonblocking", "-o", svg], timeout=30).expect_ok()
    with open(svg, "rb") as f:
        check(f.read(5) in (b"<?xml", b"<svg "), "record -f flamegraph did not write an SVG")
    res = run_profiler(w.pid, ["--rate", 199, "-d", 1, "--format", "raw", "-o", raw],
                       timeout=30).expect_ok()
    stacks = common.parse_collapsed(open(raw, "rb").read(), res.where())
    check(any("spin_inner" in s.names for s in stacks), "-f raw: no spin_inner %s" % res.where())
    _, m = _one_line(res, "--rate 199")
    check(m.group(3) == "-F" and "-F 199" in res.err_text, "--rate is not -F: %r" % res.err_text)
    for opt, mode in (("--idle", "wall"), ("-i", "wall"), ("--gil", "gil"), ("-g", "gil")):
        res = run_profiler(w.pid, [opt, "-d", 1, "-o", "/dev/null"], timeout=30).expect_ok()
        _, m = _one_line(res, opt)
        check(m.group(2) == mode, "%s ran in %s mode, want %s" % (opt, m.group(2), mode))


@timeout(90)
def test_stderr_one_line_and_titles():
    """A run says one line on stderr, naming the file it wrote and what to do
    with it; prof.SVG is an SVG; SVG and speedscope titles name the mode."""
    w = start_workload(primary_python(), "spinner.py", 80)
    svg = art_path("prof.SVG")
    res = run_profiler(w.pid, ["-m", "wall", "-F", 199, "-d", 1, "-o", svg],
                       timeout=30).expect_ok()
    line, m = _one_line(res, "-o prof.SVG")
    check(line.endswith("; wrote %s (open it in a browser)" % svg),
          "no 'wrote FILE (open it in a browser)': %r" % line)
    with open(svg, "rb") as f:
        data = f.read()
    check(data[:5] in (b"<?xml", b"<svg "), "-o prof.SVG is not an SVG: %r" % data[:40])
    check(re.search(rb"samples, wall mode, [a-z-]+, -F 199", data),
          "the SVG subtitle does not say wall mode")
    js = art_path("prof.json")
    res = run_profiler(w.pid, ["-m", "wall", "-c", 5000000, "-d", 1, "-o", js],
                       timeout=30).expect_ok()
    name = json.load(open(js))["name"]
    check("wall mode" in name and "-c 5000000" in name,
          "speedscope name %r lacks the mode and the period" % name)
    res = run_profiler(w.pid, ["-F", 199, "-d", 1, "-v"], timeout=30).expect_ok()
    check(any(re.search(r"\d+ distinct stacks", l) for l in res.err_lines()),
          "-v: no detailed statistics: %r" % res.err_lines())
