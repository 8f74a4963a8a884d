"""Every kind of Python frame a profiler must name right, one scenario each.

usage: shapes.py [MAX_SECONDS]
Each scenario ends in its own leaf function burn_<scenario>, so a test can
check the whole chain above each leaf. Prints `READY {"pid": N}` once the
first round has run.
"""
import json
import os
import sys
import time


def spin(n):
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) & 0xFFFFF
    return acc


def burn_gen(n): return spin(n)
def burn_coro(n): return spin(n)
def burn_methods(n): return spin(n)
def burn_nested(n): return spin(n)
def burn_comp(n): return spin(n)
def burn_genexp(n): return spin(n)
def burn_finally(n): return spin(n)


def produce(n):
    for _ in range(4):
        yield burn_gen(n)


def gen_scenario(n):
    return sum(produce(n))


async def inner_coro(n):
    return burn_coro(n)


async def outer_coro(n):
    return await inner_coro(n)


def coro_scenario(n):
    c = outer_coro(n)
    try:
        c.send(None)
    except StopIteration as e:
        return e.value


class Klass:
    @classmethod
    def cls_method(cls, n):
        return cls.static_method(n)

    @staticmethod
    def static_method(n):
        return burn_methods(n)


def nested_scenario(n):
    def inner():
        f = lambda: burn_nested(n)
        return f()
    return inner()


def comp_scenario(n):
    return [burn_comp(n) for _ in range(2)]


def genexp_scenario(n):
    return sum(burn_genexp(n) for _ in range(2))


def raiser():
    raise ValueError("boom")


def middle(n):
    try:
        raiser()
    finally:
        burn_finally(n)     # runs while the ValueError propagates


def exc_scenario(n):
    try:
        middle(n)
    except ValueError:
        pass


def main(seconds):
    n = 20000
    end = time.monotonic() + seconds
    ready = False
    while time.monotonic() < end:
        gen_scenario(n)
        coro_scenario(n)
        Klass.cls_method(n)
        nested_scenario(n)
        comp_scenario(n)
        genexp_scenario(n)
        exc_scenario(n)
        if not ready:
            print("READY " + json.dumps({"pid": os.getpid()}), flush=True)
            ready = True


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 60)
