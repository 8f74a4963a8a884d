"""Unicode names: <module> -> λ_worker -> Café.naïve -> inner_généré.

usage: fïlé_测试.py [MAX_SECONDS]
Identifiers are written in NFC (what the compiler keeps after NFKC).
"""
import os
import sys
import time


def inner_généré(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFFF  # HOT inner_généré
    return acc


class Café:
    def naïve(self, n):
        return inner_généré(n)


def λ_worker(deadline):
    c = Café()
    sys.stdout.write('READY {"pid": %d}\n' % os.getpid())
    sys.stdout.flush()
    while time.monotonic() < deadline:
        c.naïve(20000)


if __name__ == "__main__":
    λ_worker(time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 60.0))
