"""File-name shortening target.

usage: filenames.py TREE [MAX_SECONDS]
Writes modules into TREE and imports them by absolute path:
  TREE/cwd/sub/cwd_mod.py                       cwd_hot   (run with cwd=TREE/cwd)
  TREE/lib/pythonX.Y/site-packages/tb_site/hot.py  site_hot
  TREE/dist-packages/tb_dist/hot.py             dist_hot
  TREE/lib/pythonX.Y/tb_lib/hot.py              lib_hot
  TREE/elsewhere/tb_other.py                    other_hot
and calls them round-robin from main(), plus stdlib_user() which does
fractions.Fraction arithmetic (frames in the real stdlib fractions.py).
READY {"pid", "files": {func: absolute path}, "fractions": path, "main": path}.
"""
import fractions
import importlib.util
import json
import os
import sys
import time

SRC = '''
import time

def {name}(seconds):
    acc = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for i in range(2000): acc = (acc * 31 + i) & 0xFFFFF
    return acc
'''


def load(path, name):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(SRC.format(name=name))
    spec = importlib.util.spec_from_file_location("tbmod_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def stdlib_user(seconds):
    end = time.monotonic() + seconds
    x = fractions.Fraction(1, 3)
    while time.monotonic() < end:
        x = (x + fractions.Fraction(2, 7)) * fractions.Fraction(3, 5) - fractions.Fraction(1, 11)
        x = fractions.Fraction(x.numerator % 1000003, x.denominator % 999983 + 1)


def main(tree, max_seconds):
    tree = os.path.abspath(tree)
    pyver = "python%d.%d" % sys.version_info[:2]
    layout = {
        "cwd_hot": os.path.join(tree, "cwd", "sub", "cwd_mod.py"),
        "site_hot": os.path.join(tree, "lib", pyver, "site-packages", "tb_site", "hot.py"),
        "dist_hot": os.path.join(tree, "dist-packages", "tb_dist", "hot.py"),
        "lib_hot": os.path.join(tree, "lib", pyver, "tb_lib", "hot.py"),
        "other_hot": os.path.join(tree, "elsewhere", "tb_other.py"),
    }
    fns = [load(path, name) for name, path in sorted(layout.items())]
    fns.append(stdlib_user)
    sys.stdout.write("READY " + json.dumps({
        "pid": os.getpid(), "files": layout, "fractions": fractions.__file__,
        "main": os.path.abspath(__file__), "cwd": os.getcwd()}) + "\n")
    sys.stdout.flush()
    deadline = time.monotonic() + max_seconds
    while time.monotonic() < deadline:
        for fn in fns:
            fn(0.03)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 60.0)
