"""--async-aware: asyncio task chains on Debian's real 3.14 and 3.15.

A sample of a thread running a task starts with the chain of tasks awaiting
it, outermost first, each a label `NAME QUALNAME` followed by the frames its
coroutines are suspended in, then the running task's own frames; the event
loop's frames below the running coroutine are gone. The workloads know
their own truth: tests/workloads/async_tree.py (a gather tree, CPU per
task measured by the tasks themselves) and tests/workloads/async_churn.py
(thousands of short tasks whose names encode their parent's, cancellation).
"""
import json
import os
import re
import subprocess

from common import (Interp, art_path, binary, check, check_stats_invariant, fail,
                    run_profiler, speedscope_app, start_workload, timeout,
                    pyenv_python)

LABEL = re.compile(r"^(?P<name>\S+) (?P<coro>[A-Za-z_][\w.<>]*)$")
SEVERAL = re.compile(r"^<awaited by (\d+) tasks: the lowest-address one shown>$")
FRAME = re.compile(r"^(?P<name>.+) \((?P<file>[^()]+):(?P<line>\d+)\)$")
LOOP_FRAMES = ("BaseEventLoop.run_forever", "BaseEventLoop._run_once", "Handle._run",
               "BaseEventLoop.run_until_complete", "Runner.run")


def _sid_pythons():
    pys = [Interp("sid-3.14"), Interp("sid-3.15")]
    missing = [p.path for p in pys if not p.exists()]
    check(not missing, "missing %s: run scripts/real-pythons.sh" % missing)
    return pys


def _parse(data, where):
    """[(frames, count)] with each frame ('label', name, coro) for a task
    label, ('several', n) for the marker of a task awaited by n tasks, or
    ('py', name, line) for a Python frame."""
    out = []
    for line in data.decode().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = []
        for raw in stack.split(";"):
            m = FRAME.match(raw)
            if m:
                frames.append(("py", m["name"], int(m["line"])))
                continue
            m = SEVERAL.match(raw)
            if m:
                frames.append(("several", int(m[1])))
                continue
            m = LABEL.match(raw)
            check(m, "frame %r is neither `name (file:line)` nor a task label %s"
                  % (raw, where))
            frames.append(("label", m["name"], m["coro"]))
        out.append((frames, int(count)))
    return out


def _labels(frames):
    return [(f[1], f[2]) for f in frames if f[0] == "label"]


def _read_tagged(w, tag, secs):
    while True:
        line = w.read_line(secs)
        check(line is not None, "workload %s printed no %s line" % (w.name, tag))
        if line.startswith(tag + " "):
            return line[len(tag) + 1:]


def _task_of(frames):
    """The running task's name of a task stack (the last label)."""
    labels = _labels(frames)
    return labels[-1][0] if labels else None


def _check_tree(py, stacks, truth, where):
    """Shape (who awaits whom), folding of the loop, shares against the truth."""
    counts = {"leaf-x": 0, "leaf-y": 0, "back": 0, "child": 0}
    shapes = {"leaf-x": [("Task-1", "main"), ("front", "front"), ("leaf-x", "spin_x")],
              "leaf-y": [("Task-1", "main"), ("front", "front"), ("leaf-y", "spin_y")],
              "back": [("Task-1", "main"), ("back", "back")]}
    parents_framed = tasks = 0
    shared = {}
    for frames, n in stacks:
        labels = _labels(frames)
        if not labels:
            continue
        tasks += n
        check(frames[0] == ("label", "Task-1", "main"),
              "%s: a task stack does not start at Task-1 main: %s %s" % (py.label, frames, where))
        names = [f[1] for f in frames if f[0] == "py"]
        check(not set(names) & set(LOOP_FRAMES),
              "%s: event loop frames left in a task stack: %s %s" % (py.label, names, where))
        if len(frames) > 1 and frames[1][:2] == ("py", "main"):
            parents_framed += n
        task = labels[-1][0]
        key = "child" if re.match(r"^Task-\d+$", task) and labels[-1][1] == "unnamed_child" \
            else task
        if key == "child":
            check(labels[:-1] == shapes["back"],
                  "%s: the unnamed child's chain is %s %s" % (py.label, labels, where))
        elif key in shapes:
            check(labels == shapes[key], "%s: %s's chain is %s, want %s %s"
                  % (py.label, key, labels, shapes[key], where))
        if key in counts and frames[-1][:2] == ("py", "spin"):
            counts[key] += n
        if key == "shared":
            # two tasks await it: one is shown, always the same one, and said
            check(len(labels) == 3 and labels[1][0] in ("w1", "w2") and
                  ("several", 2) in frames and
                  frames.index(("several", 2)) == frames.index(("label",) + labels[2]) - 1,
                  "%s: the shared task's chain is %s %s" % (py.label, frames, where))
            shared[labels[1][0]] = shared.get(labels[1][0], 0) + n
    check(len(shared) == 1, "%s: the shared task is shown under %s: want one of its "
          "two awaiters, always the same %s" % (py.label, shared, where))
    check(tasks and parents_framed >= 0.8 * tasks,
          "%s: main's own frame under Task-1 main in %d of %d task samples %s"
          % (py.label, parents_framed, tasks, where))
    got_total, want_total = sum(counts.values()), sum(truth[k] for k in counts)
    check(got_total >= 300, "%s: only %d spin samples in tasks: %s %s"
          % (py.label, got_total, counts, where))
    for k in counts:
        got, want = counts[k] / got_total, truth[k] / want_total
        check(abs(got - want) <= 0.05, "%s: task %s has %.1f %% of the samples, measured "
              "%.1f %% of the CPU (%s, truth %s) %s"
              % (py.label, k, 100 * got, 100 * want, counts, truth, where))


def _profile(py, script, args):
    """Run script (12 s: the profiler loads and ends within it) and profile 6 s of it with --async-aware and args;
    (workload, result)."""
    w = start_workload(py, script, 12)
    res = run_profiler(w.pid, ["--async-aware", "-d", 6] + args, timeout=40).expect_ok()
    return w, res


@timeout(120)
def test_async_gather_tree_shares():
    for py in _sid_pythons():
        w, res = _profile(py, "async_tree.py", ["-e", "cpu-clock", "-F", 999])
        truth = json.loads(_read_tagged(w, "TRUTH", 30))
        _check_tree(py, _parse(res.profile_bytes(), res.where()), truth, res.where())


def _parent_of(name):
    """The parent a churn task's name encodes (None: Task-1)."""
    if re.match(r"^p\d$", name):
        return "Task-1"
    return name.split(".", 1)[1]


@timeout(120)
def test_async_churn_parents_and_cancellation():
    for py in _sid_pythons():
        w, res = _profile(py, "async_churn.py", ["-e", "cpu-clock", "-F", 999])
        created = int(_read_tagged(w, "CREATED", 30))
        where = res.where()
        stacks = _parse(res.profile_bytes(), where)
        short = grand = cleanup = 0
        for frames, n in stacks:
            labels = [l[0] for l in _labels(frames)]
            if not labels:
                continue
            # a task awaited by nobody (a victim cancelled before its parent
            # awaits it) is a root of its own; all others hang off Task-1
            check(labels[0] == "Task-1" or re.match(r"^x\d+\.p\d$", labels[0]),
                  "%s: chain %s starts at neither Task-1 nor a lone victim %s"
                  % (py.label, labels, where))
            for parent, task in zip(labels, labels[1:]):
                check(_parent_of(task) == parent, "%s: task %s shown under %s, its parent "
                      "is %s %s" % (py.label, task, parent, _parent_of(task), where))
            if labels[-1][0] in "cg":
                short += n
            if labels[-1][0] == "g":
                grand += n
            if any(f[:2] == ("py", "cleanup") for f in frames):
                cleanup += n
                check(labels[-1][0] == "x" and len(labels) == 3,
                      "%s: cleanup of a cancelled task under %s %s" % (py.label, labels, where))
        check(created >= 5000, "%s: the workload made only %d tasks" % (py.label, created))
        check(short >= 100 and grand >= 5,
              "%s: %d samples in short tasks, %d in grandchildren %s"
              % (py.label, short, grand, where))
        check(cleanup >= 5, "%s: %d samples in a cancelled task's cleanup %s"
              % (py.label, cleanup, where))


@timeout(120)
def test_async_wall_mode_blocking_task():
    """Wall mode: a task blocking its thread (time.sleep in a coroutine) is
    credited to that task, with its chain."""
    for py in _sid_pythons():
        w, res = _profile(py, "async_tree.py", ["-m", "wall", "-F", 250])
        _read_tagged(w, "TRUTH", 30)
        stacks = _parse(res.profile_bytes(), res.where())
        every = sum(n for _, n in stacks)
        nap = sum(n for frames, n in stacks
                  if _labels(frames) == [("Task-1", "main"), ("napper", "napper")] and
                  frames[-1][:2] == ("py", "napper"))
        # the napper sleeps 1 ms of each round of the loop (about 8 ms of CPU)
        check(every and nap >= 0.05 * every,
              "%s: the napper's time.sleep has %d of %d wall samples %s"
              % (py.label, nap, every, res.where()))


@timeout(120)
def test_async_formats_and_names():
    """Task labels reach every writer: speedscope frame names, pprof
    strings, the summary's functions."""
    py = _sid_pythons()[0]
    w = start_workload(py, "async_tree.py", 6)
    out = art_path("async.speedscope.json")
    run_profiler(w.pid, ["--async-aware", "-F", 250, "-d", 3], outfile=out,
                 timeout=40).expect_ok()
    with open(out) as f:
        names = {fr["name"] for fr in json.load(f)["shared"]["frames"]}
    for want in ("Task-1 main", "front front", "leaf-x spin_x", "back back"):
        check(want in names, "speedscope: no frame %r in %s" % (want, sorted(names)[:40]))
    check(any(re.match(r"^Task-\d+ unnamed_child$", n) for n in names),
          "speedscope: no auto-named task label in %s" % sorted(names)[:40])


@timeout(60)
def test_async_refused_before_314():
    py = pyenv_python("3.13.0")
    check(py.exists(), "pyenv 3.13.0 is missing")
    w = start_workload(py, "async_tree.py", 6)
    res = run_profiler(w.pid, ["--async-aware", "-d", 2], timeout=30)
    lines = res.err_lines()
    check(res.rc == 1 and len(lines) == 1 and "3.14 and 3.15" in lines[0] and
          "3.13.0" in lines[0] and lines[0].startswith("tachyon-bpf: "),
          "--async-aware on 3.13: want exit 1 and one line naming the versions %s"
          % res.where())
    check(not res.out, "--async-aware on 3.13 wrote a profile %s" % res.where())
    check(w.alive(), "the target did not survive the refusal")
    os.kill(w.pid, 9)


@timeout(120)
def test_dump_async_tree():
    """dump --async: the thread's tasks as a tree, each task with the frames
    its coroutines are suspended in."""
    from common import binary
    import subprocess
    for py in _sid_pythons():
        w = start_workload(py, "async_tree.py", 8)
        out = subprocess.run([binary(), "dump", "-p", str(w.pid), "--async"],
                             capture_output=True, timeout=30)
        text = out.stdout.decode()
        where = "[dump --async rc %d: %s; stderr %s]" % (out.returncode, text[-1500:],
                                                         out.stderr.decode()[:300])
        check(out.returncode == 0 and "asyncio tasks (" in text, "no task list %s" % where)
        tree = [(len(l) - len(l.lstrip()), l.strip().split(" (")[0])
                for l in text.split("asyncio tasks (", 1)[1].splitlines()[1:]
                if l.strip() and not l.strip().startswith("File ")]
        depth = {name: d for d, name in tree}
        for name in ("Task-1", "front", "back", "napper", "leaf-x", "leaf-y"):
            check(name in depth, "%s: task %s not listed %s" % (py.label, name, where))
        check(depth["front"] == depth["back"] == depth["napper"] == depth["Task-1"] + 2 and
              depth["leaf-x"] == depth["leaf-y"] == depth["front"] + 2,
              "%s: the tree's shape is wrong: %s %s" % (py.label, tree, where))
        check('in main\n' in text and 'in front\n' in text,
              "%s: suspended frames of main/front missing %s" % (py.label, where))
        w.stop()


def _waits_chain(labels):
    """The chain a task of async_waits.py must have, by its own label."""
    main = ("Task-1", "main")
    name, coro = labels[-1]
    if coro == "kid":	# "k<j>.p<i>": under its own parent, a root
        return [("p" + name.split(".p", 1)[1], "parent"), (name, "kid")]
    if coro in ("handle", "parent"):	# awaited by nobody
        return [(name, coro)]
    if name in ("w1", "w2"):
        return [main, ("group", "group"), (name, "waiter")]
    return [main, (name, name)]


def _check_waits(py, stacks, truth, full, where):
    """stacks: [(frames as _parse gives them, periods)] of async_waits.py
    in wall mode. Every task under its own chain; each long-lived waiting
    task close to the run's wall time (`full` periods); the reader's split
    between its two awaits as its own clock says."""
    per, sites, kids = {}, {"recv": 0, "nap": 0}, 0
    for frames, n in stacks:
        labels = _labels(frames)
        if not labels:
            continue
        check(labels == _waits_chain(labels), "%s: task %s shown under %s, want %s %s"
              % (py.label, labels[-1], labels, _waits_chain(labels), where))
        name, coro = labels[-1]
        if coro == "kid":
            kids += n
            continue
        key = "handle" if coro == "handle" else name
        per.setdefault(key, []).append(n)
        names = [f[1] for f in frames if f[0] == "py"]
        if name == "reader":
            sites["nap" if "nap" in names else "recv"] += n
    for key in ("sleeper", "reader", "w1", "w2", "spawner"):
        got = sum(per.get(key, []))
        # each waiting task gets each interval whole: close to the
        # run's wall time (not 1/N of it), never more
        check(0.5 * full <= got <= 1.1 * full, "%s: task %s has %d wall samples, want "
              "about %d (it waits all the time) %s" % (py.label, key, got, full, where))
    handlers = sum(per.get("handle", []))
    check(1.0 * full <= handlers <= 2.2 * full,
          "%s: the two connection handlers have %d wall samples, want about %d %s"
          % (py.label, handlers, 2 * full, where))
    check(kids >= 0.3 * full, "%s: only %d samples in the short-lived children %s"
          % (py.label, kids, where))
    got = sites["recv"] / max(1, sites["recv"] + sites["nap"])
    want = truth["recv"] / (truth["recv"] + truth["nap"])
    check(abs(got - want) <= 0.07, "%s: the reader waits in sock_recv for %.1f %% of its "
          "samples, %.1f %% of its own time (%s, truth %s) %s"
          % (py.label, 100 * got, 100 * want, sites, truth, where))


@timeout(120)
def test_async_wall_waiting_tasks():
    """Wall mode: while the event loop waits in select, every task waiting
    then gets the whole interval, under its own chain: a task's count is its
    own wait time (the reader's split between its two awaits matches its own
    clock), and children that come and go show under their own parent."""
    rate, secs = 250, 4
    for py in _sid_pythons():
        w = start_workload(py, "async_waits.py", 6.5)
        res = run_profiler(w.pid, ["--async-aware", "-m", "wall", "-F", rate, "-d", secs],
                           timeout=40, stats=True).expect_ok()
        truth = json.loads(_read_tagged(w, "TRUTH", 30))
        where = res.where()
        # an interval written once per waiting task: each copy collected
        check_stats_invariant(res.stats(), where)
        _check_waits(py, _parse(res.profile_bytes(), where), truth, rate * secs, where)
        w.stop()


def _speedscope_frame(f):
    """A speedscope frame as _parse gives it (a marker: ('marker', name))."""
    if "file" in f:
        return ("py", f["name"], f.get("line", 0))
    m = SEVERAL.match(f["name"])
    if m:
        return ("several", int(m[1]))
    m = LABEL.match(f["name"])
    return ("label", m["name"], m["coro"]) if m else ("marker", f["name"])


# "pid N script (Python V) THREAD: TASK (waiting) (tid N)", a task's own
# lane, or "... THREAD: waiting tasks (K) (tid N)", one the others share
LANE = re.compile(r"\) (\S.*(?:\(waiting\)|: waiting tasks \(\d+\))) \(tid \d+\)$")


def _lanes(doc, rate, py, where):
    """{profile name: [(frames, periods)]} of a --timeline speedscope file;
    each waiting task's own lane holds that task alone."""
    frames = [_speedscope_frame(f) for f in doc["shared"]["frames"]]
    out = {}
    for p in doc["profiles"]:
        rows = [([frames[i] for i in s], wt * rate) for s, wt in zip(p["samples"], p["weights"])]
        out[p["name"]] = rows
        if "(waiting)" not in p["name"]:
            continue
        for fr, _ in rows:
            labels = _labels(fr)
            check(labels and "%s %s (waiting)" % labels[-1] in p["name"],
                  "%s: lane %r holds a sample of %s %s" % (py.label, p["name"], labels, where))
    return out


def _check_tracks(py, gecko, trace, lanes, rate, where):
    """Gecko and Chrome trace: one track per lane, times in order on each
    (in gecko: intervals on one lane never overlap); gecko's samples per
    lane are speedscope's periods."""
    waiting = {}
    for name, rows in lanes.items():
        m = LANE.search(name)
        if m:
            waiting[m[1]] = waiting.get(m[1], 0) + round(sum(n for _, n in rows))
    got = {}
    for th in gecko["threads"]:
        cols = th["samples"]["schema"]
        data = th["samples"]["data"]
        times = [d[cols["time"]] for d in data]
        check(times == sorted(times), "%s: gecko thread %r: sample times out of order %s"
              % (py.label, th["name"], where))
        if "waiting" in th["name"]:
            got[th["name"]] = got.get(th["name"], 0) + sum(
                1 for d in data if d[cols["stack"]] is not None)
    check(got == waiting, "%s: gecko's waiting lanes %s, speedscope's %s %s"
          % (py.label, sorted(got.items())[:8], sorted(waiting.items())[:8], where))
    open_, last = {}, {}
    for ev in trace:
        if ev["ph"] not in "BE":
            continue
        key = (ev["pid"], ev["tid"])
        check(ev["ts"] >= last.get(key, 0), "%s: trace track %s goes back in time %s"
              % (py.label, key, where))
        last[key] = ev["ts"]
        open_[key] = open_.get(key, 0) + (1 if ev["ph"] == "B" else -1)
    check(not any(open_.values()), "%s: trace tracks left open: %s %s"
          % (py.label, {k: v for k, v in open_.items() if v}, where))
    check(len(last) >= len(waiting) > 6, "%s: %d trace tracks for %d waiting lanes %s"
          % (py.label, len(last), len(waiting), where))
    # the tasks that waited longest have lanes of their own, at most 31 a
    # thread; the short-lived children share a few (a dozen tasks at once)
    own = [n for n in waiting if n.endswith("(waiting)")]
    check(len(own) <= 31 and len(waiting) - len(own) <= 12,
          "%s: %d lanes of a task's own, %d shared: %s %s"
          % (py.label, len(own), len(waiting) - len(own), sorted(waiting)[:40], where))


@timeout(150)
def test_async_wall_timeline():
    """--timeline (gecko, speedscope, Chrome trace): each task waiting while
    the loop is off CPU gets the interval on a lane of its own, under its
    own chain, with the same shares as the counted profile; the stats
    invariant holds; the .tby recording replays into the same lanes;
    speedscope's app opens the file."""
    rate, secs = 250, 4
    for k, py in enumerate(_sid_pythons()):
        w = start_workload(py, "async_waits.py", 6.5)
        out, gecko, trace, tby, again = (
            art_path("async_wall.%s" % e) for e in
            ("speedscope.json", "gecko.json", "trace.json", "tby", "replayed.speedscope.json"))
        res = run_profiler(w.pid, ["--async-aware", "-m", "wall", "-F", rate, "-d", secs,
                                   "-o", gecko, "-o", trace, "-o", tby], outfile=out,
                           timeout=40, stats=True).expect_ok()
        truth = json.loads(_read_tagged(w, "TRUTH", 30))
        where = res.where()
        check_stats_invariant(res.stats(), where)
        with open(out) as f:
            lanes = _lanes(json.load(f), rate, py, where)
        _check_waits(py, [row for rows in lanes.values() for row in rows], truth,
                     rate * secs, where)
        with open(gecko) as g, open(trace) as t:
            _check_tracks(py, json.load(g), json.load(t), lanes, rate, where)
        rep = subprocess.run([binary(), "replay", tby, "-o", again], capture_output=True)
        with open(out, "rb") as a, open(again, "rb") as b:
            check(rep.returncode == 0 and a.read() == b.read(),
                  "%s: the .tby replays into another speedscope file (exit %d: %s) %s"
                  % (py.label, rep.returncode, rep.stderr[-300:], where))
        w.stop()
        if k:
            continue
        imported, _, console, _ = speedscope_app(out)
        check(imported and "speedscope json" in imported,
              "speedscope imported it as %r %s" % (imported, where))
        bad = [ln for ln in console if re.search(r"Uncaught|[Ee]rror|Cannot", ln)
               and "WebGL" not in ln]
        check(not bad, "speedscope logged errors: %s %s" % (bad[:3], where))
