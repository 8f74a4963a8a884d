"""pstats output read by Python's own pstats module.

Workload: tests/workloads/callgraph.py (known call graph, instrumented leaf
shares), profiled with -F 999 -d 3 -o prof.pstats. The file is loaded with
pstats.Stats in this process and with `python3 -m pstats FILE`; the checks:
every sample is in the times (sum of tottime = samples / rate), the leaves'
tottime shares match the instrumented ones, leaf_heavy tops the tottime
sort, functions are keyed by their `def` line (co_firstlineno, as cProfile
does), main's cumtime is the whole profile, and each leaf's callers are its
real callers with counts adding up to its own.
"""
import json
import marshal
import os
import pstats
import re
import signal
import subprocess
import sys

from common import (WORKLOADS, art_path, check, primary_python, run_profiler,
                    start_workload, timeout)

FREQ = 999
SECONDS = 3
SHARE_TOL = 0.03
# The callers of each leaf in callgraph.py.
CALLERS = {
    "leaf_heavy": {"phase_a", "phase_nested.<locals>.inner"},
    "leaf_medium": {"Pipeline.stage"},
    "leaf_mid": {"phase_nested.<locals>.inner"},
    "leaf_light": {"phase_a"},
    "leaf_tiny": {"Pipeline.stage"},
}


def _def_lines():
    """Each function's `def` line in callgraph.py (its co_firstlineno)."""
    lines = {}
    with open(os.path.join(WORKLOADS, "callgraph.py"), encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            m = re.match(r"^\s*def (\w+)\(", line)
            if m:
                lines.setdefault(m.group(1), i)
    return lines


def _record(path):
    truth_path = art_path("callgraph.truth.json")
    w = start_workload(primary_python(), "callgraph.py", truth_path, "--max-seconds", 40,
                       cwd=WORKLOADS)
    res = run_profiler(w.pid, ["-F", FREQ, "-d", SECONDS], timeout=SECONDS + 30, stats=True,
                       outfile=path).expect_ok()
    w.signal(signal.SIGUSR1)
    w.wait(20)
    check(res.out == b"", "stdout not empty with -o: %r" % res.out[:200])
    check("python3 -m pstats" in res.err_text, "no pstats hint in %s" % res.where())
    with open(truth_path) as f:
        return res, json.load(f)


def _by_name(st):
    """name -> (key, value); names are unique in callgraph.py."""
    out = {}
    for key, val in st.stats.items():
        check(key[2] not in out, "two functions named %r: %s, %s" % (key[2], out.get(key[2]),
                                                                     key))
        out[key[2]] = (key, val)
    return out


@timeout(90)
def test_pstats_loads():
    path = art_path("prof.pstats")
    res, truth = _record(path)
    written = res.stats()["written"]
    check(written >= 0.25 * FREQ * SECONDS, "only %d samples %s" % (written, res.where()))
    with open(path, "rb") as f:
        data = f.read()
    # Our encoding is marshal version 2's, byte for byte.
    check(marshal.dumps(marshal.loads(data), 2) == data,
          "the file is not marshal.dumps(marshal.load(file), 2)")
    st = pstats.Stats(path)
    check(round(st.total_tt * FREQ) == written,
          "sum of tottime %.4f s is %d samples at %d Hz, --stats says %d"
          % (st.total_tt, round(st.total_tt * FREQ), FREQ, written))
    funcs = _by_name(st)
    defs = _def_lines()
    errors = []
    for name, (key, (cc, nc, tt, ct, callers)) in funcs.items():
        if key[0] != truth["file"]:
            errors.append("%s: file %r, expected %r" % (name, key[0], truth["file"]))
        short = name.rsplit(".", 1)[-1]
        if short in defs and key[1] != defs[short]:
            errors.append("%s: first line %d, its def is on line %d" % (name, key[1], defs[short]))
        if nc != cc or ct < tt:
            errors.append("%s: cc %d nc %d tt %.3f ct %.3f (no recursion here)"
                          % (name, cc, nc, tt, ct))
    for leaf, want in truth["leaf_share"].items():
        key, (cc, nc, tt, ct, callers) = funcs[leaf]
        got = tt / st.total_tt
        if abs(got - want) > SHARE_TOL:
            errors.append("%s: tottime share %.3f, instrumented %.3f" % (leaf, got, want))
        names = {k[2] for k in callers}
        if names != CALLERS[leaf]:
            errors.append("%s: callers %s, expected %s" % (leaf, sorted(names),
                                                           sorted(CALLERS[leaf])))
        if sum(v[1] for v in callers.values()) != cc:
            errors.append("%s: callers' counts %s do not add up to its %d samples"
                          % (leaf, callers, cc))
    # leaf_heavy: 25 units from phase_a, 15 from inner.
    _, (cc, _, _, _, callers) = funcs["leaf_heavy"]
    from_a = sum(v[1] for k, v in callers.items() if k[2] == "phase_a")
    if cc and abs(from_a / cc - 25 / 40) > 0.1:
        errors.append("leaf_heavy: %.2f of its samples from phase_a, expected 0.62"
                      % (from_a / cc))
    _, (cc, _, _, ct, _) = funcs["main"]
    if cc < 0.99 * written:
        errors.append("main is on %d of %d samples" % (cc, written))
    top = st.sort_stats("tottime").fcn_list[0]
    if top[2] != "leaf_heavy":
        errors.append("top by tottime is %s, expected leaf_heavy" % (top,))
    check(not errors, "; ".join(errors) + " " + res.where())


@timeout(90)
def test_pstats_cli():
    """`python3 -m pstats FILE`: the browser reads it and sorts it."""
    path = art_path("cli.pstats")
    res, _ = _record(path)
    out = subprocess.run([sys.executable, "-m", "pstats", path],
                         input="sort tottime\nstats 3\ncallers leaf_medium\nquit\n",
                         capture_output=True, text=True, timeout=30)
    check(out.returncode == 0, "python3 -m pstats exited %d: %s"
          % (out.returncode, out.stderr[-500:]))
    rows = [l for l in out.stdout.split("\n") if re.match(r"^\s+\d+\s+\d+\.\d+", l)]
    check(rows and "(leaf_heavy)" in rows[0],
          "first row of `stats 3` sorted by tottime is not leaf_heavy: %r"
          % out.stdout[-1500:])
    check(re.search(r"\(leaf_medium\)\s+<-\s+\d+\s+[\d.]+\s+[\d.]+\s+\S+\(Pipeline\.stage\)",
                    out.stdout),
          "`callers leaf_medium` does not show Pipeline.stage: %r" % out.stdout[-1500:])
