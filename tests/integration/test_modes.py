"""Sampling modes: wall (off-CPU time), gil, --kernel, --threads."""

import json
import time

from common import python_independent, one_build_per_version
from common import art_path, check, fmt_stacks, run_profiler, start_workload, timeout, total

HZ = 100


def share(stacks, name):
    return sum(s.count for s in stacks if name in s.names) / max(total(stacks), 1)


@timeout(60)
@one_build_per_version
def test_wall_mode_counts_sleep(python):
    truth_path = art_path("modes-sleep.truth.json")
    w = start_workload(python, "modes.py", "sleep", 30, truth_path)
    time.sleep(0.3)                      # a few cycles, so the file exists
    before = _read_truth(truth_path)
    res = run_profiler(w.pid, ["-F", HZ, "-d", 4, "--mode", "wall"], timeout=30,
                       stats=True).expect_ok()
    after = _read_truth(truth_path)
    stacks, st = res.stacks(), res.stats()
    n = total(stacks)
    elapsed = st["duration_s"]
    # One thread: wall mode gives it about `rate` counts per second, asleep
    # or not, at the rate used (-F 100 with the tick at HZ 250: every 3rd
    # tick, 83.3 Hz), which the stats state.
    rate = st["sample_rate_hz"]
    check(abs(rate - HZ) <= HZ / 4, "-F %d sampled at %.2f Hz" % (HZ, rate))
    check(abs(n - elapsed * rate) <= 0.1 * elapsed * rate,
          "%d counts in %.2f s at %.2f Hz, want about %d" % (n, elapsed, rate, elapsed * rate))
    # The workload's own clock over the same cycles (give or take one of
    # ~40): under load its burning() phase is no longer exactly 10 %.
    spent = {k: after[k] - before[k] for k in after}
    want = spent["sleeping"] / max(1e-9, spent["sleeping"] + spent["burning"])
    got = share(stacks, "sleeping")
    check(abs(got - want) <= 0.05,
          "sleeping() has %.1f%% of wall counts, its own clock says %.1f%% (+-5 points) [%s]"
          % (100 * got, 100 * want, fmt_stacks(stacks, 4)))
    check(st["collected"] == st["written"] + st["lost"] + sum(st["dropped"].values()),
          "stats do not add up: %r" % st)


def _read_truth(path):
    with open(path) as f:
        return json.load(f)


@timeout(60)
@one_build_per_version
def test_cpu_mode_ignores_sleep(python):
    w = start_workload(python, "modes.py", "sleep", 30)
    res = run_profiler(w.pid, ["-F", HZ, "-d", 3], timeout=30).expect_ok()
    stacks = res.stacks()
    check(total(stacks) > 0, "no samples %s" % res.where())
    check(share(stacks, "sleeping") <= 0.1,
          "sleeping() has %.0f%% of on-CPU samples [%s]"
          % (100 * share(stacks, "sleeping"), fmt_stacks(stacks, 4)))
    check(share(stacks, "burning") >= 0.8, "burning() share %.2f" % share(stacks, "burning"))


@timeout(60)
@one_build_per_version
def test_gil_mode_only_holders(python):
    w = start_workload(python, "modes.py", "gil", 30)
    cpu = run_profiler(w.pid, ["-F", 499, "-d", 2], timeout=30).expect_ok().stacks()
    check(share(cpu, "hash_nogil") >= 0.2,
          "cpu mode: the GIL-free hashing thread should be on CPU: %.2f [%s]"
          % (share(cpu, "hash_nogil"), fmt_stacks(cpu, 4)))
    res = run_profiler(w.pid, ["-F", 499, "-d", 2, "--mode", "gil"], timeout=30,
                       stats=True).expect_ok()
    gil, st = res.stacks(), res.stats()
    check(share(gil, "spin_python") >= 0.9,
          "gil mode: spin_python should dominate: %.2f [%s]"
          % (share(gil, "spin_python"), fmt_stacks(gil, 4)))
    check(share(gil, "hash_nogil") <= 0.05,
          "gil mode shows the thread that released the GIL: %.2f" % share(gil, "hash_nogil"))
    check(st["dropped"]["filtered"] > 0, "no sample was filtered for lack of the GIL: %r" % st)


@timeout(60)
@python_independent
def test_kernel_stacks_show_syscalls(python):
    w = start_workload(python, "modes.py", "io", 30)
    res = run_profiler(w.pid, ["-F", 499, "-d", 3, "--kernel", "--mode", "wall"],
                       timeout=30).expect_ok()
    stacks = res.stacks()
    kernel = [s for s in stacks if any(n.endswith(" [k]") for n in s.names)]
    check(kernel, "no kernel frames at all [%s]" % fmt_stacks(stacks, 4))
    sysc = [s for s in kernel if "write_files" in s.names and
            any("sys_" in n or "fsync" in n or "write" in n for n in s.names if n.endswith("[k]"))]
    check(sysc, "no syscall frames under write_files [%s]" % fmt_stacks(kernel, 4))
    for s in kernel:
        first_k = next(i for i, n in enumerate(s.names) if n.endswith(" [k]"))
        check(all(n.endswith(" [k]") for n in s.names[first_k:]),
              "kernel frames must sit under the Python leaf: %s" % ";".join(s.names))


@timeout(60)
@one_build_per_version
def test_threads_root_frames(python):
    w = start_workload(python, "modes.py", "named", 30)
    res = run_profiler(w.pid, ["-F", 199, "-d", 2, "--threads"], timeout=30).expect_ok()
    stacks = res.stacks()
    roots = {s.names[0] for s in stacks}
    for name, tid in w.info["tids"].items():
        want = "thread %d %s" % (tid, name)
        check(want in roots, "no root frame %r among %r" % (want, sorted(roots)))
    check(all(r.startswith("thread ") for r in roots), "non-thread roots: %r" % roots)
