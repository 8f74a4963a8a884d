"""Output formats on a real profile: svg, speedscope, pprof, summary.

Each format is its own run of the profiler against tests/workloads/callgraph.py
(-F 999 -d 2). A run's profile must hold exactly the samples its --stats
reports as "written", name the workload's hot functions, and give leaf_heavy
(40% of the work by construction) about the same share in every format.

Outside tools: headless Chromium renders the SVG (with ?s=leaf_heavy, so the
search script must run and paint its highlight), `protoc --decode_raw` reads
the gunzipped pprof. Both come from scripts/deps.sh (chromium,
protobuf-compiler).
"""
import gzip
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import xml.etree.ElementTree as ET
import zlib

from common import python_independent
from common import (WORKLOADS, art_path, check, chromium, fail, run_profiler, start_workload,
                    timeout)

FREQ = 999
SECONDS = 2
HOT = ["leaf_heavy", "leaf_medium", "leaf_mid", "leaf_light", "leaf_tiny"]
HEAVY_SHARE = (0.28, 0.52)      # leaf_heavy is 40% of each cycle's work
SVG_NS = "{http://www.w3.org/2000/svg}"
SEARCH_RGB = (230, 0, 230)      # svg.c's highlight of search matches


def _profile(python, args, outfile=None):
    """Profile callgraph.py once; returns (result, written)."""
    w = start_workload(python, "callgraph.py", art_path("callgraph.truth.json"),
                       "--max-seconds", 40, cwd=WORKLOADS)
    res = run_profiler(w.pid, ["-F", FREQ, "-d", SECONDS] + list(args),
                       timeout=SECONDS + 30, stats=True, outfile=outfile).expect_ok()
    written = res.stats()["written"]
    check(written >= 300, "only %d samples written in %d s at %d Hz %s"
          % (written, SECONDS, FREQ, res.where()))
    if outfile:
        check(res.out == b"", "stdout not empty with -o: %r" % res.out[:200])
        check(os.path.getsize(outfile) > 0, "%s is empty %s" % (outfile, res.where()))
    return res, written, w.pid


def _comm(pid):
    with open("/proc/%d/comm" % pid) as f:
        return f.read().strip()


def _check_share(fmt, heavy, total, where):
    share = heavy / total if total else 0
    check(HEAVY_SHARE[0] <= share <= HEAVY_SHARE[1],
          "%s: leaf_heavy has %.1f%% of the samples, expected %.0f-%.0f%% %s"
          % (fmt, 100 * share, 100 * HEAVY_SHARE[0], 100 * HEAVY_SHARE[1], where))


# --------------------------------------------------------------------------
# SVG

def _svg_frames(path, where):
    try:
        tree = ET.parse(path)
    except ET.ParseError as e:
        fail("SVG is not well-formed XML: %s %s" % (e, where))
    root = tree.getroot()
    check(root.tag == SVG_NS + "svg", "SVG root element is %r" % root.tag)
    frames = []
    for g in root.iter(SVG_NS + "g"):
        if g.get("class") != "f":
            continue
        title, rect = g.find(SVG_NS + "title"), g.find(SVG_NS + "rect")
        check(title is not None and rect is not None, "frame <g> without title or rect")
        lines = title.text.split("\n")
        m = re.match(r"^(\d+) samples \(([\d.]+)%\)$", lines[1] if len(lines) > 1 else "")
        check(m, "frame title %r lacks its count" % title.text)
        frames.append({"label": lines[0], "count": int(m.group(1)),
                       "y": float(rect.get("y")), "w": float(rect.get("width"))})
    check(frames, "SVG has no frames %s" % where)
    return frames


def _png_pixels(path):
    """Decode an 8-bit RGB/RGBA PNG (what Chromium writes): (w, h, rows)."""
    with open(path, "rb") as f:
        data = f.read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "%s is not a PNG" % path)
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    w, h, depth, ctype, _, _, interlace = hdr
    check(depth == 8 and ctype in (2, 6) and interlace == 0,
          "unexpected PNG format: depth %d, colour type %d, interlace %d"
          % (depth, ctype, interlace))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        ft = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + b) & 255
            elif ft == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif ft == 4:
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pr) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def _render(svg_path, query):
    png = art_path("flame.png")
    chromium("file://" + svg_path + query, screenshot=png)
    return png


@timeout(150)
@python_independent
def test_format_svg(python):
    out = art_path("profile.svg")
    res, written, _ = _profile(python, [], outfile=out)
    with open(out, "rb") as f:
        data = f.read()
    check(data.count(b"http") == 1 and b'xmlns="http://www.w3.org/2000/svg"' in data,
          "SVG references a URL besides its namespace")
    check(b"href" not in data, "SVG links an outside resource (href)")
    frames = _svg_frames(out, res.where())

    # the root spans every written sample; the frames above it add up to it
    root_y = max(f["y"] for f in frames)
    roots = [f for f in frames if f["y"] == root_y]
    check(len(roots) == 1 and roots[0]["label"] == "all",
          "bottom row is %r, want the single 'all' frame" % [f["label"] for f in roots])
    check(roots[0]["count"] == written, "SVG root has %d samples, --stats written %d"
          % (roots[0]["count"], written))
    level1 = sum(f["count"] for f in frames if f["y"] == root_y - 16)
    check(level1 == written, "SVG frames above the root hold %d samples, written %d"
          % (level1, written))
    labels = " ".join(f["label"] for f in frames)
    missing = [h for h in HOT if h + " (" not in labels]
    check(not missing, "hot functions missing from the SVG: %s" % missing)
    heavy = sum(f["count"] for f in frames if f["label"].startswith("leaf_heavy ("))
    _check_share("svg", heavy, written, res.where())

    # rendered: many colours, and the search highlight painted by the script
    png = _render(out, "?s=leaf_heavy")
    w, h, bpp, rows = _png_pixels(png)
    colours, highlighted = set(), 0
    for row in rows:
        for x in range(0, w * bpp, bpp):
            px = (row[x], row[x + 1], row[x + 2])
            colours.add(px)
            if all(abs(a - b) <= 6 for a, b in zip(px, SEARCH_RGB)):
                highlighted += 1
    check(len(colours) > 20, "screenshot %s has only %d distinct colours (blank?)"
          % (png, len(colours)))
    check(highlighted > 200, "screenshot %s shows no search highlight (%d pixels): the "
          "SVG's script did not run" % (png, highlighted))


# --------------------------------------------------------------------------
# speedscope

UNITS = ("none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes")


@timeout(90)
@python_independent
def test_format_speedscope(python):
    out = art_path("profile.json")
    res, written, pid = _profile(python, [], outfile=out)
    with open(out, "rb") as f:
        try:
            doc = json.loads(f.read().decode("utf-8"))
        except ValueError as e:
            fail("speedscope output is not JSON: %s %s" % (e, res.where()))
    check(doc.get("$schema") == "https://www.speedscope.app/file-format-schema.json",
          "$schema is %r" % doc.get("$schema"))
    frames = doc.get("shared", {}).get("frames")
    check(isinstance(frames, list) and frames, "shared.frames missing or empty")
    for fr in frames:
        check(isinstance(fr.get("name"), str), "frame without a name: %r" % fr)
        check("file" not in fr or isinstance(fr["file"], str), "bad frame file: %r" % fr)
        check("line" not in fr or isinstance(fr["line"], int), "bad frame line: %r" % fr)
    profiles = doc.get("profiles")
    check(isinstance(profiles, list) and profiles, "profiles missing or empty")
    idx = doc.get("activeProfileIndex", 0)
    check(isinstance(idx, int) and 0 <= idx < len(profiles), "bad activeProfileIndex %r" % idx)
    total = heavy = 0
    for p in profiles:
        for k in ("type", "name", "unit", "startValue", "endValue", "samples", "weights"):
            check(k in p, "profile %r lacks %r" % (p.get("name"), k))
        check(p["type"] == "sampled", "profile type %r" % p["type"])
        check(p["unit"] in UNITS, "profile unit %r" % p["unit"])
        # callgraph.py runs in its main thread: MainThread if the interpreter
        # imported threading, else the kernel's name for it
        check(re.match(r"^pid %d .*\(Python 3\.\d+\.\d+\S*\) tid %d (MainThread|%s)$"
                       % (pid, pid, re.escape(_comm(pid))), p["name"]),
              "profile name %r, want 'pid %d ... (Python 3.x.y) tid %d MainThread' (or %s)"
              % (p["name"], pid, pid, _comm(pid)))
        check(len(p["samples"]) == len(p["weights"]), "samples and weights differ in length")
        check(sum(p["weights"]) == p["endValue"] - p["startValue"],
              "profile %r: weights sum %d, endValue - startValue %d"
              % (p["name"], sum(p["weights"]), p["endValue"] - p["startValue"]))
        for stack, weight in zip(p["samples"], p["weights"]):
            check(all(isinstance(i, int) and 0 <= i < len(frames) for i in stack),
                  "sample with a bad frame index: %r" % stack[:20])
            check(stack and frames[stack[0]]["name"] == "<module>",
                  "sample not root first: %r" % [frames[i]["name"] for i in stack][:6])
            if frames[stack[-1]]["name"] == "leaf_heavy":
                heavy += weight
        total += sum(p["weights"])
    check(total == written, "speedscope weights sum to %d, --stats written %d %s"
          % (total, written, res.where()))
    names = set(f["name"] for f in frames)
    missing = [h for h in HOT if h not in names]
    check(not missing, "hot functions missing from speedscope frames: %s" % missing)
    _check_share("speedscope", heavy, total, res.where())


# --------------------------------------------------------------------------
# pprof

def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def _fields(b):
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        wire = key & 7
        if wire == 0:
            v, i = _varint(b, i)
        elif wire == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            fail("pprof: unexpected wire type %d" % wire)
        yield key >> 3, wire, v


def _ints(wire, v):
    if wire == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def _decode_pprof(data):
    """The fields the tests look at. loc: location id -> function id;
    loc_line: location id -> line; func/func_file/func_start: function id ->
    name, file (string indexes) and start line; a sample's labels are
    (key, str index, num) triples."""
    prof = {"strings": [], "samples": [], "loc": {}, "loc_line": {}, "func": {},
            "func_file": {}, "func_start": {}, "types": [], "period": 0}
    for f, wire, v in _fields(data):
        if f == 6:
            prof["strings"].append(v.decode("utf-8"))
        elif f == 1:
            prof["types"].append(dict((k, x) for k, _, x in _fields(v)))
        elif f == 12:
            prof["period"] = v
        elif f == 2:
            s = {"loc": [], "val": [], "labels": []}
            for k, w2, x in _fields(v):
                if k == 1:
                    s["loc"] += _ints(w2, x)
                elif k == 2:
                    s["val"] += _ints(w2, x)
                elif k == 3:
                    d = dict((a, y) for a, _, y in _fields(x))
                    s["labels"].append((d.get(1, 0), d.get(2, 0), d.get(3, 0)))
            prof["samples"].append(s)
        elif f == 4:
            d = dict((k, x) for k, _, x in _fields(v) if k != 4)
            line = [dict((k, x) for k, _, x in _fields(x)) for k, _, x in _fields(v) if k == 4]
            prof["loc"][d[1]] = line[0][1]
            prof["loc_line"][d[1]] = line[0].get(2, 0)
        elif f == 5:
            d = dict((k, x) for k, _, x in _fields(v))
            prof["func"][d[1]] = d.get(2, 0)
            prof["func_file"][d[1]] = d.get(4, 0)
            prof["func_start"][d[1]] = d.get(5, 0)
    return prof


def pprof_labels(prof, s):
    """A decoded sample's labels as {key: str or num}."""
    st = prof["strings"]
    return dict((st[k], st[x] if x else n) for k, x, n in s["labels"])


@timeout(90)
@python_independent
def test_format_pprof(python):
    out = art_path("profile.pb.gz")
    res, written, pid = _profile(python, [], outfile=out)
    with open(out, "rb") as f:
        gz = f.read()
    check(gz[:2] == b"\x1f\x8b", "pprof output is not gzip: %r" % gz[:8])
    data = gzip.decompress(gz)
    protoc = shutil.which("protoc")
    check(protoc, "protoc not installed (run scripts/deps.sh: protobuf-compiler)")
    p = subprocess.run([protoc, "--decode_raw"], input=data, capture_output=True, timeout=60)
    check(p.returncode == 0, "protoc --decode_raw failed: %s"
          % p.stderr.decode("utf-8", "replace")[-300:])
    text = p.stdout.decode("utf-8", "replace")
    missing = [h for h in HOT if '"%s"' % h not in text]
    check(not missing, "protoc --decode_raw output lacks %s" % missing)

    prof = _decode_pprof(data)
    st = prof["strings"]
    check(st and st[0] == "", "string_table[0] is %r, want ''" % (st[:1],))
    types = [(st[t.get(1, 0)], st[t.get(2, 0)]) for t in prof["types"]]
    check(types == [("samples", "count"), ("cpu", "nanoseconds")],
          "sample types %r" % types)
    check(prof["period"] == 10 ** 9 // FREQ, "period %d, want %d"
          % (prof["period"], 10 ** 9 // FREQ))
    total = heavy = 0
    comm = _comm(pid)
    for s in prof["samples"]:
        check(len(s["val"]) == 2, "sample with %d values" % len(s["val"]))
        total += s["val"][0]
        check(s["val"][1] == s["val"][0] * 10 ** 9 // FREQ,
              "sample cpu value %d for %d samples" % (s["val"][1], s["val"][0]))
        leaf = st[prof["func"][prof["loc"][s["loc"][0]]]]
        if leaf == "leaf_heavy":
            heavy += s["val"][0]
        root = st[prof["func"][prof["loc"][s["loc"][-1]]]]
        check(root == "<module>", "sample locations not leaf first: root %r" % root)
        labels = pprof_labels(prof, s)
        check(labels.get("thread_name") in ("MainThread", comm) and labels.get("tid") == pid,
              "sample labels %r, want tid %d and thread_name MainThread (or %s)"
              % (labels, pid, comm))
    check(total == written, "pprof samples sum to %d, --stats written %d %s"
          % (total, written, res.where()))
    _check_share("pprof", heavy, total, res.where())
    _go_pprof_names(out)


def _go_pprof_names(path):
    """go tool pprof, the real consumer, names every function as written:
    `<module>` must not become `<unknown>` (its demangler once ate it)."""
    go = shutil.which("go")
    check(go, "go not installed (run scripts/deps.sh: golang-go)")
    with tempfile.TemporaryDirectory() as home:
        p = subprocess.run([go, "tool", "pprof", "-top", "-nodecount=500", path],
                           capture_output=True, timeout=120,
                           env=dict(os.environ, HOME=home, GOCACHE=home, GOFLAGS=""))
    text = p.stdout.decode("utf-8", "replace")
    check(p.returncode == 0, "go tool pprof -top failed: %s"
          % p.stderr.decode("utf-8", "replace")[-300:])
    check(re.search(r"\s<module>\s*$", text, re.M) and "<unknown>" not in text,
          "go tool pprof -top does not show <module> by name:\n%s" % text[-1500:])
    for h in HOT:
        check(re.search(r"\s%s\s*$" % h, text, re.M), "go tool pprof -top lacks %s" % h)


# --------------------------------------------------------------------------
# summary

ROW = re.compile(r"^ *([\d.]+)% +([\d.]+)% +(\d+) +(\d+)  (.+)$")


@timeout(90)
@python_independent
def test_format_summary(python):
    res, written, pid = _profile(python, ["--format", "summary"])
    text = res.out.decode("utf-8")
    lines = text.rstrip("\n").split("\n")
    m = re.match(r"^# (\d+) samples in [\d.]+ s \(cpu mode, cpu-clock, -F %d\); pid %d "
                 % (FREQ, pid),
                 lines[0])
    check(m, "summary header %r" % lines[0])
    check(int(m.group(1)) == written, "summary header says %s samples, --stats written %d"
          % (m.group(1), written))
    check(lines[1].split() == ["self%", "total%", "self", "total", "function",
                               "(file:firstline)"], "column header %r" % lines[1])
    rows = []
    for line in lines[2:]:
        if line.startswith("# "):
            continue
        r = ROW.match(line)
        check(r, "summary row %r" % line)
        rows.append((float(r.group(1)), float(r.group(2)), int(r.group(3)),
                     int(r.group(4)), r.group(5)))
    check(rows and len(rows) <= 30, "%d summary rows" % len(rows))
    check([r[2] for r in rows] == sorted((r[2] for r in rows), reverse=True),
          "rows not sorted by self")
    check(rows[0][4].startswith("leaf_heavy (callgraph.py:"),
          "top function %r, want leaf_heavy" % rows[0][4])
    # few functions: every sample's leaf is in a row
    check(sum(r[2] for r in rows) == written, "self column sums to %d, written %d"
          % (sum(r[2] for r in rows), written))
    for selfp, totp, self_n, tot_n, fn in rows:
        check(self_n <= tot_n <= written, "%s: self %d, total %d" % (fn, self_n, tot_n))
        check(abs(selfp - 100.0 * self_n / written) < 0.01, "%s: self%% %.2f" % (fn, selfp))
        check(abs(totp - 100.0 * tot_n / written) < 0.01, "%s: total%% %.2f" % (fn, totp))
    module = [r for r in rows if r[4].startswith("<module> (callgraph.py:1)")]
    check(module and module[0][3] >= 0.98 * written,
          "<module> row %r, want nearly every sample in its total" % module)
    missing = [h for h in HOT if not any(r[4].startswith(h + " (") for r in rows)]
    check(not missing, "hot functions missing from the summary: %s" % missing)
    heavy = sum(r[2] for r in rows if r[4].startswith("leaf_heavy ("))
    _check_share("summary", heavy, written, res.where())
