"""dump --locals and dump --json (issue 16).

The workload (written into the artifact directory) parks its main thread in
`target(a, b, *args, key=None, **kw)` with one local of each kind the repr
knows (str, bytes, int, float, bool, None, list, tuple, dict, set, a cell
variable, an instance, an int too big for 64 bits) and one not bound yet.
--locals must show the arguments and the bound locals with Python's repr (or
the type and length of containers) for every interpreter; --json must have
py-spy's shape.
"""
import json
import re
import subprocess

import test_dump
from common import art_path, binary, check, timeout
from common import old_python_too

WORKLOAD = r'''
import os, threading, time

class Foo:
    pass

def target(a, b, *args, key=None, **kw):
    s = "h\u00e9llo 'q'"
    by = b"\x00ab"
    i = -12345678901
    big = 2 ** 100
    f = 1.5
    t = True
    n = None
    lst = [1, 2, 3]
    tup = (1,)
    d = {"x": 1, "y": 2}
    st = {1, 2, 3, 4}
    obj = Foo()
    def inner():
        return s
    print('READY {"pid": %d, "ident": %d}' % (os.getpid(), threading.get_ident()), flush=True)
    time.sleep(120)  # DUMP sleep
    later = 1  # unbound while dumped: 3.14+ keep a tagged NULL in its slot
    return later

target(7, "bee", 1, 2, key="k", extra=3.25)  # DUMP module
'''

ARGS = {"a": "7", "b": "'bee'", "args": "<tuple, len 2>", "key": "'k'", "kw": "<dict, len 1>"}
LOCALS = {"s": "\"h\u00e9llo 'q'\"", "by": r"b'\x00ab'", "i": "-12345678901", "f": "1.5",
          "t": "True", "n": "None", "lst": "<list, len 3>", "tup": "<tuple, len 1>",
          "d": "<dict, len 2>", "st": "<set, len 4>"}
PATTERNS = {"obj": r"^<Foo at 0x[0-9a-f]+>$", "big": r"^<int at 0x[0-9a-f]+>$",
            "inner": r"^<function at 0x[0-9a-f]+>$"}


def _workload(python):
    return test_dump._workload(python, WORKLOAD, "dump_locals.py")


def _dump(args):
    p = subprocess.run([binary(), "dump"] + [str(a) for a in args], capture_output=True,
                       timeout=20)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    where = "[dump %s: rc %d; stderr: %s; stdout: %s]" % (
        " ".join(map(str, args)), p.returncode, err.strip()[:300], out[:1500].replace("\n", " | "))
    check(p.returncode == 0 and err == "", "dump failed %s" % where)
    return out, where


def _check_vars(args, locs, where):
    for name, want in ARGS.items():
        check(args.get(name) == want, "argument %s shown as %r, want %r %s"
              % (name, args.get(name), want, where))
    for name, want in LOCALS.items():
        check(locs.get(name) == want, "local %s shown as %r, want %r %s"
              % (name, locs.get(name), want, where))
    for name, pat in PATTERNS.items():
        check(re.match(pat, locs.get(name) or ""), "local %s shown as %r, want /%s/ %s"
              % (name, locs.get(name), pat, where))
    extra = set(args) - set(ARGS)
    check(not extra, "arguments that are locals: %s %s" % (sorted(extra), where))
    check("later" not in locs, "unbound local shown as %r %s" % (locs.get("later"), where))


@old_python_too
@timeout(60)
def test_dump_locals(python):
    w, L = _workload(python)
    out, where = _dump(["--locals", "-p", w.pid])
    lines = out.split("\n")
    start = [i for i, l in enumerate(lines)
             if re.match(r'^  File ".*dump_locals\.py", line %d, in target$' % L["sleep"], l)]
    check(len(start) == 1, "no `File ... line %d, in target` frame %s" % (L["sleep"], where))
    args, locs, cur = {}, {}, None
    for l in lines[start[0] + 1:]:
        if l.startswith("  File ") or not l:
            break
        if l.strip() in ("Arguments:", "Locals:"):
            cur = args if l.strip() == "Arguments:" else locs
            continue
        m = re.match(r"^          (\w+): (.*)$", l)
        check(m and cur is not None, "unexpected line under the frame: %r %s" % (l, where))
        cur[m.group(1)] = m.group(2)
    _check_vars(args, locs, where)


@timeout(60)
def test_dump_json(python):
    w, L = _workload(python)
    out, where = _dump(["--json", "--locals", "-p", w.pid])
    try:
        doc = json.loads(out)
    except ValueError as e:
        check(False, "dump --json is not JSON (%s) %s" % (e, where))
    check(isinstance(doc, list) and len(doc) == 1, "want an array of 1 thread %s" % where)
    th = doc[0]
    check(set(th) >= {"thread_id", "os_thread_id", "thread_name", "active", "owns_gil",
                      "frames"}, "thread keys %s %s" % (sorted(th), where))
    check(th["os_thread_id"] == w.pid and th["thread_id"] == w.info["ident"] and
          th["thread_name"] == "MainThread" and th["active"] is False,
          "thread %r: want os_thread_id %d, thread_id %d (threading.get_ident()), "
          "thread_name MainThread, active false %s"
          % (dict((k, v) for k, v in th.items() if k != "frames"), w.pid, w.info["ident"], where))
    check(isinstance(th["owns_gil"], bool), "owns_gil %r" % th["owns_gil"])
    fr = th["frames"]
    got = [(f["name"], f["short_filename"], f["line"]) for f in fr]
    check(got == [("target", "dump_locals.py", L["sleep"]),
                  ("<module>", "dump_locals.py", L["module"])],
          "frames (innermost first) %s %s" % (got, where))
    for f in fr:
        check(set(f) >= {"name", "filename", "module", "short_filename", "line", "locals"},
              "frame keys %s" % sorted(f))
        check(f["filename"] == art_path("dump_locals.py"), "filename %r" % f["filename"])
    loc = fr[0]["locals"]
    check(isinstance(loc, list), "locals %r" % loc)
    for v in loc:
        check(set(v) == {"name", "addr", "arg", "repr"} and isinstance(v["addr"], int),
              "local %r" % v)
    _check_vars(dict((v["name"], v["repr"]) for v in loc if v["arg"]),
                dict((v["name"], v["repr"]) for v in loc if not v["arg"]), where)
    out, where = _dump(["--json", "-p", w.pid])
    doc = json.loads(out)
    check(all(f["locals"] is None for f in doc[0]["frames"]),
          "without --locals, locals should be null %s" % where)
