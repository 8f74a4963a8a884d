"""Call churn: many short Python calls, so samples often land while frames
are being pushed and popped. Every call edge is static and in this file.

usage: churn.py [MAX_SECONDS]
Plain calls, recursion of varying depth (fib), methods, class instantiation
(__init__, entered through the interpreter's own shim/C paths), generators,
exceptions raised and caught. Prints READY {"pid", "edges": [[caller,
callee], ...]} with the static edges derived from this file's AST
(`Cls(...)` counts as a call of `Cls.__init__`, `map(f, ..)`/`key=f` as a call
of f). Python dunders called from C (Key.__eq__, Key.__hash__ from set())
are listed explicitly as edges of reenter.
"""
import ast
import json
import os
import sys
import time


def tiny(a):
    return a + 1


def small(a):
    return tiny(a) * 2


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Vec:
    def __init__(self, x):
        self.x = x

    def add(self, other):
        return Vec(self.x + other.x)


def gen(n):
    for i in range(n):
        yield tiny(i)


def consume(n):
    t = 0
    for v in gen(n):
        t += v
    return t


def thrower(i):
    if i % 3 == 0:
        raise ValueError(i)
    return small(i)


def catcher(n):
    c = 0
    for i in range(n):
        try:
            c += thrower(i)
        except ValueError:
            c -= 1
    return c


class Key:
    def __init__(self, k):
        self.k = k

    def __eq__(self, other):
        return tiny(self.k) == tiny(other.k)

    def __hash__(self):
        return 1


def reenter(n):
    # C -> Python re-entry: the interpreter calls back into Python from C.
    a = sorted(range(n), key=tiny)
    b = list(map(small, range(n)))
    keys = []
    for i in range(8):      # not a comprehension: that is its own frame on 3.11
        keys.append(Key(i % 4))
    c = len(set(keys))
    return a[0] + b[0] + c


def mixer(n):
    v = Vec(0)
    for i in range(n):
        v = v.add(Vec(small(i)))
    return fib(10) + consume(40) + catcher(40) + reenter(20) + v.x


def main(deadline):
    sys.stdout.write("READY " + json.dumps({"pid": os.getpid(), "edges": static_edges()}) + "\n")
    sys.stdout.flush()
    while time.monotonic() < deadline:
        mixer(60)


def static_edges():
    with open(os.path.abspath(__file__), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    defs, classes = {}, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for ch in node.body:
                if isinstance(ch, ast.FunctionDef):
                    defs[ch.name] = node.name + "." + ch.name
            classes[node.name] = node.name + ".__init__"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            defs[node.name] = node.name
    edges = set()

    def visit(node, owner):
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, ast.FunctionDef):
                visit(ch, defs.get(ch.name, ch.name))
                continue
            if isinstance(ch, ast.ClassDef):
                for m in ch.body:
                    if isinstance(m, ast.FunctionDef):
                        visit(m, ch.name + "." + m.name)
                continue
            if isinstance(ch, ast.Call):
                # functions passed to C code that calls them back: map(f, ..), key=f
                for arg in list(ch.args) + [k.value for k in ch.keywords]:
                    if isinstance(arg, ast.Name) and arg.id in defs:
                        edges.add((owner, defs[arg.id]))
                fn = ch.func
                name = fn.id if isinstance(fn, ast.Name) else (
                    fn.attr if isinstance(fn, ast.Attribute) else None)
                if name in classes:
                    edges.add((owner, classes[name]))
                elif name in defs:
                    edges.add((owner, defs[name]))
            visit(ch, owner)
    visit(tree, "<module>")
    edges.add(("reenter", "Key.__eq__"))
    edges.add(("reenter", "Key.__hash__"))
    skip = {"static_edges", "visit"}
    edges = [(a, b) for a, b in edges if a not in skip and b not in skip
             and not a.startswith("static_edges")]
    if sys.version_info < (3, 11):      # no co_qualname: frames are named by co_name
        edges = {(a.rsplit(".", 1)[-1], b.rsplit(".", 1)[-1]) for a, b in edges}
    return sorted([a, b] for a, b in edges)


if __name__ == "__main__":
    main(time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 60.0))
