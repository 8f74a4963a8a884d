"""Names that must be sanitised: `;` and control characters.

usage: weird_names.py [MAX_SECONDS]
<module> -> outer -> spin, where spin's code object is given
co_qualname "we;ird\\nqual\\tname" (co_name "we;ird" before 3.11) and
co_filename "/tmp/semi;colon\\x01dir/fi;le.py". The READY line reports them.
"""
import json
import os
import sys
import time


def spin(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFFF  # HOT spin
    return acc


WEIRD_QUAL = "we;ird\nqual\tname"
WEIRD_FILE = "/tmp/semi;colon\x01dir/fi;le.py"
kw = {"co_name": "we;ird", "co_filename": WEIRD_FILE}
if sys.version_info >= (3, 11):
    kw["co_qualname"] = WEIRD_QUAL
spin.__code__ = spin.__code__.replace(**kw)


def outer(deadline):
    sys.stdout.write("READY " + json.dumps({
        "pid": os.getpid(), "qualname": WEIRD_QUAL if sys.version_info >= (3, 11) else "we;ird",
        "filename": WEIRD_FILE, "firstlineno": spin.__code__.co_firstlineno}) + "\n")
    sys.stdout.flush()
    while time.monotonic() < deadline:
        spin(20000)


if __name__ == "__main__":
    outer(time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 60.0))
