"""--function and --nolineno: a function's lines merged into one frame.

tests/workloads/lines.py spends its time in `handle`, spread over three hot
lines. Per line (the default) `handle` is three frames; with --function each
frame is `qualname (file:firstline)` and with --nolineno `qualname (file)`,
in every format: collapsed, svg, speedscope, pprof, summary.
"""
import gzip
import json
import re
import xml.etree.ElementTree as ET

from common import art_path, check, run_profiler, start_workload, timeout, one_build_per_version
from test_formats import SVG_NS, _decode_pprof
from common import old_python_too

ARGS = ["-F", 499, "-d", 2]


def _labels(text):
    """Every frame label of collapsed output (no strict parsing: --nolineno
    labels have no line)."""
    out = set()
    for line in text.splitlines():
        stack, _, _ = line.rpartition(" ")
        out.update(stack.split(";"))
    return out


def _handle_labels(labels):
    return sorted(l for l in labels if l.startswith("handle ("))


def _run(w, args, outfile=None):
    res = run_profiler(w.pid, ARGS + list(args), timeout=30, outfile=outfile).expect_ok()
    return res, res.profile_bytes()


@old_python_too
@timeout(120)
@one_build_per_version
def test_lines_collapsed(python):
    w = start_workload(python, "lines.py", 60)
    first = w.info["first"]
    res, data = _run(w, [])
    per_line = _handle_labels(_labels(data.decode()))
    check(len(per_line) >= 2, "per line, handle should be several frames: %s %s"
          % (per_line, res.where()))
    res, data = _run(w, ["--function"])
    labels = _labels(data.decode())
    want = "handle (lines.py:%d)" % first["handle"]
    check(_handle_labels(labels) == [want], "--function: handle frames %s, want only %r %s"
          % (_handle_labels(labels), want, res.where()))
    check("main (lines.py:%d)" % first["main"] in labels,
          "--function: the caller is not at its first line: %s %s"
          % (sorted(labels)[:8], res.where()))
    res, data = _run(w, ["--nolineno"])
    labels = _labels(data.decode())
    check(_handle_labels(labels) == ["handle (lines.py)"],
          "--nolineno: handle frames %s, want only 'handle (lines.py)' %s"
          % (_handle_labels(labels), res.where()))
    check(not any(re.search(r":\d+\)$", l) for l in labels),
          "--nolineno: a label still has a line: %s" % sorted(labels)[:8])


@timeout(150)
@one_build_per_version
def test_lines_formats(python):
    w = start_workload(python, "lines.py", 60)
    fl = w.info["first"]["handle"]
    # svg: one handle box, titled with the first line
    out = art_path("function.svg")
    res, _ = _run(w, ["--function"], outfile=out)
    titles = set(t.text.split("\n")[0] for t in ET.parse(out).getroot().iter(SVG_NS + "title"))
    got = sorted(t for t in titles if t.startswith("handle ("))
    check(got == ["handle (lines.py:%d)" % fl], "svg --function: handle boxes %s %s"
          % (got, res.where()))
    # speedscope: one handle frame whose line is the first line
    out = art_path("function.json")
    res, _ = _run(w, ["--function"], outfile=out)
    with open(out) as f:
        frames = json.load(f)["shared"]["frames"]
    got = [(fr.get("file"), fr.get("line")) for fr in frames if fr["name"] == "handle"]
    check(got == [("lines.py", fl)], "speedscope --function: handle frames %s, want %s %s"
          % (got, [("lines.py", fl)], res.where()))
    # pprof --nolineno: one handle location, line 0 (pprof's "unknown")
    out = art_path("nolineno.pb.gz")
    res, _ = _run(w, ["--nolineno"], outfile=out)
    with open(out, "rb") as f:
        prof = _decode_pprof(gzip.decompress(f.read()))
    st = prof["strings"]
    locs = [lid for lid, fid in prof["loc"].items() if st[prof["func"][fid]] == "handle"]
    lines = [prof["loc_line"][lid] for lid in locs]
    check(lines == [0], "pprof --nolineno: handle locations have lines %s, want [0] %s"
          % (lines, res.where()))
    # summary --nolineno: "handle (lines.py)"
    res, data = _run(w, ["--nolineno", "-f", "summary"])
    text = data.decode()
    check(re.search(r"  handle \(lines\.py\)\n", text),
          "summary --nolineno lacks 'handle (lines.py)': %r %s" % (text[:400], res.where()))
