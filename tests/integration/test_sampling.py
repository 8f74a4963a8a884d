"""What drives sampling: the scheduler tick (-e tick, the default up to the
kernel's HZ) and perf events that follow the targets' threads (the default
above HZ for -p and --). Truth comes from the kernel's config (HZ) and the
threads' own CPU time (time.thread_time, /proc/PID/task/TID/stat)."""
import json
import os

from common import python_independent
from common import (WORKLOADS, art_path, check, check_stats_invariant, fmt_stacks,
                    kernel_hz, primary_python, run_profiler, start_workload, timeout,
                    total)


def _thread_cpu(pid):
    """{tid: utime+stime seconds} of every thread of pid."""
    out = {}
    tck = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[int(tid)] = (int(fields[11]) + int(fields[12])) / tck
        except OSError:
            pass
    return out


def _per_thread(stacks):
    """{tid: samples} from --threads root frames 'thread TID NAME'."""
    out = {}
    for s in stacks:
        root = s.frames[0].raw if s.frames else ""
        if root.startswith("thread "):
            tid = int(root.split()[1])
            out[tid] = out.get(tid, 0) + s.count
    return out


@timeout(60)
@python_independent
def test_tick_rate(python):
    """-F 99 with no -e: the tick, every Nth of HZ, the rate said honestly;
    samples match the target's CPU time at that rate."""
    hz = kernel_hz()
    check(hz > 0, "cannot read CONFIG_HZ from /proc/config.gz or /boot (test set-up)")
    w = start_workload(python, "spinner.py", 60)
    cpu0 = w.cpu_seconds()
    res = run_profiler(w.pid, ["-F", 99, "-d", 3], timeout=30, stats=True).expect_ok()
    cpu = w.cpu_seconds() - cpu0
    st = res.stats()
    check_stats_invariant(st)
    check(st.get("event") == "tick" and st.get("scope") == "tick",
          "-F 99 at HZ %d: event %r scope %r, expected the tick" % (hz, st.get("event"),
                                                                   st.get("scope")))
    check(st.get("kernel_hz") == hz, "kernel_hz %r, the kernel says %d" % (st.get("kernel_hz"), hz))
    n = st.get("tick_every") or 0
    rate = st.get("sample_rate_hz")
    check(n >= 1 and abs(rate - hz / n) < 0.01, "rate %r is not HZ %d / %d" % (rate, hz, n))
    check(abs(rate - 99) <= min(abs(hz / m - 99) for m in (n - 1, n + 1) if m >= 1) + 1e-9,
          "every %d ticks (%.2f Hz) is not the rate nearest -F 99 at HZ %d" % (n, rate, hz))
    check(any("tick" in l and "%g" % round(rate, 4) in l for l in res.err_lines()),
          "the summary does not say the tick rate used %s" % res.where())
    # A busy thread on a CPU is interrupted by every tick of that CPU: the
    # samples are its CPU time at HZ / N (start-up and end excluded).
    got = st["collected"]
    lo, hi = 0.85 * rate * (cpu - (res.elapsed - st["duration_s"])), 1.1 * rate * cpu + 5
    check(lo <= got <= hi, "%d samples for %.2f s of CPU at %.2f Hz: expected %.0f..%.0f %s"
          % (got, cpu, rate, lo, hi, res.where()))
    stacks = res.stacks()
    check(sum(s.count for s in stacks if s.leaf.name == "spin_inner") >= 0.9 * total(stacks),
          "spin_inner is not the leaf of the samples [top: %s]" % fmt_stacks(stacks, 4))


@timeout(60)
@python_independent
def test_tick_shared_cpu(python):
    """A busy target sharing its CPU with a neighbour that wakes just after
    ticks and sleeps before the next (tick_dodger.py): a sample of a thread
    that left the CPU since its last one is worth its CPU time since, so the
    target's samples add up to its own CPU time (time.process_time(), from its start to its end: the
    profile covers its whole life), not to the neighbour's too. Unweighted,
    the target was credited +18 % here; cpu-clock, which follows the thread's
    own clock, agreed within 2 %."""
    hz = kernel_hz()
    n = start_workload(python, "tick_dodger.py", 60)
    os.sched_setaffinity(n.pid, {0})
    out, stats = art_path("shared_cpu.folded"), art_path("shared_cpu.stats.json")
    res = run_profiler(None, ["-F", hz, "-o", out, "--stats", stats, "--", "taskset", "-c", "0",
                              python.path, os.path.join(WORKLOADS, "timed_spin.py"), 3],
                       timeout=40).expect_ok()
    res.stats_path = stats
    st = res.stats()
    check_stats_invariant(st, res.where())
    check(st.get("event") == "tick" and st.get("tick_every") == 1,
          "-F %d: event %r every %r ticks, expected every tick" % (hz, st.get("event"),
                                                                  st.get("tick_every")))
    line = [l for l in res.out.decode().split("\n") if l.startswith("CPU ")]
    check(len(line) == 1, "timed_spin.py said no CPU line: %r" % res.out[-300:])
    cpu = json.loads(line[0][4:])["process_time"]
    # Set-up: the neighbour must have taken a real share of CPU 0.
    check(cpu < 0.8 * 3, "set-up: the target had %.2f s of CPU in 3 s: the neighbour did "
          "not share its CPU" % cpu)
    got = st["written"] / float(hz)
    check(abs(got - cpu) <= 0.08 * cpu + 0.05, "%d samples at %d Hz are %.2f s, the target "
          "ran %.2f s of CPU (%+.0f %%) %s" % (st["written"], hz, got, cpu,
                                               100 * (got / cpu - 1), res.where()))


@timeout(30)
def test_tick_above_hz_refused():
    """-e tick cannot sample faster than the tick: a usage error naming HZ."""
    hz = kernel_hz()
    w = start_workload(primary_python(), "spinner.py", 30)
    res = run_profiler(w.pid, ["-e", "tick", "-F", hz + 1, "-d", 1], timeout=20)
    check(res.rc == 2, "exit %r for -e tick -F %d, expected 2 %s" % (res.rc, hz + 1, res.where()))
    lines = res.err_lines()
    check(len(lines) == 1 and "HZ %d" % hz in lines[0] and "cpu-clock" in lines[0],
          "expected one line naming HZ %d and cpu-clock: %r" % (hz, lines))
    check(not res.out, "stdout is not empty")


@timeout(40)
@python_independent
def test_tick_kernel_stack(python):
    """--kernel with the tick: the interrupt's own frames (hrtimer, tick)
    are not the thread's kernel stack; a user-mode spinner has none."""
    w = start_workload(python, "spinner.py", 60)
    res = run_profiler(w.pid, ["-e", "tick", "-F", 250, "--kernel", "-d", 2], timeout=30,
                       stats=True).expect_ok()
    stacks = res.stacks()
    irq = [f.raw for s in stacks for f in s.frames
           if f.raw.endswith("[k]") and any(k in f.raw for k in ("hrtimer", "tick_nohz",
                                                                 "asm_sysvec", "sysvec_"))]
    check(not irq, "interrupt frames in the kernel stacks: %s" % sorted(set(irq))[:5])
    check(total(stacks) >= 100, "only %d samples %s" % (total(stacks), res.where()))


@timeout(60)
def test_thread_events_follow_new_threads(python):
    """-- CMD at -F 999: one event on the command, inherited by the threads
    it starts later; each thread's samples match its own CPU time."""
    truth_path, stats = art_path("late.json"), art_path("late.stats.json")
    res = run_profiler(None, ["-F", 999, "--threads", "--stats", stats, "--", python.path,
                              os.path.join(WORKLOADS, "late_threads.py"), truth_path, 3, 2],
                       timeout=40).expect_ok()
    res.stats_path = stats
    st = res.stats()
    check_stats_invariant(st)
    check(st.get("scope") == "thread" and st.get("task_events") == 1,
          "scope %r with %r events opened, expected one per-thread event on the command"
          % (st.get("scope"), st.get("task_events")))
    with open(truth_path) as f:
        truth = json.load(f)
    per = _per_thread(res.stacks())
    bad = []
    for name, t in sorted(truth.items()):
        want = 999 * t["cpu"]
        got = per.get(t["tid"], 0)
        if not 0.85 * want - 10 <= got <= 1.1 * want + 10:
            bad.append("%s (tid %d): %d samples for %.2f s of CPU" % (name, t["tid"], got,
                                                                     t["cpu"]))
    check(not bad, "per-thread samples off the threads' CPU time at 999 Hz: %s %s"
          % ("; ".join(bad), res.where()))


@timeout(60)
def test_thread_events_existing_threads(python):
    """-p on a process with 8 busy threads: an event each, none twice (the
    samples are the process's CPU time at -F, not double)."""
    w = start_workload(python, "threads8.py", 60)
    before = _thread_cpu(w.pid)
    res = run_profiler(w.pid, ["-F", 499, "--threads", "-d", 3], timeout=30,
                       stats=True).expect_ok()
    after = _thread_cpu(w.pid)
    st = res.stats()
    check_stats_invariant(st)
    check(st.get("scope") == "thread" and st.get("task_events", 0) >= 9,
          "scope %r with %r events, expected one per thread (9)" % (st.get("scope"),
                                                                   st.get("task_events")))
    cpu = sum(after[t] - before.get(t, 0) for t in after)
    got = st["collected"]
    lo = 0.8 * 499 * (cpu - 2 * (res.elapsed - st["duration_s"]))
    hi = 1.1 * 499 * cpu + 20
    check(lo <= got <= hi, "%d samples for %.2f s of CPU over 9 threads at 499 Hz: expected "
          "%.0f..%.0f %s" % (got, cpu, lo, hi, res.where()))
    per = _per_thread(res.stacks())
    check(len([t for t in per if per[t] > 50]) >= 8,
          "fewer than 8 threads with samples: %s" % per)
