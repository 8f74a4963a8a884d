"""A stack cut from its callers: <module> -> outer -> middle -> spin, with
middle's link to its caller (_PyInterpreterFrame.previous; before 3.11 the
frame object's f_back) overwritten by an unmapped address, so a walk reads spin and middle, then fails to read the
next frame: the stack is [partial];middle;spin.

usage: cut_link.py [MAX_SECONDS]
Prints `READY {"pid", "middle_line", "spin_line"}` from spin, once the link
is cut. The process can never return into middle: spin ends it with
os._exit. The garbage collector is off (3.14's walks the frame chain).
"""
import ctypes
import gc
import json
import os
import sys
import time

# PyFrameObject.f_frame, and _PyInterpreterFrame.previous (3.11: after five
# pointers; 3.12 to 3.14: after the code pointer).
F_FRAME = 24
PREVIOUS = 48 if sys.version_info[:2] == (3, 11) else 8
# PyFrameObject.f_back before 3.11 (after PyObject_VAR_HEAD).
F_BACK = 24
UNMAPPED = 0x10


def spin(deadline):
    sys.stdout.write("READY " + json.dumps(INFO) + "\n")
    sys.stdout.flush()
    acc = 0
    while time.monotonic() < deadline: acc = (acc * 31 + 7) & 0xFFFFF  # HOT spin
    os._exit(0)


def middle(deadline):
    if sys.version_info < (3, 11):
        ctypes.c_void_p.from_address(id(sys._getframe()) + F_BACK).value = UNMAPPED
    else:
        iframe = ctypes.c_void_p.from_address(id(sys._getframe()) + F_FRAME).value
        ctypes.c_void_p.from_address(iframe + PREVIOUS).value = UNMAPPED
    spin(deadline)  # CALL spin


def outer(deadline):
    middle(deadline)  # CALL middle


def _line(marker):
    with open(os.path.abspath(__file__), encoding="utf-8") as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + marker):
                return i
    raise RuntimeError(marker)


INFO = {"pid": os.getpid(), "middle_line": _line("CALL spin"), "spin_line": _line("HOT spin")}

if __name__ == "__main__":
    gc.disable()
    outer(time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 60))
