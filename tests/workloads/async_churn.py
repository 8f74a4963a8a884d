"""Many short asyncio tasks created and finished at a high rate, plus
cancellation (--async-aware). Every task's name encodes its parent's:

    Task-1 main -> "p0".."p3" (long-lived) -> "c<N>.p<K>" (one per round,
    awaited, or several at once through gather) -> "g<N>.c<N>.p<K>"
    (awaited by its c task); and "x<N>.p<K>", cancelled by its parent
    while it spins: it spins on in cleanup() before it re-raises.

so a profile can check that no task is ever shown under a task that was
not its parent (a task cancelled before its parent awaits it has none). Prints `READY {"pid": N}` once they run, and
`CREATED N` (tasks created) at the end. argv[1]: seconds (default 6).
"""
import asyncio
import json
import os
import sys
import time

DURATION = float(sys.argv[1]) if len(sys.argv) > 1 else 6.0
CREATED = 0


def spin(units):
    x = 0
    for i in range(units):
        x += i * i
    return x


def cleanup():
    spin(20000)


def named(coro, name):
    global CREATED
    CREATED += 1
    return asyncio.create_task(coro, name=name)


async def grandchild():
    spin(300)


async def child(n, parent):
    spin(400)
    if n % 3 == 0:
        await named(grandchild(), "g%d.%s" % (n, asyncio.current_task().get_name()))
    await asyncio.sleep(0)
    spin(200)


async def victim():
    try:
        while True:
            spin(1000)
            await asyncio.sleep(0)
    except asyncio.CancelledError:
        cleanup()
        raise


async def parent(k, until):
    me = asyncio.current_task().get_name()
    n = 0
    while time.monotonic() < until:
        n += 1
        if n % 50 == 0:
            v = named(victim(), "x%d.%s" % (n, me))
            await asyncio.sleep(0.002)
            v.cancel()
            try:
                await v
            except asyncio.CancelledError:
                pass
        elif n % 2:
            await named(child(n, me), "c%d.%s" % (n, me))
        else:
            await asyncio.gather(*(named(child(n + i, me), "c%d.%s" % (n + i, me))
                                   for i in range(3)))
            n += 3


async def main():
    until = time.monotonic() + DURATION
    parents = [named(parent(k, until), "p%d" % k) for k in range(4)]
    await asyncio.sleep(0.05)
    print("READY " + json.dumps({"pid": os.getpid()}), flush=True)
    await asyncio.gather(*parents)


asyncio.run(main())
print("CREATED %d" % CREATED, flush=True)
