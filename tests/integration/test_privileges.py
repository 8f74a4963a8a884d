"""Least privilege: the profiler as an unprivileged user with capabilities.

The profiler runs as uid 65534 (nobody) with only CAP_BPF, CAP_PERFMON and
CAP_SYS_PTRACE (ambient, through setpriv, or as file capabilities through
setcap), against a target owned by another user (uid 4242, or root). What
was found necessary besides (see the reliability report):
  - CAP_DAC_READ_SEARCH when the interpreter's files are not readable by the
    profiler's user (pyenv under /root, mode 0700);
  - CAP_SYSLOG for kernel frame names with --kernel (kernel.kptr_restrict /
    perf_event_paranoid >= 2 hide /proc/kallsyms addresses otherwise);
  - CAP_SYS_ADMIN only for the kernel's BPF run-time statistics (optional:
    without it they are left out);
  - not CAP_SYS_RESOURCE: BPF memory is charged to the memory cgroup (5.11+),
    RLIMIT_MEMLOCK does not apply.
"""
import os
import re
import shutil
import subprocess
import tempfile

from common import (WORKLOADS, Workload, art_path, binary, check, parse_collapsed,
                    pyenv_python, run_profiler, spawn, timeout, total)

NOBODY = 65534
OTHER = 4242                    # the target's owner: neither root nor nobody
BASE_CAPS = ("bpf", "perfmon", "sys_ptrace")
SYSTEM_PYTHON = "/usr/bin/python3.11"      # world-readable, unlike pyenv's under /root


def as_user(uid, caps=()):
    """setpriv prefix: uid/gid `uid`, no groups, exactly `caps` (ambient)."""
    argv = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"]
    if caps:
        c = ",".join("+" + x for x in caps)
        argv += ["--inh-caps=-all," + c, "--ambient-caps=-all," + c]
    else:
        argv += ["--inh-caps=-all", "--ambient-caps=-all"]
    return argv


def start_target(python_path, uid=OTHER, script="spinner.py", args=("60",)):
    """A workload running as `uid`; waits for its READY line."""
    check(os.access(python_path, os.X_OK), "%s missing" % python_path)
    errp = art_path("target-%d.stderr" % uid)
    with open(errp, "wb") as errf:
        proc = spawn(as_user(uid) + [python_path, os.path.join(WORKLOADS, script)] + list(args),
                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errf,
                     cwd=WORKLOADS, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    w = Workload(proc, {}, script)
    line = w.read_line(30)
    check(line and line.startswith("READY"), "target as uid %d not ready: %r (%s)"
          % (uid, line, open(errp).read()[-300:]))
    with open("/proc/%d/status" % proc.pid) as f:
        uids = [l for l in f if l.startswith("Uid:")][0].split()[1:]
    check(all(int(u) == uid for u in uids), "target runs as %s, want %d" % (uids, uid))
    return w


def _profile(w, caps, extra=(), prefix=None):
    return run_profiler(w.pid, ["-F", 199, "-d", 2] + list(extra), timeout=60,
                        prefix=prefix if prefix is not None else as_user(NOBODY, caps))


def _profiled(res, what, fn="spin_inner"):
    check(res.rc == 0, "%s: profiler exit %s %s" % (what, res.rc, res.where()))
    stacks = res.stacks()
    check(total(stacks) >= 50, "%s: only %d samples %s" % (what, total(stacks), res.where()))
    check(any(fn in s.names for s in stacks), "%s: %s missing %s" % (what, fn, res.where()))
    return stacks


def _refused(res, what, must, must_not=()):
    check(res.rc == 1, "%s: expected exit 1, got %s %s" % (what, res.rc, res.where()))
    check(res.out == b"", "%s: stdout not empty: %r" % (what, res.out[:200]))
    lines = res.err_lines()
    check(len(lines) == 1 and lines[0].startswith("tachyon-bpf: "),
          "%s: want one 'tachyon-bpf: ...' line on stderr, got %r" % (what, lines))
    for m in must:
        check(m in lines[0], "%s: message lacks %r: %r" % (what, m, lines[0]))
    for m in must_not:
        check(m not in lines[0], "%s: message names %r, which is not missing: %r"
              % (what, m, lines[0]))


@timeout(60)
def test_three_capabilities_suffice():
    """uid 65534 with CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE profiles a target
    owned by uid 4242 (a world-readable interpreter), and one owned by root."""
    w = start_target(SYSTEM_PYTHON, OTHER)
    _profiled(_profile(w, BASE_CAPS), "nobody + 3 caps, target uid %d" % OTHER)
    w2 = start_target(SYSTEM_PYTHON, 0)
    _profiled(_profile(w2, BASE_CAPS), "nobody + 3 caps, target uid 0")


@timeout(90)
def test_each_missing_capability_is_named():
    """Without one of the three the run is refused, and the message names
    exactly the one that is missing."""
    w = start_target(SYSTEM_PYTHON, OTHER)
    for missing in BASE_CAPS:
        caps = [c for c in BASE_CAPS if c != missing]
        res = _profile(w, caps)
        name = "CAP_" + missing.upper()
        _refused(res, "without %s" % name, [name],
                 ["CAP_" + c.upper() for c in caps])
    res = _profile(w, ())
    _refused(res, "no capabilities", ["CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE"])


@timeout(60)
def test_setcap_binary():
    """The README's way: file capabilities on a copy of the binary, run by
    an ordinary user without any capability of its own."""
    d = tempfile.mkdtemp(prefix="tb-setcap-")
    try:
        os.chmod(d, 0o755)
        b = os.path.join(d, "tachyon-bpf")
        shutil.copy2(binary(), b)
        os.chmod(b, 0o755)
        r = subprocess.run(["setcap", "cap_bpf,cap_perfmon,cap_sys_ptrace+ep", b],
                           capture_output=True, text=True, timeout=10)
        check(r.returncode == 0, "setcap failed: %s" % r.stderr)
        w = start_target(SYSTEM_PYTHON, OTHER)
        old = os.environ.get("TB_BIN")
        os.environ["TB_BIN"] = b
        try:
            _profiled(_profile(w, (), prefix=as_user(NOBODY)), "setcap binary")
        finally:
            if old is None:
                del os.environ["TB_BIN"]
            else:
                os.environ["TB_BIN"] = old
    finally:
        shutil.rmtree(d, ignore_errors=True)


@timeout(60)
def test_unreadable_interpreter_needs_dac_read_search():
    """pyenv's libpython lies under /root (mode 0700): with the three
    capabilities the profiler cannot open it, and must say that
    CAP_DAC_READ_SEARCH is what is missing (CAP_SYS_PTRACE is present);
    with CAP_DAC_READ_SEARCH added it profiles."""
    py = pyenv_python("3.13.0")
    w = start_target(py.path, 0)
    res = _profile(w, BASE_CAPS)
    _refused(res, "pyenv target, 3 caps", ["CAP_DAC_READ_SEARCH"])
    _profiled(_profile(w, BASE_CAPS + ("dac_read_search",)), "pyenv target + dac_read_search")


@timeout(60)
def test_kernel_frames_need_syslog():
    """--kernel: without CAP_SYSLOG /proc/kallsyms shows no addresses (a
    warning, frames [unknown]); with it kernel functions are named."""
    w = start_target(SYSTEM_PYTHON, OTHER, "syscaller.py")
    res = _profile(w, BASE_CAPS, ["--kernel"])
    _profiled(res, "--kernel, 3 caps", "in_kernel")
    check("kallsyms" in res.err_text, "no warning about /proc/kallsyms: %s" % res.err_text)
    res = _profile(w, BASE_CAPS + ("syslog",), ["--kernel"])
    stacks = _profiled(res, "--kernel + syslog", "in_kernel")
    named = [f.name for s in stacks for f in s.frames
             if f.name.endswith(" [k]") and f.name != "[unknown] [k]"]
    check(named, "with CAP_SYSLOG no kernel frame has a name %s" % res.where())


@timeout(60)
def test_command_runs_without_capabilities():
    """-- CMD: the command the profiler starts must not inherit its
    capabilities (the ambient set would hand CAP_SYS_PTRACE & co. to it)."""
    d = tempfile.mkdtemp(prefix="tb-capprobe-")
    os.chmod(d, 0o755)
    probe = os.path.join(d, "capprobe.py")
    with open(probe, "w") as f:
        f.write("import time\n"
                "caps = {l.split(':')[0]: int(l.split()[1], 16)\n"
                "        for l in open('/proc/self/status') if l.startswith('Cap')}\n"
                "print('CAPS', caps['CapEff'], caps['CapPrm'], caps['CapAmb'], caps['CapInh'],"
                " flush=True)\n"
                "end = time.monotonic() + 1\n"
                "while time.monotonic() < end: pass\n")
    os.chmod(probe, 0o644)
    try:
        res = run_profiler(None, ["-F", 99, "--", SYSTEM_PYTHON, probe], timeout=60,
                           prefix=as_user(NOBODY, BASE_CAPS))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    check(res.rc == 0, "profiler exit %s %s" % (res.rc, res.where()))
    # The profile is on stdout, so the command's own stdout went to stderr.
    m = re.search(rb"CAPS (\d+) (\d+) (\d+) (\d+)", res.err)
    check(m, "the command did not report its capabilities: %r" % res.err[-300:])
    eff, prm, amb, inh = (int(x) for x in m.groups())
    check(eff == prm == amb == 0,
          "the command inherited capabilities: CapEff %#x CapPrm %#x CapAmb %#x CapInh %#x "
          "(clear the ambient set before exec)" % (eff, prm, amb, inh))
    parse_collapsed(res.out)
