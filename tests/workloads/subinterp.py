"""chain.py run in a subinterpreter (3.11+).

usage: subinterp.py [--switch SECONDS] DEPTH [COMPILE_EVERY_MS] [MAX_SECONDS]
The arguments after the option are chain.py's, whose READY line the
subinterpreter prints. On 3.13+ a thread of the main interpreter runs it,
so that thread has a thread state in each interpreter. On 3.11/3.12 the
main thread does: their run_string borrows the subinterpreter's first
thread state, which names the thread that created it (CPython gh-109860),
so run from another thread the stack would be filed under the wrong thread
by any profiler.

--switch: a thread spins in the main interpreter for SECONDS (printing
READY {"pid": N} as it starts), then creates the subinterpreter itself and
runs the chain there: one thread that moves from one interpreter to another.
"""
import json
import os
import sys
import threading
import time

try:
    import _interpreters as interpreters            # 3.13+
except ImportError:
    import _xxsubinterpreters as interpreters       # 3.11, 3.12

HERE = os.path.dirname(os.path.abspath(__file__))
SWITCH = None
args = sys.argv[1:]
if args[:1] == ["--switch"]:
    SWITCH, args = float(args[1]), args[2:]
CODE = """
import sys
sys.argv = %r
path = %r
exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__"})
""" % (["chain.py"] + args, os.path.join(HERE, "chain.py"))


def spin_main(seconds):
    sys.stdout.write("READY " + json.dumps({"pid": os.getpid()}) + "\n")
    sys.stdout.flush()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def switch():
    spin_main(SWITCH)
    interpreters.run_string(interpreters.create(), CODE)


if SWITCH is not None:
    t = threading.Thread(target=switch)
    t.start()
    t.join()
elif sys.version_info >= (3, 13):
    iid = interpreters.create()
    t = threading.Thread(target=interpreters.run_string, args=(iid, CODE))
    t.start()
    t.join()
else:
    interpreters.run_string(interpreters.create(), CODE)
os._exit(0)     # 3.12's threading._shutdown can wait forever after a subinterpreter ran
