"""Python calling the clock in a loop: time.perf_counter() reads the clock
through libc's clock_gettime, which calls the kernel's vDSO (no system
call), so most samples of clocks() end in the vDSO.

usage: clock_calls.py SECONDS
"""
import sys
import time


def clocks(n):
    read = time.perf_counter
    for _ in range(n):
        read()


def main(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        clocks(10000)


if __name__ == "__main__":
    main(float(sys.argv[1]))
