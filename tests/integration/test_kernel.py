"""The running kernel's BPF features, probed before loading (user/kfeatures.c),
and --btf FILE. Older kernels are covered by `make check-kernels`
(scripts/check-kernels.sh), which boots them under QEMU.
"""
import os

from common import check, primary_python, run_profiler, start_workload, timeout

# Every feature the probe reports, and whether every run needs it.
FEATURES = {
    "bpf_loop": True, "BPF ring buffer": True, "tp_btf tracepoints": True,
    "batch map operations": True, "map-in-map": True, "bpf_get_ns_current_pid_tgid": True,
    "BPF run-time statistics": False, "tp_btf/hrtimer_expire_entry": False,
    "bpf_task_pt_regs": False,
}


def _target():
    return start_workload(primary_python(), "spinner.py", 60)


@timeout(60)
def test_kernel_features_probed():
    """-v lists each probe's result for the running kernel; this one has them all."""
    res = run_profiler(_target().pid, ["-v", "-d", 1], timeout=30).expect_ok()
    prefix = "tachyon-bpf: debug: kernel %s: " % os.uname().release
    lines = [l for l in res.err_lines() if l.startswith(prefix)]
    check(len(lines) == 1, "no (or more than one) feature line %r %s" % (prefix, res.where()))
    got = dict(item.rsplit(" ", 1) for item in lines[0][len(prefix):].split(", "))
    check(sorted(got) == sorted(FEATURES), "features probed: %s, expected %s"
          % (sorted(got), sorted(FEATURES)))
    missing = [f for f, required in FEATURES.items() if required and got[f] != "yes"]
    check(not missing, "the running kernel lacks %s? %s" % (missing, lines[0]))


@timeout(60)
def test_btf_option():
    """--btf FILE: the types from FILE, and a missing FILE is one line, exit 1."""
    t = _target()
    res = run_profiler(t.pid, ["--btf", "/nonexistent.btf", "-d", 1], timeout=30)
    check(res.rc == 1, "--btf /nonexistent.btf: exit %s, expected 1 %s" % (res.rc, res.where()))
    lines = res.err_lines()
    check(len(lines) == 1 and lines[0].startswith("tachyon-bpf: --btf /nonexistent.btf: "),
          "--btf /nonexistent.btf: expected one line naming it %s" % res.where())
    res = run_profiler(t.pid, ["--btf", "/sys/kernel/btf/vmlinux", "-d", 2], timeout=30)
    res.expect_ok()
    names = set(n for s in res.stacks() for n in s.names)
    check("spin_inner" in names, "--btf /sys/kernel/btf/vmlinux: no spin_inner in the "
          "profile %s" % res.where())
