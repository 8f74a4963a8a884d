"""--opcodes: the bytecode instruction a frame was executing.

tests/workloads/opcodes.py spends its time on one line of three small-int
additions (`x = i + i + i + i`), which 3.11 to 3.15 all specialise to
BINARY_OP_ADD_INT. With --opcodes the leaf frame's label ends in
` [INSTRUCTION]`, and that line's samples must be mostly BINARY_OP_ADD_INT
(measured: 64 to 78 %; checked at 40 %), named as the interpreter names its
specialised instructions. With --opcodes=all the callers carry theirs too
(a CALL, or its specialisations). svg boxes and titles, speedscope frame
names, pprof's `opcode` sample label and the summary's instruction rows carry
it too. Without the option no label has one.

3.8 to 3.10 do not specialise: the additions are BINARY_ADD and the calls
CALL_FUNCTION, read from co_code at f_lasti (an EXTENDED_ARG prefix named
after the instruction it extends).
"""
import gzip
import json
import re
import xml.etree.ElementTree as ET

from common import (art_path, check, primary_python, run_profiler, start_workload, timeout,
                    one_build_per_version)
from test_formats import SVG_NS, _decode_pprof, pprof_labels
from common import old_python_too

ARGS = ["-F", 499, "-d", 3]
# `name (file:line) [OP]`, the form the README documents
LABEL = re.compile(r"^(?P<name>.*) \((?P<file>[^()]*):(?P<line>\d+)\)"
                   r"(?: \[(?P<op>[A-Z][A-Z0-9_]*|<op \d+>)\])?$")
HOT_SHARE = 0.40


def _add_op(python):
    """The instruction of a small-int addition on this interpreter."""
    return "BINARY_OP_ADD_INT" if python.version_tuple() >= (3, 11) else "BINARY_ADD"


def _stacks(data, where):
    """[(frames, count)] of collapsed output, each frame (name, line, op)."""
    out = []
    for line in data.decode().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = []
        for raw in stack.split(";"):
            m = LABEL.match(raw)
            check(m or "(" not in raw, "frame %r is not `name (file:line) [OP]` %s"
                  % (raw, where))
            if m:
                frames.append((m["name"], int(m["line"]), m["op"]))
        out.append((frames, int(count)))
    return out


def _hot_ops(stacks, hot):
    """Samples per instruction of the hot line, as the leaf."""
    ops = {}
    for frames, n in stacks:
        if frames and frames[-1][:2] == ("add_loop", hot):
            ops[frames[-1][2]] = ops.get(frames[-1][2], 0) + n
    return ops


def _caller_ops(stacks):
    """Instructions of main where it calls add_loop (as the leaf main runs
    its own code)."""
    return {frames[i][2] for frames, _ in stacks for i in range(len(frames) - 1)
            if frames[i][0] == "main" and frames[i + 1][0] == "add_loop"}


@old_python_too
@timeout(120)
@one_build_per_version
def test_opcodes_hot_add(python):
    w = start_workload(python, "opcodes.py", 60)
    res = run_profiler(w.pid, ARGS + ["--opcodes=all"], timeout=30).expect_ok()
    stacks = _stacks(res.profile_bytes(), res.where())
    ops = _hot_ops(stacks, w.info["hot"])
    hot = sum(ops.values())
    check(hot >= 200, "too few samples on the hot line: %s %s" % (ops, res.where()))
    check(None not in ops, "a leaf sample of the hot line has no instruction: %s %s"
          % (ops, res.where()))
    top, want = max(ops, key=ops.get), _add_op(python)
    check(top == want and ops[top] >= HOT_SHARE * hot,
          "the hot line's instructions %s: want %s first with at least "
          "%d %% %s" % (ops, want, HOT_SHARE * 100, res.where()))
    check(not any(op and op.startswith("<op") for op in ops),
          "an instruction without a name: %s %s" % (ops, res.where()))
    # a caller's index (3.11/3.12: the last cache unit of its CALL) names the call
    mains = _caller_ops(stacks)
    check(mains and all(op and op.startswith("CALL") for op in mains),
          "--opcodes=all: main's instructions %s, want CALL* %s" % (mains, res.where()))


@timeout(150)
def test_opcodes_leaf_and_formats():
    python = primary_python()
    w = start_workload(python, "opcodes.py", 90)
    res = run_profiler(w.pid, ARGS + ["--opcodes"], timeout=30).expect_ok()
    stacks = _stacks(res.profile_bytes(), res.where())
    check(_hot_ops(stacks, w.info["hot"]).get("BINARY_OP_ADD_INT"),
          "--opcodes: no BINARY_OP_ADD_INT leaf %s" % res.where())
    callers = [f for frames, _ in stacks for f in frames[:-1] if f[2]]
    check(not callers, "without =all a caller has an instruction: %s %s"
          % (callers[:4], res.where()))
    # svg: a box per instruction, titled like the collapsed label
    out = art_path("opcodes.svg")
    res = run_profiler(w.pid, ARGS + ["--opcodes"], timeout=30, outfile=out).expect_ok()
    titles = [t.text.split("\n")[0] for t in ET.parse(out).getroot().iter(SVG_NS + "title")]
    want = "add_loop (opcodes.py:%d) [BINARY_OP_ADD_INT]" % w.info["hot"]
    check(want in titles, "svg: no box %r among %s" % (want, titles[:12]))
    # speedscope: the instruction is part of the frame's name
    out = art_path("opcodes.json")
    res = run_profiler(w.pid, ARGS + ["--opcodes"], timeout=30, outfile=out).expect_ok()
    with open(out) as f:
        frames = json.load(f)["shared"]["frames"]
    got = [fr for fr in frames if fr["name"] == "add_loop [BINARY_OP_ADD_INT]"]
    check(got and got[0].get("line") == w.info["hot"],
          "speedscope: no frame 'add_loop [BINARY_OP_ADD_INT]' at the hot line: %s"
          % [fr["name"] for fr in frames][:12])
    # pprof: the leaf's instruction as the sample label `opcode`
    out = art_path("opcodes.pb.gz")
    res = run_profiler(w.pid, ARGS + ["--opcodes"], timeout=30, outfile=out).expect_ok()
    with open(out, "rb") as f:
        prof = _decode_pprof(gzip.decompress(f.read()))
    ops = [pprof_labels(prof, s).get("opcode") for s in prof["samples"]]
    check("BINARY_OP_ADD_INT" in ops, "pprof: no sample labelled opcode=BINARY_OP_ADD_INT: %s"
          % sorted(set(map(str, ops)))[:12])
    # summary: the hottest instructions after the functions
    res = run_profiler(w.pid, ARGS + ["--opcodes", "-f", "summary"], timeout=30).expect_ok()
    text = res.profile_bytes().decode()
    want = "BINARY_OP_ADD_INT  add_loop (opcodes.py:%d)" % w.info["hot"]
    check(want in text, "summary: no row %r %s\n%s" % (want, res.where(), text[-800:]))
    # without the option: no instruction anywhere
    res = run_profiler(w.pid, ARGS, timeout=30).expect_ok()
    plain = res.profile_bytes().decode()
    check("[BINARY_OP" not in plain and "[CALL" not in plain,
          "without --opcodes a label has an instruction %s" % res.where())
