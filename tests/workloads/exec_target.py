"""What execer.py becomes: <module> -> after_exec for SECONDS, then exit 0.

usage: exec_target.py [SECONDS]   (default 3)
"""
import sys
import time


def after_exec(seconds):
    acc = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for i in range(5000): acc = (acc * 31 + i) & 0xFFFFF  # HOT after_exec


if __name__ == "__main__":
    after_exec(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
