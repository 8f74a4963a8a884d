"""--native: native frames merged with the Python ones (frame pointers,
and the unwind tables the BPF program walks).

tests/workloads/native_ext.c is built here with -fno-omit-frame-pointer
against the stable ABI; tests/workloads/native_mix.py calls it (CPU in C, a
C function calling a Python callback, libz) and sorts with a Python key,
timing each phase itself. Debian's real 3.15 is built with frame pointers:
its stacks must interleave exactly. Where the interpreter or a library has
none (pyenv's builds, most of Debian's 3.14, libz), a stack whose native
and Python parts cannot be paired must be marked, never spliced wrongly
(--native=fp); with the unwind tables (--native) they interleave exactly,
the extension built without frame pointers too.
"""
import json
import os
import re
import subprocess
import sysconfig

from common import Interp, MARKERS, art_path, check, run_profiler, timeout, WORKLOADS

EXT = "tbnative.abi3.so"
UNMATCHED = "[native unmatched]"
PY_RE = re.compile(r"^(?P<name>.+) \((?P<file>[^()]+):(?P<line>\d+)\)$")
NATIVE_RE = re.compile(r"^(?:(?P<fn>.+) \[(?P<lib>[^\[\]]+)\]|\[(?P<off>[^\[\]]+\+0x[0-9a-f]+)\])$")
PHASES = ("do_spin", "do_cb", "do_zlib", "do_sort")


def _build_ext(frame_pointers=True):
    """The extension, built once per run into the artifacts directory, with
    frame pointers or (-fomit-frame-pointer -O2) without."""
    out_dir = art_path("native-ext" if frame_pointers else "native-ext-nofp")
    so = os.path.join(out_dir, EXT)
    if os.path.exists(so):
        return out_dir
    os.makedirs(out_dir, exist_ok=True)
    inc = sysconfig.get_paths()["include"]
    check(os.path.exists(os.path.join(inc, "Python.h")),
          "no Python.h in %s: the test builds a C extension (install python3-dev)" % inc)
    fp = "-fno-omit-frame-pointer" if frame_pointers else "-fomit-frame-pointer"
    cc = subprocess.run(["cc", "-O2", "-g", fp, "-fPIC", "-shared",
                         "-DPy_LIMITED_API=0x030B0000", "-I" + inc,
                         os.path.join(WORKLOADS, "native_ext.c"), "-o", so, "-lz"],
                        capture_output=True, text=True)
    check(cc.returncode == 0, "building %s failed: %s" % (EXT, cc.stderr[-800:]))
    return out_dir


def _profile(python, seconds=4, native="--native", frame_pointers=True):
    """(stacks, {phase: seconds}) of native_mix.py run under record --native:
    stacks are lists of (kind, name) with kind 'py', 'native' or 'mark'."""
    check(python.exists(), "missing %s: run scripts/real-pythons.sh" % python.path)
    tag = "%s%s%s" % (python.label, native[8:], "" if frame_pointers else "-nofp")
    times_path = art_path("native-times-%s.json" % tag)
    out = art_path("native-%s.txt" % tag)
    res = run_profiler(None, [native, "-F", "250", "-f", "collapsed", "-o", out, "--",
                              python.path, os.path.join(WORKLOADS, "native_mix.py"),
                              _build_ext(frame_pointers), seconds, times_path], timeout=60)
    res.expect_ok()
    with open(times_path) as f:
        times = json.load(f)
    stacks = []
    with open(out) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            stacks.append((_frames(stack, res.where()), int(count)))
    return stacks, times, res.where()


def _frames(stack, where):
    frames = []
    for raw in stack.split(";"):
        m = PY_RE.match(raw)
        if raw == UNMATCHED or raw in MARKERS:
            frames.append(("mark", raw))
        elif m:
            frames.append(("py", m["name"]))
        else:
            check(NATIVE_RE.match(raw) or raw.startswith("<unknown 0x"),
                  "frame %r is neither Python, native nor the marker %s" % (raw, where))
            frames.append(("native", raw))
    return frames


def _phase(frames):
    names = [n for k, n in frames if k == "py"]
    for p in PHASES:
        if p in names:
            return p, names.index(p)
    return None, None


def _after(frames, phase):
    """The frames above the phase's own Python frame."""
    i = frames.index(("py", phase))
    return frames[i + 1:]


def _check_never_wrong(frames, where):
    """A merged stack (no marker) interleaves as the code calls: the only
    Python frame above a native frame is cb above call_back; key_of sits
    right above do_sort; a C function of the extension sits right above
    the Python frame that called it."""
    phase, _ = _phase(frames)
    if not phase or ("mark", UNMATCHED) in frames:
        return
    above = _after(frames, phase)
    shown = ";".join(n for _, n in frames)
    if phase == "do_cb" and ("py", "cb") in above:
        j = above.index(("py", "cb"))
        check(("native", "call_back [%s]" % EXT) in above[:j],
              "cb without call_back under it, unmarked: %s %s" % (shown, where))
    if phase == "do_sort" and ("py", "key_of") in above:
        check(above[0] == ("py", "key_of"), "key_of not right above do_sort: %s %s"
              % (shown, where))
    first_native = next((j for j, f in enumerate(above) if f[0] == "native"), None)
    if first_native is not None:
        later_py = [n for k, n in above[first_native:] if k == "py"]
        check(later_py in ([], ["cb"]), "Python frames %s above native ones: %s %s"
              % (later_py, shown, where))
    for fn in ("spin", "call_back", "zlib_compress"):
        if ("native", "%s [%s]" % (fn, EXT)) in above:
            check(phase == {"spin": "do_spin", "call_back": "do_cb",
                            "zlib_compress": "do_zlib"}[fn],
                  "%s under %s: %s %s" % (fn, phase, shown, where))


def _share(stacks, pred):
    return sum(c for f, c in stacks if pred(f))


@timeout(120)
def test_native_frame_pointers_exact():
    """Debian's 3.15 (frame pointers): exact interleaving, C time where the
    workload measured it."""
    stacks, times, where = _profile(Interp("sid-3.15"))
    for frames, _ in stacks:
        _check_never_wrong(frames, where)
    work = [(f, c) for f, c in stacks if _phase(f)[0]]
    n = total = sum(c for _, c in work)
    check(n >= 100, "only %d samples of the workload %s" % (n, where))
    measured = sum(times.values())
    spin_c = ("native", "spin [%s]" % EXT)
    for phase in PHASES:
        got = _share(work, lambda f: _phase(f)[0] == phase) / total
        want = times[phase] / measured
        check(abs(got - want) < 0.1, "%s: %.0f%% of the samples, %.0f%% of the workload's "
              "own time %s" % (phase, 100 * got, 100 * want, where))
    # The C loop itself: spin right above do_spin, nothing in between.
    spin = _share(work, lambda f: _phase(f)[0] == "do_spin")
    spin_exact = _share(work, lambda f: _phase(f)[0] == "do_spin" and
                        _after(f, "do_spin")[:1] == [spin_c])
    check(spin_exact >= 0.8 * spin, "do_spin;spin [%s] in %d of %d do_spin samples %s"
          % (EXT, spin_exact, spin, where))
    # C calling Python: cb above call_back, merged (not marked) in most.
    cb = _share(work, lambda f: ("py", "cb") in f)
    cb_merged = _share(work, lambda f: ("py", "cb") in f and ("mark", UNMATCHED) not in f)
    check(cb and cb_merged >= 0.5 * cb, "cb merged in %d of %d samples %s"
          % (cb_merged, cb, where))
    # sorted with a Python key: the key above the caller, merged.
    key = _share(work, lambda f: ("py", "key_of") in f)
    key_merged = _share(work, lambda f: ("py", "key_of") in f and ("mark", UNMATCHED) not in f)
    check(key and key_merged >= 0.5 * key, "key_of merged in %d of %d samples %s"
          % (key_merged, key, where))
    # libz has no frame pointers: its frames show, the rest is marked.
    libz = _share(work, lambda f: _phase(f)[0] == "do_zlib" and
                  any("libz.so" in n for k, n in f if k == "native"))
    zl = _share(work, lambda f: _phase(f)[0] == "do_zlib")
    check(libz >= 0.3 * zl, "libz frames in %d of %d do_zlib samples %s" % (libz, zl, where))


@timeout(120)
def test_native_without_frame_pointers_marked():
    """--native=fp on pyenv's 3.13 (no frame pointers) and Debian's 3.14
    (few): what cannot be paired is marked; what is merged is right; C
    leaves show."""
    for python in (Interp("3.13.0"), Interp("sid-3.14")):
        stacks, _, where = _profile(python, seconds=3, native="--native=fp")
        for frames, _ in stacks:
            _check_never_wrong(frames, where)
        marked = _share(stacks, lambda f: ("mark", UNMATCHED) in f)
        check(marked > 0, "%s: no stack marked %s %s" % (python.label, UNMATCHED, where))
        spin = _share(stacks, lambda f: ("native", "spin [%s]" % EXT) in f)
        check(spin > 0, "%s: spin [%s] never seen %s" % (python.label, EXT, where))


def _native_above(frames, phase, fn):
    """The native frames from the phase's C function up, if nothing but
    native frames (the interpreter's call machinery) lie between."""
    above = _after(frames, phase)
    want = ("native", "%s [%s]" % (fn, EXT))
    if want not in above or any(k != "native" for k, _ in above[:above.index(want)]):
        return []
    return [n for _, n in above[above.index(want):]]


def _check_c_exact(work, label, where):
    """do_zlib -> zlib_compress -> compress2/deflate in libz, and do_spin ->
    spin, in most of their samples."""
    for phase, fn, nxt in (("do_zlib", "zlib_compress", "[libz.so"), ("do_spin", "spin", None)):
        n = exact = 0
        for frames, c in work:
            if _phase(frames)[0] != phase:
                continue
            n += c
            above = _native_above(frames, phase, fn)
            if above and (nxt is None or (len(above) > 1 and nxt in above[1])):
                exact += c
        check(n and exact >= 0.8 * n, "%s: %s;...;%s%s in %d of %d %s samples %s"
              % (label, phase, fn, ";" + nxt + "..." if nxt else "", exact, n, phase, where))


@timeout(150)
def test_native_unwind_tables_exact():
    """--native's unwind tables: the extension built without frame pointers,
    on pyenv's 3.13 and 3.11 (no frame pointers) and Debian's 3.15:
    exact interleaving into libz, the callback above its C caller, C time
    where the workload measured it, (almost) nothing left unmatched."""
    for python in (Interp("3.13.0"), Interp("3.11.7"), Interp("sid-3.15")):
        stacks, times, where = _profile(python, seconds=3, frame_pointers=False)
        for frames, _ in stacks:
            _check_never_wrong(frames, where)
        work = [(f, c) for f, c in stacks if _phase(f)[0]]
        total = sum(c for _, c in work)
        check(total >= 100, "%s: only %d samples of the workload %s"
              % (python.label, total, where))
        marked = _share(work, lambda f: ("mark", UNMATCHED) in f)
        check(marked <= 0.1 * total, "%s: %d of %d workload samples %s %s"
              % (python.label, marked, total, UNMATCHED, where))
        measured = sum(times.values())
        for phase in PHASES:
            got = _share(work, lambda f: _phase(f)[0] == phase) / total
            want = times[phase] / measured
            check(abs(got - want) < 0.1, "%s: %s: %.0f%% of the samples, %.0f%% of the "
                  "workload's own time %s" % (python.label, phase, 100 * got, 100 * want, where))
        _check_c_exact(work, python.label, where)
        cb = _share(work, lambda f: ("py", "cb") in f)
        cb_merged = _share(work, lambda f: ("py", "cb") in f and ("mark", UNMATCHED) not in f)
        check(cb and cb_merged >= 0.8 * cb, "%s: cb merged in %d of %d samples %s"
              % (python.label, cb_merged, cb, where))
