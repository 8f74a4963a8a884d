"""Code objects freed and their addresses reused.

usage: code_reuse.py [MAX_SECONDS] [--caller] [--free-now]
Epoch after epoch, compiles a fresh module from source text, runs its only
function for about 20 ms and drops every reference to it, so the code
object is freed and the next epoch's one is often allocated at the same
address. Epoch E's function is named fn_e<E>, its file is gen_<E>.py and
its hot line is line_of(E) (the source is padded with blank lines), so
every sample's leaf tells whether name, file and line belong together.
--caller: fn_e<E>'s hot line calls spin() of this file, which loops, so the
reborn function is a caller (whose fingerprint a profiler may keep from an
earlier walk), not the leaf.
--free-now: each epoch's function and code object are freed as it returns,
not at the next collection, and the next epoch's take their addresses
(code object, name, file and line table): every epoch's function is born
where the last one died.
Prints `READY {"pid": N, "first_line": .., "period": ..}` and, at the end
(SIGUSR1 or MAX_SECONDS), `EPOCHS <count>`.
"""
import json
import os
import signal
import sys
import time

FIRST_LINE = 3
PERIOD = 37
STOP = []


def line_of(epoch):
    return FIRST_LINE + epoch % PERIOD


CALLER = "--caller" in sys.argv
FREE_NOW = "--free-now" in sys.argv


def spin(deadline):
    while time.monotonic() < deadline:
        pass


def source(epoch):
    pad = "\n" * (line_of(epoch) - 2)
    hot = "spin(deadline)" if CALLER else "while time.monotonic() < deadline: pass"
    return ("def fn_e%d(deadline):\n" % epoch + pad + "    " + hot + "  # HOT\n")


def run_epoch(epoch):
    ns = {"time": time, "spin": spin}
    exec(compile(source(epoch), "gen_%d.py" % epoch, "exec"), ns)
    fn = ns["fn_e%d" % epoch]
    fn(time.monotonic() + 0.02)
    # The function and its globals hold each other: the code object waits
    # for a collection, and only some addresses come back (432 of 600
    # epochs had their own on 3.13); cleared, every epoch's is the last one's.
    if FREE_NOW:
        ns.clear()


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, lambda *a: STOP.append(1))
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    deadline = time.monotonic() + (float(args[0]) if args else 60.0)
    assert source(0).split("\n")[line_of(0) - 1].strip().endswith("# HOT")
    sys.stdout.write("READY " + json.dumps({"pid": os.getpid(), "first_line": FIRST_LINE,
                                            "period": PERIOD}) + "\n")
    sys.stdout.flush()
    epoch = 0
    while not STOP and time.monotonic() < deadline:
        run_epoch(epoch)
        epoch += 1
    sys.stdout.write("EPOCHS %d\n" % epoch)
    sys.stdout.flush()
