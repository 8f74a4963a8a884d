"""asyncio tasks waiting on I/O for known times (--async-aware --mode wall).

    Task-1 main -- gather --> "sleeper" sleeper(): asyncio.sleep(0.1) forever
                          --> "reader" reader(): waits for a byte on a socket
                                     (a thread sends one every 0.12 s), then
                                     asyncio.sleep(0.03) in nap(): its time
                                     is split about 3:1 between the two lines
                          --> "group" group() -- gather --> "w1", "w2"
                                     waiter(): asyncio.sleep(0.15, 0.17)
                          --> "spawner" spawner(): every 0.1 s a parent task
                                     "p<i>" that gathers two children
                                     "k<j>.p<i>" (sleeping 30-80 ms): tasks
                                     come and go, each child's name says
                                     its parent
    a server (asyncio.start_server) whose two connections, from a client
    thread, each send a line every 0.1 s: handler tasks "Task-N handle"
    waiting in readline(), awaited by nobody.

The loop idles most of the time (a few dozen wake-ups a second). The reader
measures its own time in each of its two awaits; after argv[1] seconds
(default 8) it prints `TRUTH {"recv": s, "nap": s}` on stdout. Prints
`READY {"pid": N}` once everything waits.
"""
import asyncio
import json
import os
import random
import socket
import sys
import threading
import time

DURATION = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
SPENT = {"recv": 0.0, "nap": 0.0}


def pace(sock, every, payload, until):
    while time.monotonic() < until:
        time.sleep(every)
        try:
            sock.sendall(payload)
        except OSError:
            return


async def sleeper(until):
    while time.monotonic() < until:
        await asyncio.sleep(0.1)


async def nap():
    await asyncio.sleep(0.03)


async def reader(sock, until):
    loop = asyncio.get_running_loop()
    while time.monotonic() < until:
        t0 = time.monotonic()
        await loop.sock_recv(sock, 1)
        t1 = time.monotonic()
        await nap()
        SPENT["recv"] += t1 - t0
        SPENT["nap"] += time.monotonic() - t1


async def waiter(secs, until):
    while time.monotonic() < until:
        await asyncio.sleep(secs)


async def group(until):
    await asyncio.gather(asyncio.create_task(waiter(0.15, until), name="w1"),
                         asyncio.create_task(waiter(0.17, until), name="w2"))


async def kid(secs):
    await asyncio.sleep(secs)


async def parent(i):
    await asyncio.gather(*(asyncio.create_task(kid(random.uniform(0.03, 0.08)),
                                               name="k%d.p%d" % (j, i)) for j in range(2)))


async def spawner(until):
    i = 0
    running = set()
    while time.monotonic() < until:
        t = asyncio.create_task(parent(i), name="p%d" % i)
        running.add(t)
        t.add_done_callback(running.discard)
        i += 1
        await asyncio.sleep(0.1)


async def handle(r, w):
    while await r.readline():
        pass
    w.close()


async def main():
    until = time.monotonic() + DURATION
    loop = asyncio.get_running_loop()
    a, b = socket.socketpair()
    a.setblocking(False)
    threading.Thread(target=pace, args=(b, 0.12, b"x", until), daemon=True).start()
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    for _ in range(2):
        c = socket.create_connection(("127.0.0.1", port))
        threading.Thread(target=pace, args=(c, 0.1, b"line\n", until), daemon=True).start()
    loop.call_later(0.3, lambda: print("READY " + json.dumps({"pid": os.getpid()}),
                                       flush=True))
    await asyncio.gather(asyncio.create_task(sleeper(until), name="sleeper"),
                         asyncio.create_task(reader(a, until), name="reader"),
                         asyncio.create_task(group(until), name="group"),
                         asyncio.create_task(spawner(until), name="spawner"))
    print("TRUTH " + json.dumps(SPENT), flush=True)
    server.close()


asyncio.run(main())
