"""A parent that starts a child, for --subprocesses and fork tests.

usage: spawner.py MODE [CHILD_SECONDS] [--wait]
MODE run:  subprocess.run([sys.executable, spawned_child.py, CHILD_SECONDS])
MODE fork: os.fork(); the child runs forked_child_fn for CHILD_SECONDS at
           once (no exec) and exits with os._exit(0).
MODE sh:   subprocess.run(["/bin/sh", "-c", "exec PYTHON spawned_child.py S"])
The parent first runs parent_before (0.2 s); with --wait it then prints
`READY {"pid": N}` and waits for SIGUSR1 before starting the child.
While the child runs the parent waits (sleeping) in parent_during; then parent_after
(0.1 s). Children print `CHILD {"pid": N, "cpu_s": X}`; the parent ends with
`DONE {"child": PID, "rc": RC}` and exits 0.
"""
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _burn(seconds):
    end = time.monotonic() + seconds
    acc = 0
    while time.monotonic() < end:
        for i in range(300):
            acc = (acc * 31 + i) & 0xFFFFF
    return acc


def parent_before():
    _burn(0.2)


def parent_after():
    _burn(0.1)


def forked_child_fn(seconds):
    cpu0 = time.process_time()
    _burn(seconds)
    return time.process_time() - cpu0


def parent_during(pid):
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.002)


def main():
    mode = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2][0] != "-" else 0.5
    wait = "--wait" in sys.argv
    if wait:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    parent_before()
    if wait:
        sys.stdout.write("READY %s\n" % json.dumps({"pid": os.getpid()}))
        sys.stdout.flush()
        signal.sigwait({signal.SIGUSR1})
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
    child_py = os.path.join(HERE, "spawned_child.py")
    if mode == "fork":
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            cpu = forked_child_fn(seconds)
            os.write(1, ("CHILD %s\n" % json.dumps({"pid": os.getpid(), "cpu_s": cpu})).encode())
            os._exit(0)
        rc = parent_during(pid)
    else:
        if mode == "run":
            argv = [sys.executable, child_py, str(seconds)]
        else:
            argv = ["/bin/sh", "-c", 'exec "$0" "$1" "$2"', sys.executable, child_py, str(seconds)]
        p = subprocess.Popen(argv)
        pid = p.pid
        rc = parent_during(pid)
        p.returncode = rc
    parent_after()
    sys.stdout.write("DONE %s\n" % json.dumps({"child": pid, "rc": rc}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
