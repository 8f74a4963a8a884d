"""tachyon-bpf diff: a differential flame graph of two recordings.

Workload: tests/workloads/shift.py, recorded twice (-F 999 -d 2, collapsed)
with GROW 0.1 then 0.9: `grows` goes from 7% to 63% of the samples,
`shrinks` from 63% to 7%, `steady` stays at 30%. The diff's SVG must draw
grows red and shrinks blue, deeply, steady pale, with deltas in their
tooltips near +/-56% of all samples; `-f collapsed` gives difffolded.pl's
"stack BASE NEW" lines, BASE scaled to NEW's total unless --no-normalize.
Bad input: one `tachyon-bpf: ...` line and exit 1 (files) or 2 (usage).
"""
import os
import re
import subprocess
import xml.etree.ElementTree as ET

from common import (WORKLOADS, art_path, binary, check, parse_collapsed, primary_python,
                    run_profiler, start_workload, timeout, total)
from test_formats import _png_pixels, _render

FREQ = 999
SECONDS = 2
SHIFT = 0.63 - 0.07     # grows' share gained, shrinks' lost
SHIFT_TOL = 0.08
SVG_NS = "{http://www.w3.org/2000/svg}"


def _record(grow, name):
    w = start_workload(primary_python(), "shift.py", grow, "--max-seconds", 30, cwd=WORKLOADS)
    path = art_path(name)
    res = run_profiler(w.pid, ["-F", FREQ, "-d", SECONDS], timeout=SECONDS + 30,
                       outfile=path).expect_ok()
    w.stop()
    with open(path, "rb") as f:
        stacks = parse_collapsed(f.read(), res.where())
    check(total(stacks) >= 300, "only %d samples %s"
          % (total(stacks), res.where()))
    return path, stacks


def _recordings():
    base, bstacks = _record("0.1", "base.folded")
    new, nstacks = _record("0.9", "new.folded")
    return base, new, bstacks, nstacks


def _diff(*args):
    out = subprocess.run([binary(), "diff"] + [str(a) for a in args], capture_output=True,
                         timeout=30)
    return out.returncode, out.stdout, out.stderr.decode("utf-8", "replace")


def _frames(svg_path):
    """leaf function name -> (samples, delta, (r, g, b)) of the SVG's frames.
    A function with frames at several lines (a sample at its `return`
    line now and then) gets their samples and deltas summed, and the
    colour of its largest frame."""
    parts = {}
    root = ET.parse(svg_path).getroot()
    for g in root.iter(SVG_NS + "g"):
        if g.get("class") != "f":
            continue
        title = g.find(SVG_NS + "title").text
        fill = g.find(SVG_NS + "rect").get("fill")
        m = re.match(r"^(\S+) \(.*\)\n(\d+) samples \([\d.]+%\); delta ([+-]\d+) \(([+-][\d.]+)%\)$",
                     title)
        c = re.match(r"^rgb\((\d+),(\d+),(\d+)\)$", fill)
        if m and c:
            parts.setdefault(m.group(1), []).append(
                (int(m.group(2)), float(m.group(4)) / 100, tuple(int(x) for x in c.groups())))
    return {fn: (sum(p[0] for p in ps), sum(p[1] for p in ps), max(ps)[2])
            for fn, ps in parts.items()}


def _share(stacks, fn):
    return sum(s.count for s in stacks if s.leaf.name == fn) / total(stacks)


@timeout(180)
def test_diff_shift():
    base, new, bstacks, nstacks = _recordings()
    got = {fn: _share(nstacks, fn) - _share(bstacks, fn) for fn in ("grows", "shrinks")}
    check(abs(got["grows"] - SHIFT) < SHIFT_TOL and abs(got["shrinks"] + SHIFT) < SHIFT_TOL,
          "the recordings do not show the shift: %s" % got)
    svg = art_path("diff.svg")
    rc, out, err = _diff(base, new, "-o", svg)
    check(rc == 0 and out == b"", "diff exited %d, stdout %r, stderr %r" % (rc, out[:100], err))
    check(os.path.basename(svg) in err, "no closing line naming %s: %r" % (svg, err))
    frames = _frames(svg)
    for fn in ("main", "steady", "grows", "shrinks"):
        check(fn in frames, "no %s frame with a delta in its title in %s: %s"
              % (fn, svg, sorted(frames)))
    errors = []
    n, delta, (r, g, b) = frames["grows"]
    if not (r == 255 and g == b and g < 110):
        errors.append("grows is rgb(%d,%d,%d), expected a deep red" % (r, g, b))
    if abs(delta - SHIFT) > SHIFT_TOL:
        errors.append("grows' delta %+.3f, expected %+.2f" % (delta, SHIFT))
    n, delta, (r, g, b) = frames["shrinks"]
    if not (b == 255 and r == g and r < 110):
        errors.append("shrinks is rgb(%d,%d,%d), expected a deep blue" % (r, g, b))
    if abs(delta + SHIFT) > SHIFT_TOL:
        errors.append("shrinks' delta %+.3f, expected %+.2f" % (delta, -SHIFT))
    _, delta, rgb = frames["steady"]
    if min(rgb) < 150 or abs(delta) > SHIFT_TOL:
        errors.append("steady is rgb%s with delta %+.3f, expected pale" % (rgb, delta))
    # Sized by NEW: each frame's samples are NEW's.
    want = sum(s.count for s in nstacks if s.leaf.name == "grows")
    if frames["grows"][0] != want:
        errors.append("grows has %d samples in the SVG, %d in NEW" % (frames["grows"][0], want))
    check(not errors, "; ".join(errors))
    _check_rendered(svg, frames["grows"][2], frames["shrinks"][2])


def _check_rendered(svg, red, blue):
    """Headless Chromium draws both colours (the SVG's script ran: no error)."""
    w, h, bpp, rows = _png_pixels(_render(svg, ""))
    seen = {red: 0, blue: 0}
    for row in rows:
        for x in range(0, w * bpp, bpp):
            px = (row[x], row[x + 1], row[x + 2])
            for c in seen:
                if all(abs(a - b) <= 6 for a, b in zip(px, c)):
                    seen[c] += 1
    check(all(n > 200 for n in seen.values()),
          "screenshot of %s: pixels of grows' rgb%s and shrinks' rgb%s: %s"
          % (svg, red, blue, list(seen.values())))


def _parse_diff_lines(data):
    rows = {}
    for line in data.decode().split("\n")[:-1]:
        m = re.match(r"^(.*) (\d+) (\d+)$", line)
        check(m, "diff -f collapsed line is not 'stack BASE NEW': %r" % line)
        rows[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return rows


@timeout(120)
def test_diff_collapsed():
    base, new, bstacks, nstacks = _recordings()
    braw = {";".join(f.raw for f in s.frames): s.count for s in bstacks}
    nraw = {";".join(f.raw for f in s.frames): s.count for s in nstacks}
    rc, out, err = _diff(base, new, "-f", "collapsed", "--no-normalize")
    check(rc == 0, "diff -f collapsed --no-normalize exited %d: %s" % (rc, err))
    rows = _parse_diff_lines(out)
    check(set(rows) == set(braw) | set(nraw), "stacks differ from the union of both files")
    for k, (b, n) in rows.items():
        check((b, n) == (braw.get(k, 0), nraw.get(k, 0)),
              "%s: %d %d, files say %d %d" % (k, b, n, braw.get(k, 0), nraw.get(k, 0)))
    rc, out, err = _diff(base, new, "-o", art_path("diff.folded"))
    check(rc == 0, "diff -o diff.folded exited %d: %s" % (rc, err))
    with open(art_path("diff.folded"), "rb") as f:
        rows = _parse_diff_lines(f.read())
    scale = total(nstacks) / total(bstacks)
    for k, (b, n) in rows.items():
        check(abs(b - braw.get(k, 0) * scale) <= 0.5 and n == nraw.get(k, 0),
              "%s: base %d, expected %d scaled by %.3f" % (k, b, braw.get(k, 0), scale))


def _one_error(rc, out, err, want_rc, pattern):
    lines = [l for l in err.split("\n") if l]
    check(rc == want_rc and out == b"" and len(lines) == 1 and lines[0].startswith("tachyon-bpf: ")
          and re.search(pattern, lines[0]),
          "expected exit %d and one line matching %r, got exit %d, stdout %r, stderr %r"
          % (want_rc, pattern, rc, out[:100], err))


def test_diff_errors():
    good = art_path("good.folded")
    with open(good, "w") as f:
        f.write("main (a.py:1);f (a.py:2) 5\n")
    bad = art_path("bad.folded")
    with open(bad, "w") as f:
        f.write("main (a.py:1) 5\nmain (a.py:1);f (a.py:2)\n")
    missing = art_path("missing.folded")
    _one_error(*_diff(missing, good), 1, re.escape(missing) + ": No such file")
    _one_error(*_diff(good, bad), 1, re.escape(bad) + r":2: not 'stack COUNT'")
    _one_error(*_diff(good, "/bin/true"), 1, r"binary data.*replay")
    _one_error(*_diff(good), 2, r"missing BASE or NEW")
    _one_error(*_diff(good, good, good), 2, r"more than two")
    _one_error(*_diff(good, good, "--bogus"), 2, r"--bogus: unknown option")
    _one_error(*_diff(good, good, "-o", art_path("x.json")), 2, r"svg or collapsed")
    _one_error(*_diff(good, good, "-f", "pprof"), 2, r"svg or collapsed")
    # an extension no format has: refused as the main -o and replay -o refuse it
    xyz = art_path("d.xyz")
    _one_error(*_diff(good, good, "-o", xyz), 2, r"\.xyz is not the extension")
    check(not os.path.exists(xyz), "diff -o d.xyz: the file was written")
    # an empty profile: one line naming it, exit 1, nothing written
    empty = art_path("empty.folded")
    open(empty, "w").close()
    for pair in ((empty, empty), (empty, good), (good, empty)):
        svg = art_path("empty-diff.svg")
        _one_error(*_diff(pair[0], pair[1], "-o", svg), 1, re.escape(empty) + ": no samples")
        check(not os.path.exists(svg), "diff of an empty profile wrote %s" % svg)
    rc, out, err = _diff("--help")
    check(rc == 0 and b"BASE NEW" in out and b"replay" in out, "diff --help: %d %r" % (rc, out))


def test_diff_opcodes():
    """--opcodes labels ("f (m.py:3) [BINARY_OP_ADD_INT]") are frames with a file and an
    instruction, not one opaque name: they survive the round trip byte for byte, and two
    instructions of one line stay two frames."""
    a = "main (m.py:1);f (m.py:3) [BINARY_OP_ADD_INT]"
    b = "main (m.py:1);f (m.py:3) [LOAD_FAST]"
    base, new = art_path("op-base.folded"), art_path("op-new.folded")
    with open(base, "w") as f:
        f.write("%s 10\n%s 30\n" % (a, b))
    with open(new, "w") as f:
        f.write("%s 30\n%s 10\n" % (a, b))
    rc, out, err = _diff(base, new, "-f", "collapsed", "--no-normalize")
    check(rc == 0, "diff -f collapsed exited %d: %s" % (rc, err))
    rows = _parse_diff_lines(out)
    check(rows == {a: (10, 30), b: (30, 10)}, "rows %r" % rows)
    rc, out, err = _diff(base, new, "-o", art_path("op-diff.svg"))
    check(rc == 0, "diff -o op-diff.svg exited %d: %s" % (rc, err))
    titles = [g.find(SVG_NS + "title").text.split("\n")[0]
              for g in ET.parse(art_path("op-diff.svg")).getroot().iter(SVG_NS + "g")
              if g.get("class") == "f"]
    for want in ("f (m.py:3) [BINARY_OP_ADD_INT]", "f (m.py:3) [LOAD_FAST]"):
        check(want in titles, "no frame titled %r: %r" % (want, titles))
