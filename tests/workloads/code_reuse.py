"""Code objects freed and their addresses reused.

usage: code_reuse.py [MAX_SECONDS]
Epoch after epoch, compiles a fresh module from source text, runs its only
function for about 20 ms and drops every reference to it, so the code
object is freed and the next epoch's one is often allocated at the same
address. Epoch E's function is named fn_e<E>, its file is gen_<E>.py and
its hot line is line_of(E) (the source is padded with blank lines), so
every sample's leaf tells whether name, file and line belong together.
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


def source(epoch):
    pad = "\n" * (line_of(epoch) - 2)
    return ("def fn_e%d(deadline):\n" % epoch + pad +
            "    while time.monotonic() < deadline: pass  # HOT\n")


def run_epoch(epoch):
    ns = {"time": time}
    exec(compile(source(epoch), "gen_%d.py" % epoch, "exec"), ns)
    fn = ns["fn_e%d" % epoch]
    fn(time.monotonic() + 0.02)


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, lambda *a: STOP.append(1))
    deadline = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
    assert source(0).split("\n")[line_of(0) - 1].strip().startswith("while")
    sys.stdout.write("READY " + json.dumps({"pid": os.getpid(), "first_line": FIRST_LINE,
                                            "period": PERIOD}) + "\n")
    sys.stdout.flush()
    epoch = 0
    while not STOP and time.monotonic() < deadline:
        run_epoch(epoch)
        epoch += 1
    sys.stdout.write("EPOCHS %d\n" % epoch)
    sys.stdout.flush()
