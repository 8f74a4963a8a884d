"""Target that spends most of its time in the kernel: <module> -> in_kernel.

usage: syscaller.py [MAX_SECONDS]   (default 60)
Reads /dev/zero 1 MiB at a time (the kernel clears the buffer), so samples
interrupt it in kernel mode: a target for --kernel. Prints `READY {"pid": N}`.
"""
import os
import sys
import time


def in_kernel(deadline):
    fd = os.open("/dev/zero", os.O_RDONLY)
    buf = bytearray(1 << 20)
    while time.monotonic() < deadline:
        os.readv(fd, [buf])  # HOT in_kernel


if __name__ == "__main__":
    deadline = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
    sys.stdout.write('READY {"pid": %d}\n' % os.getpid())
    sys.stdout.flush()
    in_kernel(deadline)
