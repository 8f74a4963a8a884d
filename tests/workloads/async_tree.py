"""asyncio gather tree of known shape and known CPU shares (--async-aware).

    Task-1 main -- gather --> "front" front() -- gather --> "leaf-x" spin_x()
                                                        --> "leaf-y" spin_y()
                          --> "back" back(): one slice itself, then an
                                     unnamed child task ("Task-N",
                                     unnamed_child()) of one slice, awaited
                          --> "napper" napper(): time.sleep(1 ms) in the
                                     task, blocking the loop (wall mode)
                          --> "w1", "w2" waiter(): both await the task
                                     "shared" (shared_work(), weight 1):
                                     it has two awaiters
Each task spins in slices (weights 3, 1, 2, 2; each slice's length drawn
between half and 1.5 times its weight) and yields to the loop
between them, so the tasks interleave on one thread at steady shares. Each
task measures its own CPU time (thread CPU clock around each slice); after
argv[1] seconds (default 6) the truth is printed on stdout as
`TRUTH {"leaf-x": s, "leaf-y": s, "back": s, "child": s, "napper": s}`
("napper": seconds asleep). Prints `READY {"pid": N}` once the tasks run.
"""
import asyncio
import json
import os
import random
import sys
import time

DURATION = float(sys.argv[1]) if len(sys.argv) > 1 else 6.0
SPENT = {}


def spin(units):
    x = 0
    for i in range(units):
        x += i * i
    return x


def timed(key, weight):
    # Slices of one length each make a cycle of fixed CPU time, which a
    # sampler of fixed period aliases with: the same tasks drew the samples
    # round after round, 45 to 67 % for leaf-x against 56 % of the CPU (3 of
    # 8 runs off by more than 5 points). Lengths drawn at random keep the
    # shares and break the cycle.
    t0 = time.thread_time()
    spin(int(6000 * weight * random.uniform(0.5, 1.5)))
    SPENT[key] = SPENT.get(key, 0.0) + time.thread_time() - t0


async def slices(key, weight, until):
    while time.monotonic() < until:
        timed(key, weight)
        await asyncio.sleep(0)


async def spin_x(until):
    await slices("leaf-x", 3, until)


async def spin_y(until):
    await slices("leaf-y", 1, until)


async def front(until):
    await asyncio.gather(asyncio.create_task(spin_x(until), name="leaf-x"),
                         asyncio.create_task(spin_y(until), name="leaf-y"))


async def unnamed_child():
    timed("child", 2)


async def back(until):
    while time.monotonic() < until:
        timed("back", 2)
        await asyncio.sleep(0)
        await asyncio.create_task(unnamed_child())


async def napper(until):
    while time.monotonic() < until:
        t0 = time.monotonic()
        time.sleep(0.001)
        SPENT["napper"] = SPENT.get("napper", 0.0) + time.monotonic() - t0
        await asyncio.sleep(0)


async def shared_work(until):
    await slices("shared", 1, until)


async def waiter(task):
    await task


async def main():
    until = time.monotonic() + DURATION
    tasks = [asyncio.create_task(front(until), name="front"),
             asyncio.create_task(back(until), name="back"),
             asyncio.create_task(napper(until), name="napper")]
    shared = asyncio.create_task(shared_work(until), name="shared")
    tasks += [asyncio.create_task(waiter(shared), name="w1"),
              asyncio.create_task(waiter(shared), name="w2")]
    await asyncio.sleep(0.05)
    print("READY " + json.dumps({"pid": os.getpid()}), flush=True)
    await asyncio.gather(*tasks)


asyncio.run(main())
print("TRUTH " + json.dumps(SPENT), flush=True)
