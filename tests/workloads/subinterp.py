"""chain.py run in a subinterpreter (3.11+).

usage: subinterp.py DEPTH [COMPILE_EVERY_MS] [MAX_SECONDS]
The arguments are chain.py's, whose READY line the subinterpreter prints.
On 3.13+ a thread of the main interpreter runs it, so that thread has a
thread state in each interpreter. On 3.11/3.12 the main thread does: their
run_string borrows the subinterpreter's first thread state, which names the
thread that created it (CPython gh-109860), so run from another thread the
stack would be filed under the wrong thread by any profiler.
"""
import os
import sys
import threading

try:
    import _interpreters as interpreters            # 3.13+
except ImportError:
    import _xxsubinterpreters as interpreters       # 3.11, 3.12

HERE = os.path.dirname(os.path.abspath(__file__))
CODE = """
import sys
sys.argv = %r
path = %r
exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__"})
""" % (["chain.py"] + sys.argv[1:], os.path.join(HERE, "chain.py"))

iid = interpreters.create()
if sys.version_info >= (3, 13):
    t = threading.Thread(target=interpreters.run_string, args=(iid, CODE))
    t.start()
    t.join()
else:
    interpreters.run_string(iid, CODE)
os._exit(0)     # 3.12's threading._shutdown can wait forever after a subinterpreter ran
