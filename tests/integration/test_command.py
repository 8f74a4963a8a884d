"""`tachyon-bpf [OPTIONS] -- COMMAND`, and --subprocesses with -- and -p.

-- CMD: the command is forked first and exec'd only once sampling is on, so
its first Python code is in the profile; the run ends when it exits. The
profile goes to -o FILE here, so the command's own stdout (its DONE line)
stays apart.
"""
import json
import os
import re
import signal

from common import (WORKLOADS, art_path, check, check_stats_invariant, fmt_stacks,
                    run_profiler, start_profiler, start_workload, timeout)
from test_all_python import by_pid, read_tagged, wait_profiling, warnings, with_roots

import common


def _lines_with(res, key):
    """`KEY {json}` lines the command printed (they land in the profiler's stdout)."""
    out = []
    for l in res.out.decode("utf-8", "replace").split("\n"):
        if l.startswith(key + " "):
            out.append(json.loads(l[len(key) + 1:]))
    return out


def _run_cmd(args, cmd, timeout_s=40, **kw):
    """Options must come before `--`: -o and --stats are added here."""
    n = len(os.listdir(common.artifacts()))
    outfile, stats = art_path("cmd-%d.folded" % n), art_path("cmd-%d.stats.json" % n)
    argv = list(args) + ["-o", outfile, "--stats", stats, "--"] + [str(c) for c in cmd]
    res = run_profiler(None, argv, timeout=timeout_s, **kw)
    res.outfile, res.stats_path = outfile, stats
    return res


@timeout(60)
def test_command_from_start(python):
    """The script's first function is profiled; the run ends with the script."""
    res = _run_cmd(["-F", 199], [python.path, os.path.join(WORKLOADS, "cmd_app.py"),
                                 0.15, 0.5]).expect_ok()
    done = _lines_with(res, "DONE")
    check(len(done) == 1, "cmd_app.py did not run to its end: stdout %r" % res.out[:300])
    done = done[0]
    stacks = res.stacks()
    check_stats_invariant(res.stats(), res.where())
    early = sum(s.count for s in stacks if "early_phase" in s.names)
    main = sum(s.count for s in stacks if "main_phase" in s.names)
    exp_early, exp_main = done["early_cpu_s"] * 199, done["main_cpu_s"] * 199
    check(early >= 0.5 * exp_early, "early_phase: %d samples for %.3f s of CPU (%.0f expected)"
          " - the start of the command is missing [top: %s]"
          % (early, done["early_cpu_s"], exp_early, fmt_stacks(stacks, 4)))
    check(main >= 0.5 * exp_main, "main_phase: %d samples for %.3f s of CPU (%.0f expected)"
          % (main, done["main_cpu_s"], exp_main))
    for s in stacks:
        if "early_phase" in s.names:
            check(s.names[:2] == ["<module>", "early_phase"], "stack %s" % s.short())
    # No process root frames without --subprocesses / --all-python.
    # (A code object read after the command exited is an <unknown> frame,
    # counted in --stats: a race with a loaded machine, not a root frame.)
    odd = [s.short(4) for s in stacks if s.root.file is None and s.root.raw not in common.MARKERS
           and not (s.root.raw.startswith("<unknown") and res.stats()["unknown_code"])]
    check(not odd, "unexpected root frames: %s" % " | ".join(odd[:3]))
    # It ended when the command did.
    check(res.stats()["duration_s"] < 5, "run lasted %.1f s for a ~0.7 s command"
          % res.stats()["duration_s"])
    check(not warnings(res), "unexpected messages: %r" % warnings(res))


@timeout(60)
def test_command_exit_status():
    """A command that fails (exit 3): the profile is still written and the
    profiler's own status is 0 (it did its job; it does not pass the
    command's status on)."""
    py = common.primary_python()
    res = _run_cmd(["-F", 199], [py.path, os.path.join(WORKLOADS, "cmd_app.py"), 0.1, 0.3, 3])
    check(res.rc == 0, "profiler %s for a command that exited 3 %s"
          % (common.sigdesc(res.rc), res.where()))
    stacks = res.stacks()
    check(any("main_phase" in s.names for s in stacks), "main_phase missing [top: %s]"
          % fmt_stacks(stacks, 4))
    last = res.err_lines()[-1]
    check(last.endswith("; the command exited with status 3"),
          "the closing line does not give the command's status 3: %r" % last)


@timeout(60)
def test_command_status_in_closing_line():
    """The command's own end, when it is not a clean exit 0 and the run did
    not end it: killed by a signal is said; exit 0 and a command ended by -d
    say nothing."""
    py = common.primary_python()
    for code, want in (("import os, signal\nfor i in range(2000000): pass\n"
                        "os.kill(os.getpid(), signal.SIGKILL)", "; the command was killed by signal 9"),
                       ("for i in range(2000000): pass", None),
                       ("while True: pass", None)):
        res = _run_cmd(["-d", 2], [py.path, "-c", code])
        check(res.rc == 0, "profiler %s %s" % (common.sigdesc(res.rc), res.where()))
        last = res.err_lines()[-1]
        check((want in last) if want else "the command" not in last,
              "closing line %r, want %r" % (last, want or "no word of the command"))


@timeout(60)
def test_command_subprocesses():
    """--subprocesses -- python spawner.py run: the child started with
    subprocess.run is followed through its exec; each process gets a root
    frame (with --pids: `name [PID]`). Without --subprocesses the child is
    not profiled."""
    python = common.primary_python()
    cmd = [python.path, os.path.join(WORKLOADS, "spawner.py"), "run", 0.5]
    res = _run_cmd(["-F", 199, "--subprocesses", "--pids"], cmd).expect_ok()
    child, done = _lines_with(res, "CHILD"), _lines_with(res, "DONE")
    check(len(child) == 1 and len(done) == 1, "spawner output %r" % res.out[:300])
    child, done = child[0], done[0]
    procs = by_pid(with_roots(res))
    check_stats_invariant(res.stats(), res.where())
    cp = procs.get(child["pid"])
    check(cp is not None, "the child (pid %d) is not in the profile; pids %s %s"
          % (child["pid"], sorted(procs), res.where()))
    check("spawned_child.py" in cp.roots, "child roots %s" % sorted(cp.roots))
    n = cp.samples_in("spawned_child_fn")
    check(n >= 0.5 * child["cpu_s"] * 199, "child: %d samples in spawned_child_fn for %.3f s "
          "of CPU [%s]" % (n, child["cpu_s"], cp.short()))
    parents = [p for p in procs.values() if p.samples_in("parent_before")]
    check(len(parents) == 1 and parents[0].roots == {"spawner.py"},
          "parent_before: %s" % [(p.pid, sorted(p.roots)) for p in parents])
    for p in procs.values():
        if p.pid != child["pid"]:
            check(not p.with_name("spawned_child_fn"), "spawned_child_fn under pid %d" % p.pid)

    # Without --pids: roots are the names alone.
    common.PROCESS_ROOTS[0] = True
    res2 = _run_cmd(["-F", 199, "--subprocesses"], cmd).expect_ok()
    roots = {}
    for s in res2.stacks():
        roots[s.root.raw] = roots.get(s.root.raw, 0) + s.count
    check("spawned_child.py" in roots and "spawner.py" in roots,
          "roots without --pids: %s" % roots)

    # Without --subprocesses: only the command itself, no root frames.
    common.PROCESS_ROOTS[0] = False
    res3 = _run_cmd(["-F", 199], cmd).expect_ok()
    stacks = res3.stacks()
    names = set(n for s in stacks for n in s.names)
    check("parent_before" in names, "parent missing: %s" % fmt_stacks(stacks, 4))
    check("spawned_child_fn" not in names, "child profiled without --subprocesses: %s"
          % fmt_stacks(stacks, 4))


@timeout(60)
def test_command_subprocesses_shell():
    """The command is a shell (not Python) that starts Python: with
    --subprocesses the Python descendants are profiled and the run still
    ends, with status 0, when the shell exits."""
    python = common.pyenv_python("3.12.1")
    # The shell outlives the profiler's last look at it (~1.4 s after exec).
    script = '"$0" "$1" run 0.4; sleep 1.6; true'
    cmd = ["/bin/sh", "-c", script, python.path, os.path.join(WORKLOADS, "spawner.py")]
    res = _run_cmd(["-F", 199, "--subprocesses", "--pids"], cmd).expect_ok()
    child = _lines_with(res, "CHILD")
    check(len(child) == 1, "spawner output %r" % res.out[:300])
    procs = by_pid(with_roots(res))
    check_stats_invariant(res.stats(), res.where())
    names = {}
    for p in procs.values():
        for nm in ("parent_before", "spawned_child_fn"):
            if p.samples_in(nm):
                names.setdefault(nm, []).append(p.pid)
    check(names.get("spawned_child_fn") == [child[0]["pid"]],
          "spawned_child_fn in pids %s, want [%d]" % (names.get("spawned_child_fn"),
                                                       child[0]["pid"]))
    check(len(names.get("parent_before", [])) == 1, "parent_before in %s" % names)
    # -s says the command may be a shell: no warning that it is one.
    check("not a Python process" not in res.err_text, "a warning about the shell: %r %s"
          % (res.err_text[-300:], res.where()))


@timeout(60)
def test_pid_subprocesses_later():
    """-p PID --subprocesses: a child the target starts after the profiler
    (subprocess.run, fork + exec) is followed; the run ends when both have
    exited."""
    w = start_workload(common.pyenv_python("3.11.7"), "spawner.py", "run", 0.5, "--wait")
    prof = start_profiler(w.pid, ["--subprocesses", "--pids", "-F", 199, "-v"], stats=True)
    wait_profiling(prof)
    w.signal(signal.SIGUSR1)
    child = read_tagged(w, "CHILD", 30)
    read_tagged(w, "DONE", 30)
    res = prof.finish(30).expect_ok()
    procs = by_pid(with_roots(res))
    check_stats_invariant(res.stats(), res.where())
    cp = procs.get(child["pid"])
    check(cp is not None, "child %d not in the profile; pids %s %s"
          % (child["pid"], sorted(procs), res.where()))
    check("spawned_child.py" in cp.roots, "child roots %s" % sorted(cp.roots))
    n = cp.samples_in("spawned_child_fn")
    check(n >= 0.5 * child["cpu_s"] * 199, "child: %d samples in spawned_child_fn for %.3f s "
          "of CPU [%s]" % (n, child["cpu_s"], cp.short()))
    pp = procs.get(w.pid)
    check(pp is not None and pp.roots == {"spawner.py"},
          "parent roots %s" % (sorted(pp.roots) if pp else None))


@timeout(30)
def test_command_not_python():
    """-- /bin/sleep 1: nothing to profile. One line says the command is not
    Python; the run ends with it, exit 1 (nothing profiled), and the -o file
    it created is not left behind."""
    res = _run_cmd(["-F", 199], ["/bin/sleep", "1"], timeout_s=20)
    check(res.rc == 1, "profiler %s, want exit 1 %s" % (common.sigdesc(res.rc), res.where()))
    check(not os.path.exists(res.outfile), "the -o file %s was left behind" % res.outfile)
    w = res.err_lines()
    check(len(w) == 1 and re.search(r"not a Python process", w[0]),
          "want one 'not a Python process' line, got %r %s" % (w, res.where()))
    check(0.8 < res.elapsed < 6, "run took %.1f s for `sleep 1`" % res.elapsed)
    st = res.stats()
    check(st["collected"] == 0 and st["processes"] == 0, "stats: %r" % st)


@timeout(30)
def test_command_not_found():
    """-- /nonexistent/cmd: one error line naming the command, exit 1
    (a runtime failure), no profile."""
    res = _run_cmd(["-F", 199], ["/nonexistent/tb-no-such-command"], timeout_s=20)
    errs = warnings(res)
    check(len(errs) == 1 and "/nonexistent/tb-no-such-command" in errs[0],
          "want one line naming the command, got %r" % errs)
    check(res.rc == 1, "profiler %s when the command cannot be run (want exit 1) %s"
          % (common.sigdesc(res.rc), res.where()))


@timeout(60)
def test_command_exec_chain():
    """A wrapper that execs Python later: `-- sh -c 'sleep 0.6; exec python
    cmd_app.py'`. The exec of Python restarts discovery for that pid, so
    early_phase, run first thing, is profiled."""
    python = common.primary_python()
    script = 'sleep 0.6; exec "$0" "$1" 0.3 0.3'
    res = _run_cmd(["-F", 199], ["/bin/sh", "-c", script, python.path,
                                 os.path.join(WORKLOADS, "cmd_app.py")]).expect_ok()
    done = _lines_with(res, "DONE")
    check(len(done) == 1, "cmd_app.py did not run to its end: stdout %r" % res.out[:300])
    stacks = res.stacks()
    check_stats_invariant(res.stats(), res.where())
    early = sum(s.count for s in stacks if "early_phase" in s.names)
    exp = done[0]["early_cpu_s"] * 199
    check(early >= 0.5 * exp, "early_phase: %d samples for %.3f s of CPU (%.0f expected): "
          "Python exec'd 0.6 s after the command started was found late [top: %s]"
          % (early, done[0]["early_cpu_s"], exp, fmt_stacks(stacks, 4)))


@timeout(60)
def test_command_stdout_apart():
    """`tachyon-bpf -- python3 app.py > out.folded`: the command's own stdout
    must not land in the profile; it goes to stderr instead."""
    py = common.primary_python()
    res = run_profiler(None, ["-F", 199, "--", py.path,
                              os.path.join(WORKLOADS, "cmd_app.py"), 0.1, 0.4],
                       timeout=40).expect_ok()
    stacks = common.parse_collapsed(res.out, res.where())   # strict: only stack lines
    check(any("main_phase" in s.names for s in stacks), "main_phase missing [top: %s]"
          % fmt_stacks(stacks, 4))
    check(b"DONE" not in res.out, "the command's output is in the profile: %r" % res.out[:300])
    check(any(l.startswith("DONE {") for l in res.err_lines()),
          "the command's stdout (its DONE line) is not on stderr: %r" % res.err_text[-400:])


@timeout(60)
def test_command_unsupported_python():
    """-- python3.7 ...: one line naming Python 3.7 as too old, exit 1; not
    'not a Python process' as well."""
    py = common.pyenv_python("3.7.16")
    res = _run_cmd(["-F", 199], [py.path, "-c", "import time; time.sleep(1)"], timeout_s=30)
    lines = res.err_lines()
    check(res.rc == 1, "profiler %s, want exit 1 %s" % (common.sigdesc(res.rc), res.where()))
    check(len(lines) == 1 and re.search(r"Python 3\.7\.16 is too old", lines[0]),
          "want one line saying Python 3.7.16 is too old, got %r" % lines)
    check("not a Python" not in res.err_text, "contradictory message: %r" % res.err_text)
