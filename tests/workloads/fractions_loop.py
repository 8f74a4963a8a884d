"""Stdlib call churn: fractions.Fraction arithmetic (many short pure-Python
calls through closures, __new__ called from C, ABC isinstance checks).

usage: fractions_loop.py [MAX_SECONDS]
<module> -> main -> fractions.* ; prints READY {"pid": N}.
"""
import fractions
import os
import sys
import time


def main(deadline):
    sys.stdout.write('READY {"pid": %d}\n' % os.getpid())
    sys.stdout.flush()
    F = fractions.Fraction
    x = F(1, 3)
    while time.monotonic() < deadline:
        x = (x + F(2, 7)) * F(3, 5) - F(1, 11)
        x = F(x.numerator % 1000003, x.denominator % 999983 + 1)


if __name__ == "__main__":
    main(time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 60.0))
