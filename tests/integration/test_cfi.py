"""Unwind tables from .eh_frame (user/cfi*.c) against binutils and gdb.

test_cfi_rows_match_readelf: for every FDE of real files (pyenv's
libpython3.13, libz, libc), the rule our rows give at every address where
either side changes equals the one `readelf --debug-dump=frames-interp`
prints, reduced the same way (CFA rsp/rbp+N, rbp saved at CFA+N or not,
return address at CFA-8, undefined = end of stack, signal frames).

test_cfi_unwind_matches_gdb: a program built with -fomit-frame-pointer,
stopped inside a signal handler called under libc's qsort, is unwound by the
reference unwinder (build/tests/cfidump unwind) and by gdb: same return
addresses, frame for frame, to the end of the stack; once with the program's
CFI in .eh_frame, once in .debug_frame only; then pyenv's python3.13 (whose
libpython has no frame pointers) sleeping under a few Python calls.
"""

import bisect
import os
import re
import signal
import subprocess
import tempfile
import time

from common import REPO, check, fail, timeout

CFIDUMP = os.path.join(REPO, "build", "tests", "cfidump")
LIBS = ["/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0",
        "/lib/x86_64-linux-gnu/libz.so.1",
        "/lib/x86_64-linux-gnu/libc.so.6"]

ENTRY = re.compile(r"^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ (CIE|FDE)(.*)$")
FDE_PC = re.compile(r"cie=([0-9a-f]+) pc=([0-9a-f]+)\.\.([0-9a-f]+)")
CIE_AUG = re.compile(r'"([^"]*)"')


def reduce_cells(cells, signal_frame):
    """(kind, cfa_off, rbp_rule, rbp_off) of one readelf row, as cfi.c does."""
    ra = cells.get("ra", "u")
    rbp = cells.get("rbp", "u")
    if rbp in ("u", "s"):
        rbp_rule, rbp_off = 0, 0
    elif re.fullmatch(r"c[+-]\d+", rbp) and int(rbp[1:]) % 8 == 0 \
            and -1024 <= int(rbp[1:]) <= 1016:
        rbp_rule, rbp_off = 1, int(rbp[1:])
    else:
        rbp_rule, rbp_off = 2, 0
    cfa = cells["CFA"]
    m = re.fullmatch(r"(rsp|rbp)\+(-?\d+)", cfa)
    if ra == "u":
        kind, off = "end", 0
    elif signal_frame:
        kind, off = "signal", 0
    elif ra != "c-8":
        kind, off = "unsupported", 0
    elif m:
        kind, off = m.group(1), int(m.group(2))
    elif cfa == "exp":
        kind, off = "exp", 8    # the PLT expression is rsp+8 based
    else:
        kind, off = "unsupported", 0
    return (kind, off, rbp_rule, rbp_off)


def readelf_rows(path):
    """{pc: rule} of every FDE's rows in .eh_frame, gaps as ('gap',...)."""
    # readelf 2.41 exits 1 on libc.so.6 without a message: the text decides.
    out = subprocess.run(["readelf", "--debug-dump=frames-interp,no-follow-links", path],
                         capture_output=True, text=True).stdout
    parts = re.split(r"^Contents of the \.eh_frame section[^\n]*:$", out, flags=re.M)
    check(len(parts) == 2, "readelf printed no single .eh_frame for " + path)
    out = parts[1].split("Contents of the ", 1)[0]
    cies, fdes = {}, []
    cur = None
    for line in out.splitlines():
        m = ENTRY.match(line)
        if m:
            cur = {"off": int(m.group(1), 16), "kind": m.group(2), "rows": []}
            if cur["kind"] == "CIE":
                aug = CIE_AUG.search(m.group(3)).group(1)
                cur["signal"] = "S" in aug
                cies[cur["off"]] = cur
            else:
                f = FDE_PC.search(m.group(3))
                cur["cie"] = int(f.group(1), 16)
                cur["lo"], cur["hi"] = int(f.group(2), 16), int(f.group(3), 16)
                fdes.append(cur)
            continue
        parts = line.split()
        if cur is None or not parts:
            continue
        if parts[0] == "LOC":
            cur["cols"] = parts[1:]
        elif re.fullmatch(r"[0-9a-f]{16}", parts[0]) and "cols" in cur:
            # A register rule prints as "r10 (r10)": one cell.
            cells = re.findall(r"\S+(?: \([^)]*\))?", line.split(None, 1)[1])
            cur["rows"].append((int(parts[0], 16), dict(zip(cur["cols"], cells))))
    rules = {}
    for f in fdes:
        if f["hi"] <= f["lo"]:
            continue
        cie = cies[f["cie"]]
        rows = f["rows"] or [(f["lo"], cie["rows"][-1][1])]
        for loc, cells in rows:
            if loc < f["hi"]:
                rules[loc] = reduce_cells(cells, cie["signal"])
        if f["hi"] not in rules:
            rules[f["hi"]] = ("gap", 0, 0, 0)
    return rules


def our_rows(path):
    out = subprocess.run([CFIDUMP, "rows", path], capture_output=True, text=True,
                         check=True).stdout
    rows = {}
    for line in out.splitlines():
        if line.startswith("#"):
            continue
        pc, kind, off, rule, rbp_off, arg = line.split()
        rows[int(pc, 16)] = (kind, int(off), int(rule), int(rbp_off), int(arg))
    return rows


def lookup(pcs, rows, pc):
    i = bisect.bisect_right(pcs, pc)
    return rows[pcs[i - 1]] if i else ("gap", 0, 0, 0)


def compare(path):
    want, have = readelf_rows(path), our_rows(path)
    wpcs, hpcs = sorted(want), sorted(have)
    bad, plt = [], 0
    for pc in sorted(set(wpcs) | set(hpcs)):
        w, h = lookup(wpcs, want, pc), lookup(hpcs, have, pc)
        if w[0] == "exp":
            # Expressions: the PLT's is reduced (threshold 10 or 11), others
            # are unsupported rows.
            ok = (h[0] == "plt" and h[1] == 8 and h[4] in (10, 11)) or \
                 h[0] == "unsupported"
            plt += h[0] == "plt"
        else:
            ok = w == h[:4] and (w[0] not in ("gap", "end", "signal", "unsupported")
                                 or h[1] == 0)
        if not ok:
            bad.append("%#x: readelf %s, ours %s" % (pc, w, h))
    return len(want), len(have), plt, bad


@timeout(120)
def test_cfi_rows_match_readelf():
    check(os.access(CFIDUMP, os.X_OK), "%s not built (make build/tests/cfidump)" % CFIDUMP)
    for path in LIBS:
        if not os.path.exists(path):
            fail("%s is missing" % path)
        nwant, nhave, plt, bad = compare(path)
        check(not bad, "%s: %d addresses differ from readelf, first: %s"
              % (path, len(bad), "; ".join(bad[:5])))
        check(nhave > 100 and nwant > 100, "%s: only %d/%d rows" % (path, nhave, nwant))
        if "libpython" in path:
            check(plt > 0, "%s: the .plt expression was not recognised" % path)


PROG = r"""
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

static volatile long sink;

/* noreturn: the call to it ends handler(), so its return address is past
 * handler's last byte (only a lookup at return address - 1 finds handler). */
__attribute__((noinline, noreturn)) static void in_handler(long n)
{
	for (;;)
		sink += n;
}

static void handler(int sig)
{
	in_handler(sig);
}

__attribute__((noinline)) static long deep(int n)
{
	long r;

	if (n == 0) {
		raise(SIGUSR1);
		return 1;
	}
	r = deep(n - 1) * 3 + n;
	sink += r;
	return r;
}

static int cmp(const void *a, const void *b)
{
	static int once;

	if (!once++)
		sink += deep(4);
	return *(const int *)a - *(const int *)b;
}

int main(void)
{
	int v[64];
	int i;

	signal(SIGUSR1, handler);
	for (i = 0; i < 64; i++)
		v[i] = 64 - i;
	write(1, "ready\n", 6);
	qsort(v, 64, sizeof(v[0]), cmp);
	return (int)sink & 1;
}
"""

# Real frames only, past main: libc's debug file gives gdb inlined frames and
# tail calls rebuilt from call site info, which no stack holds.
GDB_SCRIPT = """
import gdb
gdb.execute("set backtrace past-main on")
gdb.execute("set backtrace past-entry on")
f = gdb.newest_frame()
while f is not None:
    if f.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
        print("PC %#x" % f.pc())
    f = f.older()
"""


def unwind_both(d, argv):
    """(our return addresses, our stop line, gdb's) for argv, stopped twice
    once it printed "ready"."""
    script = os.path.join(d, "bt.py")
    with open(script, "w") as f:
        f.write(GDB_SCRIPT)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE)
    try:
        check(proc.stdout.readline() == b"ready\n", "%s did not start" % argv[0])
        time.sleep(0.3)
        ours = subprocess.run([CFIDUMP, "unwind", str(proc.pid)], capture_output=True,
                              text=True, timeout=30)
        check(ours.returncode == 0, "cfidump unwind: %s" % ours.stderr.strip())
        gdb = subprocess.run(["gdb", "-p", str(proc.pid), "-batch", "-nx", "-x", script],
                             capture_output=True, text=True, timeout=60)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    pcs = [int(x, 16) for x in ours.stdout.split() if x.startswith("0x")]
    want = [int(m, 16) for m in re.findall(r"^PC (0x[0-9a-f]+)$", gdb.stdout, re.M)]
    check(len(want) >= 12, "gdb's bt is too short (%d frames): %s" % (len(want), gdb.stdout[-800:]))
    return pcs, ours.stdout.strip().splitlines()[-1], want


def build_prog(d, flags):
    """PROG built with flags, and in_handler's [start, end) (-no-pie: nm's
    addresses are the runtime ones)."""
    exe = os.path.join(d, "nofp")
    subprocess.run(["cc", "-O2", "-fomit-frame-pointer", "-no-pie"] + flags +
                   ["-x", "c", "-", "-o", exe], input=PROG, text=True, check=True)
    nm = subprocess.run(["nm", "-n", exe], capture_output=True, text=True,
                        check=True).stdout.split("\n")
    at = [i for i, l in enumerate(nm) if l.endswith(" in_handler")][0]
    return exe, (int(nm[at].split()[0], 16), int(nm[at + 1].split()[0], 16))


PY_SLEEP = """
import time
def down(n):
    if n:
        return down(n - 1)
    time.sleep(100)
print("ready", flush=True)
down(5)
"""


@timeout(90)
def test_cfi_unwind_matches_gdb():
    check(os.access(CFIDUMP, os.X_OK), "%s not built" % CFIDUMP)
    # The program's own CFI in .eh_frame, then (built -g without unwind
    # tables) in .debug_frame only.
    for flags in (["-fasynchronous-unwind-tables"], ["-g", "-fno-asynchronous-unwind-tables"]):
        what = " ".join(flags)
        with tempfile.TemporaryDirectory() as d:
            exe, (lo, hi) = build_prog(d, flags)
            pcs, stop, want = unwind_both(d, [exe])
        # Frame 0 by function: the two stops see the loop at different
        # instructions.
        check(pcs and want and lo <= pcs[0] < hi and lo <= want[0] < hi,
              "%s: frame 0 not in in_handler [%#x, %#x): ours %s, gdb's %s"
              % (what, lo, hi, pcs[:1], want[:1]))
        check(pcs[1:] == want[1:], "%s: return addresses differ:\nours %s (%s)\ngdb  %s"
              % (what, [hex(p) for p in pcs], stop, [hex(p) for p in want]))
        check(stop == "# end of stack", "%s: our unwind stopped with %s" % (what, stop))
    # pyenv's libpython3.13 (no frame pointers) sleeping: a stable stack,
    # every frame compared.
    py = os.path.join(os.environ.get("PYENV_ROOT", "/root/.pyenv"),
                      "versions", "3.13.0", "bin", "python3.13")
    with tempfile.TemporaryDirectory() as d:
        pcs, stop, want = unwind_both(d, [py, "-c", PY_SLEEP])
    check(pcs == want, "python3.13: return addresses differ:\nours %s (%s)\ngdb  %s"
          % ([hex(p) for p in pcs], stop, [hex(p) for p in want]))
    check(stop == "# end of stack", "python3.13: our unwind stopped with %s" % stop)
