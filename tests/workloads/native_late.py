"""--native's unwind tables for code that comes after the start.

usage: native_late.py dlopen EXT_DIR WORK_DIR ROUNDS
       native_late.py churn EXT_DIR MODULE...
       native_late.py child EXT_DIR MODULE

dlopen: ROUNDS times, a fresh copy of EXT_DIR/tbnative.abi3.so (a new
mapping each time) is loaded and fresh() spins in its C function spin for
its first 100 ms at once; rounds are 0.13 s apart.
churn: 0.1 s of Python, then one child process after the other, each
importing its MODULE (a C extension of the standard library: a table of
its own) and then spinning in tbnative.spin for 0.15 s in child_work().
Prints DONE at the end.
"""
import importlib.util
import os
import subprocess
import sys
import time


def load(path):
    spec = importlib.util.spec_from_file_location("tbnative", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fresh(mod):
    end = time.perf_counter() + 0.1
    while time.perf_counter() < end:
        mod.spin(100_000)


def child_work(mod):
    end = time.perf_counter() + 0.15
    while time.perf_counter() < end:
        mod.spin(100_000)


def dlopen_rounds(ext_dir, work_dir, rounds):
    import shutil
    for k in range(rounds):
        d = os.path.join(work_dir, "r%d" % k)
        os.makedirs(d, exist_ok=True)
        so = os.path.join(d, "tbnative.abi3.so")
        shutil.copy(os.path.join(ext_dir, "tbnative.abi3.so"), so)
        time.sleep(0.13)
        fresh(load(so))


def churn(ext_dir, modules):
    end = time.perf_counter() + 0.1     # samples even without children
    while time.perf_counter() < end:
        pass
    for m in modules:
        subprocess.run([sys.executable, __file__, "child", ext_dir, m], check=True)


def child(ext_dir, module):
    importlib.import_module(module)
    sys.path.insert(0, ext_dir)
    import tbnative
    child_work(tbnative)


if __name__ == "__main__":
    if sys.argv[1] == "dlopen":
        dlopen_rounds(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "churn":
        churn(sys.argv[2], sys.argv[3:])
    else:
        child(sys.argv[2], sys.argv[3])
    print("DONE", flush=True)
