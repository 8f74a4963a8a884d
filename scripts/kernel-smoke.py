#!/usr/bin/env python3
"""The smoke subset that `make check-kernels` runs on each kernel.

Runs inside the guest of scripts/check-kernels.sh (the host's files shared
read-only, a tmpfs on /tmp) and on the host for the running kernel. Each check
profiles a Python whose function names it knows and looks for them in the
profile: the exit code alone proves nothing.

usage: kernel-smoke.py TACHYON_BPF
Prints `TB-KERNEL RELEASE`, `TB-FEATURES` (the profiler's probe of the
kernel's features), then one `TB-CHECK NAME ok|FAIL why|refused what`
line per check (refused: the profiler's one-line refusal of a kernel that
lacks a feature, naming it); exits 1 if any check did not pass.
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

PYENV = "/root/.pyenv/versions"
# Short and distinctive names: found in a profile only if the walk worked.
BUSY = """
import sys, time
def tb_smoke_leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def tb_smoke_busy():
    while True:
        tb_smoke_leaf(2000)
def tb_smoke_sleeper():
    while True:
        time.sleep(0.05)
print("ready", flush=True)
{"busy": tb_smoke_busy, "sleep": tb_smoke_sleeper}[sys.argv[1]]()
"""
LATE = """
import time
def tb_smoke_late():
    end = time.monotonic() + float(__import__("sys").argv[1])
    while time.monotonic() < end:
        sum(i for i in range(1000))
tb_smoke_late()
"""
CHECK_TIMEOUT = 240	# TCG is slow: interpreters start in seconds


def python(version):
    """pyenv's interpreter for a major.minor (3.11 -> 3.11.7)."""
    for name in sorted(os.listdir(PYENV)):
        if name.startswith(version + "."):
            return os.path.join(PYENV, name, "bin", "python" + version)
    raise RuntimeError("no pyenv Python %s in %s" % (version, PYENV))


class Target:
    """A Python running BUSY in the given role, ready once it printed."""

    def __init__(self, version, role):
        self.proc = subprocess.Popen([python(version), "-c", BUSY, role],
                                     stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("Python %s did not start" % version)
        self.pid = self.proc.pid

    def close(self):
        self.proc.kill()
        self.proc.wait()


class Refused(Exception):
    """The profiler refused the kernel in its one line: what it lacks."""


def failed(rc, stderr):
    """The exception for a failed run: a refusal of the kernel, or else."""
    err = [l for l in stderr.splitlines() if l.startswith("tachyon-bpf:")] or ["?"]
    m = re.match(r"tachyon-bpf: kernel \S+: (.*) \(run on Linux", err[-1])
    if rc == 1 and m:
        return Refused(m.group(1))
    # A load the kernel refused: its verifier's last words (with -v).
    log = [l for l in stderr.splitlines() if not l.startswith("tachyon-bpf:")][-12:]
    return RuntimeError("exit %d: %s%s" % (rc, err[-1], "".join("\n    " + l for l in log)))


def profile(tb, args, out):
    """Run the profiler; its profile is in `out`. Raises with its stderr."""
    r = subprocess.run([tb, "-o", out] + args, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=CHECK_TIMEOUT)
    if r.returncode != 0:
        raise failed(r.returncode, r.stderr)
    with open(out) as f:
        return f.read()


def profile_target(tb, version, role, args, out):
    """Profile a fresh Target(version, role) with args; the profile's text."""
    t = Target(version, role)
    try:
        return profile(tb, args + ["-p", str(t.pid)], out)
    finally:
        t.close()


def stacks(collapsed):
    """{stack: count} of a collapsed profile."""
    res = {}
    for line in collapsed.splitlines():
        stack, _, n = line.rpartition(" ")
        if stack:
            res[stack] = res.get(stack, 0) + int(n)
    return res


def expect(st, frames, min_share=0.5):
    """At least min_share of the samples in stacks holding frames in order."""
    total = sum(st.values())
    hit = sum(n for s, n in st.items() if in_order(s.split(";"), frames))
    if total == 0:
        raise RuntimeError("no samples")
    if hit < min_share * total:
        raise RuntimeError("%s in %d of %d samples" % ("<".join(frames), hit, total))


def in_order(stack, frames):
    """Each name of frames, as a frame name prefix, in this order (root first)."""
    i = 0
    for f in stack:
        if i < len(frames) and f.startswith(frames[i]):
            i += 1
    return i == len(frames)


def check_load(tb, tmp):
    """Load, verify and attach on a sleeping target: wall mode, so the run
    has samples (a run that profiled nothing exits 1)."""
    out = profile_target(tb, "3.13", "sleep", ["-v", "-m", "wall", "-d", "1"], tmp + "/load.txt")
    if not stacks(out):
        raise RuntimeError("no samples in wall mode")


def check_cpu(version):
    def run(tb, tmp):
        out = profile_target(tb, version, "busy", ["-d", "3"], tmp + "/cpu.txt")
        expect(stacks(out), ["tb_smoke_busy", "tb_smoke_leaf"])
    return run


def check_all_python(tb, tmp):
    """A process started after the profiler: found through its exec."""
    out = tmp + "/all.txt"
    prof = subprocess.Popen([tb, "-v", "--all-python", "-d", str(CHECK_TIMEOUT // 2), "-o", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # Sampling is on once -v says "profiling", and the late process is
    # over when it exits: under TCG the load takes tens of seconds (the
    # tail-call walker's verification on 5.10), Python's start-up several.
    head = []
    for line in prof.stderr:
        head.append(line)
        if line.startswith("tachyon-bpf: debug: profiling"):
            break
    late = subprocess.Popen([python("3.11"), "-c", LATE, "3"])
    late.wait()
    prof.send_signal(signal.SIGINT)	# the run ends, its profile is written
    _, err = prof.communicate(timeout=CHECK_TIMEOUT)
    err = "".join(head) + err
    if prof.returncode != 0:
        raise failed(prof.returncode, err)
    with open(out) as f:
        st = stacks(f.read())
    mine = {s: n for s, n in st.items() if "tb_smoke_late" in s}
    if sum(mine.values()) < 10:
        raise RuntimeError("%d samples of tb_smoke_late" % sum(mine.values()))


def check_wall(tb, tmp):
    """Off CPU in time.sleep most of the time: only wall mode sees it."""
    st = stacks(profile_target(tb, "3.11", "sleep", ["--mode", "wall", "-d", "3"],
                               tmp + "/wall.txt"))
    expect(st, ["tb_smoke_sleeper"], 0.8)
    # 3 s at 99 Hz: ~300 counts if off-CPU time is credited; on-CPU alone is a handful.
    if sum(st.values()) < 150:
        raise RuntimeError("%d counts in 3 s of wall time at 99 Hz" % sum(st.values()))


def check_speedscope(tb, tmp):
    doc = json.loads(profile_target(tb, "3.13", "busy", ["-f", "speedscope", "-d", "3"],
                                    tmp + "/p.json"))
    names = [f["name"] for f in doc["shared"]["frames"]]
    st = {}
    for p in doc["profiles"]:
        for sample, w in zip(p["samples"], p["weights"]):
            key = ";".join(names[i] for i in sample)
            st[key] = st.get(key, 0) + w
    expect(st, ["tb_smoke_busy", "tb_smoke_leaf"])


CHECKS = [
    ("load", check_load),
    ("cpu-3.11", check_cpu("3.11")),
    ("cpu-3.13", check_cpu("3.13")),
    ("all-python", check_all_python),
    ("wall", check_wall),
    ("speedscope", check_speedscope),
]


def main():
    tb = os.path.abspath(sys.argv[1])
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    print("TB-KERNEL", os.uname().release, flush=True)
    # What the kernel has, as the profiler probes it (-v; pid 1 is no Python).
    r = subprocess.run([tb, "-v", "-p", "1"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=CHECK_TIMEOUT)
    for line in r.stderr.splitlines():
        if line.startswith("tachyon-bpf: debug: kernel "):
            print("TB-FEATURES", line.split(": ", 3)[-1], flush=True)
    failed_checks = 0
    for name, fn in CHECKS:
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="tb-smoke-") as tmp:
            try:
                fn(tb, tmp)
                res = "ok"
            except Refused as e:
                res = "refused " + str(e)
                failed_checks += 1
            except Exception as e:	# one line per check, whatever broke
                res = "FAIL " + " ".join(str(e).split())
                failed_checks += 1
        print("TB-CHECK %s %s (%.0f s)" % (name, res, time.monotonic() - t0), flush=True)
    return 1 if failed_checks else 0


if __name__ == "__main__":
    sys.exit(main())
