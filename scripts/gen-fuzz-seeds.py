#!/usr/bin/env python3
"""Regenerate the committed seed corpora of the fuzz targets (tests/fuzz/corpus/).

    sudo python3 scripts/gen-fuzz-seeds.py        # after `make build/tests/fakepy`

Each seed is a real input of its kind, small, so libFuzzer starts from
inputs that pass the parsers' first checks:

  pyelf      tiny ELF files built here with clang: a libpython-like .so with a
             .PyRuntime section and PyCode_Type/Py_Version, one with only a
             _PyRuntime symbol (in .bss), a non-PIE executable, a .so without
             Python, a truncated header
  layout     the first 1024 bytes of .PyRuntime of pyenv's libpython3.13.so.1.0
             (its _Py_DebugOffsets), and the _PyRuntime that fakepy lays out
             for 3.14, 3.15 and the refused 3.16, 3.15b1, 3.14t
  linetable  co_firstlineno (4 bytes LE) + co_linetable of the real code objects
             in tests/unit/fixtures/linetable_3*.h (3.8-3.10: the format in the
             header's top bits, then the code length)
  pystr      real str and bytes objects copied out of live 3.11 and 3.13
             interpreters (ctypes.string_at), with the layout selector byte
  cfi        the .eh_frame of the pyelf seeds and of libz.so.1 as bare
             sections (mode byte 2, load address), a .debug_frame from a small
             program built with -g -fno-asynchronous-unwind-tables (mode 0),
             and the pyelf seeds as whole ELF images (mode 1)
  output     struct resolved encodings (see build() in tests/fuzz/fuzz_output.c)
             of small realistic profiles

Needs root only to read fakepy's memory; clang for the ELF seeds.
"""
import ctypes  # noqa: F401  (documented use is in the child interpreters)
import glob
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(REPO, "tests", "fuzz", "corpus")
PYENV = os.environ.get("PYENV_ROOT", "/root/.pyenv")


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- ELF --------------------------------------------------------------------

def elf_sections(data):
    """{name: (type, addr, offset, size)} of an ELF64 little-endian file."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    hdrs = []
    for i in range(shnum):
        hdrs.append(struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize))
    stroff = hdrs[shstrndx][4]
    out = {}
    for h in hdrs:
        name = data[stroff + h[0]:data.index(b"\0", stroff + h[0])].decode()
        out[name] = (h[1], h[3], h[4], h[5])
    return out


ELF_SRC = {
    "libpy.c": r"""
__attribute__((section(".PyRuntime"), used)) char _PyRuntime[96] = "xdebugpy";
char PyCode_Type[32] = { 1 };
unsigned long Py_Version = 0x030d00f0;
""",
    "symonly.c": r"""
char _PyRuntime[256];			/* .bss: no file bytes */
char PyCode_Type[32] = { 1 };
""",
    "exe.c": r"""
__attribute__((section(".PyRuntime"), used)) char _PyRuntime[64] = "xdebugpy";
unsigned long Py_Version = 0x030c01f0;
void _start(void) { for (;;) ; }
""",
    "nopy.c": r"""
int not_python = 42;
""",
}

SMALL = ["-O2", "-nostdlib", "-Wl,--build-id=none", "-Wl,-z,noseparate-code",
         "-Wl,-z,max-page-size=4096", "-Wl,--hash-style=gnu"]


def gen_pyelf(tmp):
    for src, text in ELF_SRC.items():
        with open(os.path.join(tmp, src), "w") as f:
            f.write(text)
    builds = [
        ("libpython3.13.so", "libpy.c", ["-shared", "-fPIC", "-s",
                                          "-Wl,-soname,libpython3.13.so.1.0"]),
        ("symtab-bss.so", "symonly.c", ["-shared", "-fPIC"]),
        ("static-exe", "exe.c", ["-static", "-no-pie", "-s"]),
        ("not-python.so", "nopy.c", ["-shared", "-fPIC", "-s"]),
    ]
    for out, src, flags in builds:
        path = os.path.join(tmp, out)
        subprocess.run(["clang"] + SMALL + flags + [os.path.join(tmp, src), "-o", path],
                       check=True)
        with open(path, "rb") as f:
            data = f.read()
        put("pyelf", out, data)
        if out == "libpython3.13.so":
            put("pyelf", "truncated-header", data[:100])
            put("pyelf", "truncated-sections", data[:len(data) // 2])


def gen_cfi(tmp):
    """Seeds of fuzz_cfi: after gen_pyelf, whose ELF files it reuses."""
    elves = sorted(glob.glob(os.path.join(CORPUS, "pyelf", "*")))
    src = os.path.join(tmp, "frames.c")
    with open(src, "w") as f:
        f.write("static volatile int v;\n"
                "__attribute__((noinline)) int leaf(int x) { return x * v; }\n"
                "int main(int c, char **a) { (void)a; return leaf(c) + 1; }\n")
    exe = os.path.join(tmp, "frames")
    subprocess.run(["cc", "-O2", "-g", "-fno-asynchronous-unwind-tables", src, "-o", exe],
                   check=True)
    for path in elves + ["/lib/x86_64-linux-gnu/libz.so.1", exe]:
        with open(path, "rb") as f:
            data = f.read()
        base = os.path.basename(path)
        if path in elves:
            put("cfi", "elf-" + base, b"\x01" + data)
        try:
            secs = elf_sections(data)
        except struct.error:
            continue
        for name, mode in ((".eh_frame", 2), (".debug_frame", 0)):
            if name in secs and secs[name][3] and (path != exe or mode == 0):
                _, addr, off, size = secs[name]
                put("cfi", "%s-%s" % (name[1:], base),
                    bytes([mode]) + struct.pack("<I", addr & 0xffffffff) + data[off:off + size])


# ---- _Py_DebugOffsets -------------------------------------------------------

def gen_layout():
    lib = os.path.join(PYENV, "versions", "3.13.0", "lib", "libpython3.13.so.1.0")
    with open(lib, "rb") as f:
        data = f.read()
    _, _, off, size = elf_sections(data)[".PyRuntime"]
    put("layout", "real-3.13.0", data[off:off + min(size, 1024)])

    fakepy = os.path.join(REPO, "build", "tests", "fakepy")
    nm = subprocess.run(["nm", "-D", fakepy], capture_output=True, text=True, check=True)
    value = int(re.search(r"^([0-9a-f]+) \S _PyRuntime$", nm.stdout, re.M).group(1), 16)
    for version in ("3.14", "3.15", "3.16", "3.15b1", "3.14t"):
        p = subprocess.Popen([fakepy, version], stdout=subprocess.PIPE)
        try:
            line = p.stdout.readline().decode()
            assert line.startswith("READY"), line
            with open("/proc/%d/maps" % p.pid) as f:
                base = next(int(l.split("-")[0], 16) for l in f
                            if l.split()[-1] == os.path.realpath(fakepy)
                            and l.split()[2] == "00000000")
            with open("/proc/%d/mem" % p.pid, "rb") as f:
                f.seek(base + value)
                put("layout", "fakepy-" + version, f.read(1024))
        finally:
            p.kill()
            p.wait()


# ---- location tables --------------------------------------------------------

def gen_linetable():
    for hdr in sorted(glob.glob(os.path.join(REPO, "tests", "unit", "fixtures",
                                             "linetable_3*.h"))):
        ver = re.search(r"linetable_(\d+)\.h", hdr).group(1)
        text = open(hdr).read()
        # 3.8/3.9 co_lnotab and 3.10 co_linetable: the header's top bits say
        # so (01, 10), then 4 bytes of code length in units.
        fmt = {"38": 1, "39": 1, "310": 2}.get(ver, 0)
        for i, m in enumerate(re.finditer(
                r"\.firstlineno = (-?\d+),\s*\.table = \(const uint8_t \*\)\s*((?:\"[^\"]*\"\s*)+),"
                r"\s*\.table_len = (\d+),\s*\.lines = \w+,\s*\.n_units = (\d+)", text)):
            first, raw, n = int(m.group(1)), m.group(2), int(m.group(3))
            table = b"".join(bytes(int(h, 16) for h in re.findall(r"\\x([0-9a-f]{2})", s))
                             for s in re.findall(r"\"([^\"]*)\"", raw))
            assert len(table) == n, (hdr, i, len(table), n)
            if i % 3 and n < 400:     # a sample: every kind occurs in the kept ones
                continue
            head = struct.pack("<i", first) if not fmt else \
                struct.pack("<II", fmt << 30 | first, int(m.group(4)))
            put("linetable", "%s-%02d" % (ver, i), head + table)


# ---- str / bytes objects ----------------------------------------------------

PYSTR_CHILD = r"""
import ctypes, sys
objs = {
    "ascii": "main", "ascii-long": "handle_request_" * 9, "latin1": "caf\xe9_na\xefve",
    "ucs2": "f\xefl\xe9_\u6d4b\u8bd5.py", "ucs4": "stream_\U0001F40D", "empty": "",
    "nul": "a\x00b", "surrogate": "x\ud800y", "bytes": b"\x80\x00\xf2\x02\x04",
    "bytes-empty": b"",
}
for k, o in objs.items():
    sys.stdout.write("%s %s\n" % (k, ctypes.string_at(id(o), sys.getsizeof(o)).hex()))
"""


def gen_pystr():
    for ver, sel in (("3.11.7", 0), ("3.13.0", 1)):
        py = os.path.join(PYENV, "versions", ver, "bin", "python3")
        out = subprocess.run([py, "-c", PYSTR_CHILD], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            name, hexdata = line.split()
            obj = bytes.fromhex(hexdata)
            # byte 1: bit 7 = limit 4096 characters, low 6 bits x 3 = output size
            put("pystr", "%s-%s" % (ver[:4], name), bytes([sel, 0xbf]) + obj)
            if name in ("ucs2", "ucs4", "latin1"):
                put("pystr", "%s-%s-cut" % (ver[:4], name), bytes([sel, 0x85]) + obj)


# ---- resolved profiles ------------------------------------------------------

def s8(b):
    b = b.encode() if isinstance(b, str) else b
    assert len(b) < 256
    return bytes([len(b)]) + b


EVENTS = ["cpu-clock", "task-clock", "page-faults", "cycles", "wall", None]


def enc_profile(frames, procs, samples, cut=0, event="cpu-clock", freq=99, start=1700000000,
                dur=50):
    """frames: (name, file or None, line); samples: (proc, tid, flags, count, [idx])."""
    out = struct.pack("<H", cut) + bytes([len(frames) - 1])
    for name, file, line in frames:
        kind = 1 if file is None else 0
        out += bytes([kind]) + s8(name)
        if file is not None:
            out += s8(file)
        out += struct.pack("<i", line)
    out += bytes([len(procs)])
    for pid, version, name in procs:
        out += s8(version) + s8(name) + struct.pack("<I", pid)
    out += bytes([len(samples)])
    for proc, tid, flags, count, idx in samples:
        assert len(idx) < 24 and 0 < count < 257
        out += bytes([len(idx), proc]) + struct.pack("<I", tid) + bytes([flags, count - 1])
        out += bytes(idx)
    out += bytes([EVENTS.index(event)])
    out += struct.pack("<IIH", freq, start, dur)
    return out


def enc_timeline(threads, ticks):
    """After enc_profile: threads (proc, tid, name or None); ticks (dt_ns, sample,
    thread, off_us or 0, weight, cpu), in time order."""
    out = bytes([1, len(threads) - 1, len(ticks)])
    for proc, tid, name in threads:
        out += bytes([proc]) + struct.pack("<I", tid)
        out += bytes([1]) + s8(name) if name is not None else bytes([0])
    for dt, sample, thread, off_us, weight, cpu in ticks:
        shape = (0 if dt else 1) | (2 if off_us else 0) | (4 if weight > 1 else 0)
        out += bytes([shape]) + (struct.pack("<I", dt) if dt else b"")
        out += bytes([sample, thread]) + (struct.pack("<I", off_us) if off_us else b"")
        out += (bytes([weight - 1]) if weight > 1 else b"") + bytes([cpu])
    return out


def gen_output():
    fr = [("<module>", "app.py", 54), ("main", "app.py", 49),
          ("handle_request", "app.py", 40), ("is_prime", "app.py", 17),
          ("[truncated]", None, 0), ("Caf\u00e9.na\u00efve", "f\u00efl\u00e9_\u6d4b\u8bd5.py", 20),
          ("weird;name\nwith<xml>&\"q'", "x<y>.py", 2), ("<unknown 0x7f00dead>", None, 0),
          ("schedule [k]", None, 0)]
    procs = [(1234, "3.13.0", "app.py"), (99, "3.11.7", "")]
    put("output", "simple", enc_profile(fr[:4], procs[:1], [
        (0, 1234, 0, 200, [0, 1, 2, 3]), (0, 1234, 0, 17, [0, 1, 2]), (0, 1235, 4, 3, [0, 1])]))
    put("output", "markers-unicode", enc_profile(fr, procs, [
        (0, 1, 1, 5, [4, 1, 2]), (1, 7, 0, 9, [0, 5, 6]), (0, 1, 2, 1, [0, 7]),
        (1, 8, 0, 2, [0, 1, 8])], cut=0x1f, event="wall"))
    put("output", "empty", enc_profile(fr[:1], [], [], event=None))
    put("output", "recursion", enc_profile(fr[:4], procs[:1], [
        (0, 1, 0, 100, [0] + [3] * 20), (0, 1, 0, 1, [0, 1, 3, 3, 1, 3])], cut=0x0a))
    # --timeline: two threads, a GC run, an off-CPU interval, equal times
    put("output", "timeline", enc_profile(fr[:4], procs[:1], [
        (0, 1234, 0, 3, [0, 1, 2, 3]), (0, 1234, 0x10, 2, [0, 1, 2]),
        (0, 1240, 0x40, 5, [0, 1])], event="wall") + enc_timeline(
        [(0, 1234, "MainThread"), (0, 1240, "w\u00f6rker<&\"")],
        [(1000, 0, 0, 0, 1, 0), (0, 2, 1, 50000, 5, 1), (1000000, 1, 0, 0, 1, 0),
         (1000000, 1, 0, 0, 1, 1), (1000000, 0, 0, 0, 1, 0)]))


def main():
    if os.path.isdir(CORPUS):
        shutil.rmtree(CORPUS)
    with tempfile.TemporaryDirectory() as tmp:
        gen_pyelf(tmp)
        gen_cfi(tmp)
    gen_layout()
    gen_linetable()
    gen_pystr()
    gen_output()
    for t in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, t))
        size = sum(os.path.getsize(os.path.join(CORPUS, t, f)) for f in files)
        print("%-10s %3d seeds, %6d bytes" % (t, len(files), size))


if __name__ == "__main__":
    time.sleep(0)
    sys.exit(main())
