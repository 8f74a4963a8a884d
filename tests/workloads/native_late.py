"""--native's unwind tables for code that comes after the start.

usage: native_late.py dlopen EXT_DIR WORK_DIR ROUNDS
       native_late.py mprotect EXT_DIR WORK_DIR ROUNDS SO FUNC_OFF TEXT_OFF TEXT_LEN
       native_late.py many EXT_DIR WORK_DIR COUNT SO
       native_late.py churn EXT_DIR MODULE...
       native_late.py child EXT_DIR MODULE

dlopen: ROUNDS times, a fresh copy of EXT_DIR/tbnative.abi3.so (a new
mapping each time) is loaded and fresh() spins in its C function spin for
its first 100 ms at once; rounds are 0.13 s apart.
mprotect: ROUNDS times, a fresh copy of SO (native_burn.c, whose text's
addresses are its file offsets) is mapped readable by hand, its text
(TEXT_OFF, TEXT_LEN) made executable by mprotect, as a loader of its own
would; 50 ms later (its relocations, say) fresh_mp() calls its function at
FUNC_OFF (burn) through ctypes for 100 ms; rounds are 0.13 s apart.
many: COUNT copies of SO (native_burn.c) dlopened, then many_work() calls
burn in the first for 0.8 s.
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


def fresh_mp(fn):
    end = time.perf_counter() + 0.1
    while time.perf_counter() < end:
        fn(200_000)


def mprotect_rounds(work_dir, rounds, so, func_off, text_off, text_len):
    import ctypes
    import shutil
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    prot_read, prot_exec, map_private = 1, 4, 2
    for k in range(rounds):
        d = os.path.join(work_dir, "m%d" % k)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "burn%d.so" % k)
        shutil.copy(so, path)
        time.sleep(0.13)
        fd = os.open(path, os.O_RDONLY)
        base = libc.mmap(None, os.path.getsize(path), prot_read, map_private, fd, 0)
        os.close(fd)
        if base in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap")
        if libc.mprotect(base + text_off, text_len, prot_read | prot_exec):
            raise OSError(ctypes.get_errno(), "mprotect")
        time.sleep(0.05)
        fresh_mp(ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_long)(base + func_off))


def many_work(fn):
    end = time.perf_counter() + 0.8
    while time.perf_counter() < end:
        fn(200_000)


def many(work_dir, count, so):
    import ctypes
    import shutil
    libs = []
    for k in range(count):
        path = os.path.join(work_dir, "burn%d.so" % k)
        shutil.copy(so, path)
        libs.append(ctypes.CDLL(path))
    libs[0].burn.argtypes = [ctypes.c_long]
    libs[0].burn.restype = ctypes.c_long
    many_work(libs[0].burn)


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
    elif sys.argv[1] == "mprotect":
        mprotect_rounds(sys.argv[3], int(sys.argv[4]), sys.argv[5],
                        *(int(a, 0) for a in sys.argv[6:9]))
    elif sys.argv[1] == "many":
        many(sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif sys.argv[1] == "churn":
        churn(sys.argv[2], sys.argv[3:])
    else:
        child(sys.argv[2], sys.argv[3])
    print("DONE", flush=True)
