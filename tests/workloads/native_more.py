"""--native with other options: an asyncio task running C code, and a thread
blocked in a system call.

usage: native_more.py EXT_DIR SECONDS MODE
MODE async: asyncio.run(main()); main awaits task "worker", whose coroutine
work() calls tbnative.spin (CPU in C) between awaits.
MODE sleep: thread "sleeper" loops in time.sleep(0.2) (clock_nanosleep in
libc, then the kernel) while the main thread spins in tbnative.spin.
Prints READY, runs SECONDS.
"""
import asyncio
import sys
import threading
import time

sys.path.insert(0, sys.argv[1])
import tbnative  # noqa: E402

END = time.monotonic() + float(sys.argv[2])


async def work():
    while time.monotonic() < END:
        tbnative.spin(300_000)
        await asyncio.sleep(0)


async def main():
    await asyncio.create_task(work(), name="worker")


def sleeper_loop():
    while time.monotonic() < END:
        time.sleep(0.2)


def spin_loop():
    while time.monotonic() < END:
        tbnative.spin(300_000)


if sys.argv[3] == "async":
    print("READY", flush=True)
    asyncio.run(main())
else:
    t = threading.Thread(target=sleeper_loop, name="sleeper")
    t.start()
    print("READY", flush=True)
    spin_loop()
    t.join()
