"""asyncio gather tree of known shape and known CPU shares (--async-aware).

    Task-1 main
      gather -> "front" front(): gather -> "leaf-x" spin_x(), "leaf-y" spin_y()
             -> "back"  back(): spins itself, then awaits an unnamed child
                               task (auto-named "Task-N") that spins
Each task spins in slices of about 1 ms and yields to the loop between them,
so the tasks interleave on one thread. Every task measures its own CPU time
(thread CPU clock around each slice) and the truth is printed as one JSON
line on stderr at the end: {"leaf-x": s, "leaf-y": s, "back": s, "Task-N": s}.
Prints "ready" once the tasks run. argv[1]: seconds (default 4).
"""
import asyncio
import json
import sys
import time

DURATION = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
SPENT = {}


def spin(units):
    x = 0
    for i in range(units):
        x += i * i
    return x


async def slices(name, weight, until):
    while time.monotonic() < until:
        t0 = time.thread_time()
        spin(3000 * weight)
        SPENT[name] = SPENT.get(name, 0.0) + time.thread_time() - t0
        await asyncio.sleep(0)


async def spin_x(until):
    await slices("leaf-x", 3, until)


async def spin_y(until):
    await slices("leaf-y", 1, until)


async def front(until):
    await asyncio.gather(asyncio.create_task(spin_x(until), name="leaf-x"),
                         asyncio.create_task(spin_y(until), name="leaf-y"))


async def unnamed_child(until):
    await slices(asyncio.current_task().get_name(), 2, until)


async def back(until):
    await slices("back", 2, time.monotonic() + (until - time.monotonic()) / 2)
    child = asyncio.create_task(unnamed_child(until))
    await child


async def main():
    until = time.monotonic() + DURATION
    print("ready", flush=True)
    await asyncio.gather(asyncio.create_task(front(until), name="front"),
                         asyncio.create_task(back(until), name="back"))


asyncio.run(main())
sys.stderr.write(json.dumps(SPENT) + "\n")
