#!/usr/bin/env python3
"""Integration test runner for tachyon-bpf (stdlib only, no pytest).

Discovers every `test_*` function in tests/integration/test_*.py. A test that
takes a `python` argument runs once per interpreter of common.pythons_for()
(TB_TEST_PYTHONS) and is named `test_x[3.13.0]`. Each test runs in its own
child process (own session, per-test timeout; its process group is killed
afterwards, so no workload or profiler outlives it).

usage: run.py [-v] [-l] [-k] [-t SECONDS] [FILTER ...]
  FILTER       run only tests whose name contains one of these substrings
  -l           list the tests and exit
  -v           on failure, also print the traceback and the artifact directory
  -k           keep the artifact directory even when every test passed
  -t SECONDS   override every test's timeout

Prints `ok NAME` or `FAIL NAME: reason` per test and ends with the line
`N passed, M failed`; exits 1 if any test failed.
"""

import importlib
import inspect
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402

DEFAULT_TIMEOUT = 60


def discover():
    tests = []
    names = set()
    for fname in sorted(os.listdir(HERE)):
        if not (fname.startswith("test_") and fname.endswith(".py")):
            continue
        mod = importlib.import_module(fname[:-3])
        fns = [(getattr(fn, "__code__").co_firstlineno, name, fn)
               for name, fn in vars(mod).items()
               if name.startswith("test_") and inspect.isfunction(fn)
               and fn.__module__ == mod.__name__]
        for _, name, fn in sorted(fns):
            params = inspect.signature(fn).parameters
            if "python" in params:
                variants = [(name + "[" + py.label + "]", py) for py in common.pythons_for(fn)]
            else:
                variants = [(name, None)]
            for tname, py in variants:
                if tname in names:
                    raise SystemExit("duplicate test name %s" % tname)
                names.add(tname)
                tests.append({"name": tname, "module": mod.__name__, "func": name,
                              "python": py.spec if py else None,
                              "timeout": getattr(fn, "tb_timeout", DEFAULT_TIMEOUT)})
    return tests


def child(spec_json, result_path):
    """Run one test in this process; write {"ok":..., "reason":..., "tb":...}."""
    spec = json.loads(spec_json)
    res = {"ok": False, "reason": "", "tb": ""}
    signal.signal(signal.SIGTERM, lambda *a: sys.exit("terminated"))
    try:
        mod = importlib.import_module(spec["module"])
        fn = getattr(mod, spec["func"])
        kwargs = {}
        if spec["python"] is not None:
            py = common.Interp(spec["python"])
            if not py.exists():
                raise common.TestFailure("interpreter %s is missing (listed in "
                                         "TB_TEST_PYTHONS/DEFAULT_PYTHONS)" % py.path)
            kwargs["python"] = py
        fn(**kwargs)
        res["ok"] = True
    except AssertionError as e:
        res["reason"] = str(e) or "assertion failed"
        res["tb"] = traceback.format_exc()
    except BaseException as e:  # noqa: B902 - report everything, incl. SystemExit
        res["reason"] = "%s: %s" % (type(e).__name__, e)
        res["tb"] = traceback.format_exc()
    finally:
        try:
            common.cleanup()
        except Exception:
            pass
        with open(result_path, "w") as f:
            json.dump(res, f)
    return 0 if res["ok"] else 1


def killpg(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def run_one(t, artroot, tmo_override, verbose):
    art = os.path.join(artroot, common._safe(t["name"]))
    os.makedirs(art, exist_ok=True)
    result_path = os.path.join(art, "result.json")
    env = dict(os.environ, TB_TEST_ARTIFACTS=art)
    tmo = tmo_override or t["timeout"]
    with open(os.path.join(art, "test.log"), "wb") as log:
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child",
                              json.dumps(t), result_path],
                             stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                             env=env, start_new_session=True,
                             preexec_fn=common._child_setup)
        t0 = time.monotonic()
        try:
            p.wait(timeout=tmo)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(p.pid, signal.SIGTERM)   # let it clean up
                p.wait(timeout=3)
            except (OSError, subprocess.TimeoutExpired):
                pass
        except KeyboardInterrupt:
            killpg(p.pid)
            p.wait()
            raise
        finally:
            killpg(p.pid)      # whatever the test started and left behind
            if p.poll() is None:
                p.wait()
    dt = time.monotonic() - t0
    if timed_out:
        return False, "timed out after %ds (artifacts: %s)" % (tmo, art), "", dt
    try:
        with open(result_path) as f:
            res = json.load(f)
    except (OSError, ValueError):
        log = common._tail(os.path.join(art, "test.log"), 600)
        return False, "test process died (%s): %s" % (common.sigdesc(p.returncode), log), "", dt
    reason = res["reason"]
    if not res["ok"]:
        reason = reason.strip().replace("\n", " | ")
        if verbose:
            reason += " (artifacts: %s)" % art
    return res["ok"], reason, res.get("tb", ""), dt


def main(argv):
    if len(argv) >= 1 and argv[0] == "--child":
        return child(argv[1], argv[2])
    verbose = keep = list_only = False
    tmo = None
    filters = []
    it = iter(argv)
    for a in it:
        if a == "-v":
            verbose = True
        elif a == "-k":
            keep = True
        elif a == "-l":
            list_only = True
        elif a == "-t":
            tmo = float(next(it))
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        elif a.startswith("-"):
            print("run.py: unknown option %s" % a, file=sys.stderr)
            return 2
        else:
            filters.append(a)
    tests = discover()
    if filters:
        tests = [t for t in tests if any(f in t["name"] for f in filters)]
    if list_only:
        for t in tests:
            print(t["name"])
        return 0
    if not tests:
        print("no tests match %s" % " ".join(filters), file=sys.stderr)
        print("0 passed, 0 failed")
        return 1
    artroot = tempfile.mkdtemp(prefix="tachyon-it-")
    passed = failed = 0
    t_start = time.monotonic()
    try:
        for t in tests:
            ok, reason, tb, dt = run_one(t, artroot, tmo, verbose)
            if ok:
                passed += 1
                print("ok %s (%.1fs)" % (t["name"], dt), flush=True)
            else:
                failed += 1
                print("FAIL %s: %s" % (t["name"], reason), flush=True)
                if verbose and tb:
                    sys.stdout.write("    " + tb.strip().replace("\n", "\n    ") + "\n")
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        failed += 1
    sys.stderr.write("integration: %.0fs; artifacts in %s\n"
                     % (time.monotonic() - t_start, artroot))
    if failed == 0 and not keep:
        shutil.rmtree(artroot, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
