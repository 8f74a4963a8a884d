"""Threads blocked since before the profiler attaches (wall mode).

usage: blocked.py [CHILDREN] [MAX_SECONDS]
  The main thread sleeps in sleeper() (time.sleep), one thread waits for a
  Lock in lock_waiter(), one for a socket in recv_waiter(); none of them
  wakes before MAX_SECONDS. With CHILDREN > 0, that many child processes
  (this script, exec'd) do the same; the parent waits for their READY.
Prints `READY {"pid": N, "children": [...]}` once every thread is blocked.
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time


def lock_waiter(lock):
    lock.acquire()


def recv_waiter(sock):
    sock.recv(1)


def sleeper(seconds):
    time.sleep(seconds)


def main():
    nchildren = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    limit = float(sys.argv[2]) if len(sys.argv) > 2 else 60
    lock = threading.Lock()
    lock.acquire()
    a, b = socket.socketpair()
    threads = [threading.Thread(target=lock_waiter, args=(lock,), daemon=True),
               threading.Thread(target=recv_waiter, args=(a,), daemon=True)]
    for t in threads:
        t.start()
    children = []
    for _ in range(nchildren):
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "0", str(limit)],
                             stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        line = p.stdout.readline().decode()
        if not line.startswith("READY"):
            sys.exit("child did not start")
        children.append(p.pid)
    # Let every thread reach its blocking call before saying so.
    time.sleep(0.3)
    print("READY " + json.dumps({"pid": os.getpid(), "children": children}), flush=True)
    sleeper(limit)


if __name__ == "__main__":
    main()
