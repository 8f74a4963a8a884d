"""Deterministic CPU-bound workload with a fixed call graph, instrumented.

usage: callgraph.py TRUTH_JSON [--unit N] [--max-seconds S]

Call graph (qualnames):
    <module> -> main -> phase_a            -> leaf_heavy, leaf_light
                     -> Pipeline.stage     -> leaf_medium, leaf_tiny
                     -> phase_nested       -> phase_nested.<locals>.inner
                                                 -> leaf_mid, leaf_heavy
Leaf weights per cycle (units): heavy 40 (25 + 15), medium 25, mid 20,
light 10, tiny 5. Each leaf is one single-line loop marked `# HOT <name>`.

It measures the CPU time of every leaf call with time.thread_time_ns (no
extra Python frames: the timing is inline in the caller) and, once stopped
(SIGUSR1 or --max-seconds), writes the ground truth to TRUTH_JSON:
  leaf_share   {leaf: leaf CPU time / thread CPU time of the main loop}
  edges        static caller->callee edges, derived from this file's AST
  call_lines   {"caller->callee": [line of each call site]}
  hot_lines    {leaf: line of its `# HOT` loop}
Prints `READY {"pid": N}` on stdout after the first (warm-up) cycle.
Python 3.8+ syntax; qualnames as CPython 3.11+ reports them, bare names (co_name)
before 3.11, as the profiler shows them there.
"""
import ast
import json
import os
import re
import signal
import sys
import time

tt = time.thread_time_ns
T = {"leaf_heavy": 0, "leaf_medium": 0, "leaf_mid": 0, "leaf_light": 0, "leaf_tiny": 0}
STOP = []


def leaf_heavy(n):
    acc = 1
    for i in range(n): acc = (acc * 1103515245 + i) & 0xFFFFFFF  # HOT leaf_heavy
    return acc


def leaf_medium(n):
    acc = 2
    for i in range(n): acc = (acc * 1103515245 + i) & 0xFFFFFFF  # HOT leaf_medium
    return acc


def leaf_mid(n):
    acc = 3
    for i in range(n): acc = (acc * 1103515245 + i) & 0xFFFFFFF  # HOT leaf_mid
    return acc


def leaf_light(n):
    acc = 4
    for i in range(n): acc = (acc * 1103515245 + i) & 0xFFFFFFF  # HOT leaf_light
    return acc


def leaf_tiny(n):
    acc = 5
    for i in range(n): acc = (acc * 1103515245 + i) & 0xFFFFFFF  # HOT leaf_tiny
    return acc


def phase_a(unit):
    t0 = tt(); leaf_heavy(25 * unit); T["leaf_heavy"] += tt() - t0
    t0 = tt(); leaf_light(10 * unit); T["leaf_light"] += tt() - t0


class Pipeline:
    def stage(self, unit):
        t0 = tt(); leaf_medium(25 * unit); T["leaf_medium"] += tt() - t0
        t0 = tt(); leaf_tiny(5 * unit); T["leaf_tiny"] += tt() - t0


def phase_nested(unit):
    def inner(k):
        t0 = tt(); leaf_mid(20 * k); T["leaf_mid"] += tt() - t0
        t0 = tt(); leaf_heavy(15 * k); T["leaf_heavy"] += tt() - t0
    inner(unit)


def main(truth_path, unit, max_seconds):
    pipeline = Pipeline()
    start = tt()
    phase_a(unit); pipeline.stage(unit); phase_nested(unit)
    sys.stdout.write('READY {"pid": %d}\n' % os.getpid()); sys.stdout.flush()
    deadline = time.monotonic() + max_seconds
    cycles = 1
    while not STOP and time.monotonic() < deadline:
        phase_a(unit)
        pipeline.stage(unit)
        phase_nested(unit)
        cycles += 1
    total_ns = tt() - start
    write_truth(truth_path, unit, cycles, total_ns)


def static_graph(path):
    """Caller->callee edges between functions of this file, with call lines."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    tree = ast.parse(src)
    defs = {}      # simple name -> qualname (names are unique in this file)

    def collect(node, prefix):
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)):
                q = prefix + ch.name
                # What the profiler shows: co_qualname from 3.11, co_name before.
                defs[ch.name] = q if sys.version_info >= (3, 11) else ch.name
                collect(ch, q + ".<locals>.")
            elif isinstance(ch, ast.ClassDef):
                collect(ch, prefix + ch.name + ".")
            else:
                collect(ch, prefix)
    collect(tree, "")
    edges = {}

    def calls(node, owner):
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)):
                calls(ch, defs[ch.name])
                continue
            if isinstance(ch, ast.ClassDef):
                calls(ch, owner)
                continue
            if isinstance(ch, ast.Call):
                fn = ch.func
                name = fn.id if isinstance(fn, ast.Name) else (
                    fn.attr if isinstance(fn, ast.Attribute) else None)
                if name in defs and owner != "<class>":
                    edges.setdefault((owner, defs[name]), set()).add(ch.lineno)
            calls(ch, owner)
    calls(tree, "<module>")
    hot = {}
    for i, line in enumerate(src.split("\n"), 1):
        m = re.match(r"^\s+for .*#\s*HOT\s+(\w+)\s*$", line)
        if m:
            hot[m.group(1)] = i
    return edges, hot


def write_truth(path, unit, cycles, total_ns):
    edges, hot = static_graph(os.path.abspath(__file__))
    keep = {}
    for (a, b), lines in edges.items():
        if a in ("static_graph", "write_truth", "static_graph.<locals>.collect",
                 "static_graph.<locals>.calls") or b in ("static_graph", "write_truth"):
            continue
        keep[(a, b)] = lines
    leaf_ns = dict(T)
    truth = {
        "pid": os.getpid(),
        "python": "%d.%d.%d" % sys.version_info[:3],
        "file": os.path.basename(__file__),
        "unit": unit,
        "cycles": cycles,
        "total_ns": total_ns,
        "leaf_ns": leaf_ns,
        "leaf_share": {k: v / total_ns for k, v in leaf_ns.items()},
        "edges": sorted([a, b] for (a, b) in keep),
        "call_lines": {"%s->%s" % (a, b): sorted(l) for (a, b), l in keep.items()},
        "hot_lines": hot,
    }
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
    os.rename(tmp, path)


def _on_usr1(signum, frame):
    STOP.append(1)


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, _on_usr1)
    args = sys.argv[1:]
    truth = args[0]
    unit = int(args[args.index("--unit") + 1]) if "--unit" in args else 10000
    max_s = float(args[args.index("--max-seconds") + 1]) if "--max-seconds" in args else 30.0
    main(truth, unit, max_s)
