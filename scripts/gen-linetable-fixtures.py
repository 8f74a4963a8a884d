#!/usr/bin/env python3
"""Generate a C header of co_linetable fixtures for tests/unit/test_linetable.c.

Run under the interpreter whose tables you want (3.11+):

    python3.12 scripts/gen-linetable-fixtures.py tests/unit/fixtures/linetable_312.h

A fixed corpus of source is compiled, every nested code object is walked
(through co_consts) and, for each one, the header records its qualname,
co_firstlineno, the raw co_linetable and the line CPython itself reports for
every code unit (co_positions(); None -> -1). The expected lines therefore
come from the interpreter, never from our decoder.

Before writing anything, the script decodes every table with a small
reference decoder that follows the semantics of user/linetable.c and checks
it against co_positions(), and it checks that all 16 entry kinds occur, so a
corpus that stops exercising a form is noticed.
"""
import ast
import sys
import textwrap

NO_LINE = -1


# --- corpus ------------------------------------------------------------------

def huge_function(n):
    """A long function: many statements, loops and branches, > 1000 units."""
    body = ["def huge(a, b):", "    acc = 0"]
    for i in range(n):
        if i % 7 == 0:
            body.append(f"    if a > {i}:")
            body.append(f"        acc += a * {i} - b")
        elif i % 7 == 3:
            body.append(f"    for j{i} in range(b):")
            body.append(f"        acc ^= j{i} + {i}")
        else:
            body.append(f"    acc = (acc + {i}) % 1000003")
    body.append("    return acc")
    return "\n".join(body) + "\n"


def long_line():
    """One line with calls past column 127 (long form, no one-line form)."""
    terms = " + ".join(f"g(x{i % 4}, {i})" for i in range(24))
    return f"def wide(x0, x1, x2, x3):\n    g = max\n    return {terms}\n"


def short_forms():
    """Same-line expressions at columns 0..79 so short kinds 0..9 appear."""
    terms = "+".join(f"f(a)" for _ in range(16))
    return f"def narrow(a, f=abs):\n    return {terms}\n"


def far_jumps():
    """Line deltas well beyond 64, forwards and backwards."""
    gap = "\n" * 90
    many = ",\n".join(f"        {i}" for i in range(80))
    body = ["    total = 1"] + [f"    total += {i}" for i in range(70)]
    return (
        "def far(x):\n"
        "    y = x\n"
        + gap +
        "    y += 1\n"
        "    data = sum([\n" + many + "\n    ])\n"
        "    with open('/dev/null') as fh:\n"
        + "\n".join("    " + s for s in body) + "\n"
        "    while y < 10:\n"
        + "\n".join("    " + s for s in body) + "\n"
        "        y += 1\n"
        "    return data + y\n"
        + gap +
        "z_after_gap = far\n"
    )


FIXED = '''
"""Corpus docstring."""
import os, sys
from functools import wraps
pass

CONST = [1, 2, 3]
if CONST:
    pass

def deco(arg):
    def wrap(fn):
        @wraps(fn)
        def inner(*a, **k):
            return fn(*a, **k)
        return inner
    return wrap

@deco(
    "multi"
    "line",
)
@staticmethod
def decorated(x):
    return x + 1

class Shape:
    """A class body is a code object too."""
    sides = 0

    def __init__(self, n):
        self.n = n

    @property
    def area(self):
        return self.n * self.n

    def __repr__(self):
        return f"Shape({self.n!r}, {self.area:>{self.n}})"

def handlers(x):
    try:
        y = 1 / x
    except ZeroDivisionError as e:
        y = str(e)
    except (TypeError, ValueError):
        raise
    else:
        y += 1
    finally:
        x = None
    return y

def comps(n):
    a = [i * 2 for i in range(n) if i % 3]
    b = {i: j for i, j in zip(range(n), range(n, 0, -1))}
    c = {k for k in a}
    d = sum(v for v in b.values())
    e = lambda q, r=2: (q
                        + r
                        * n)
    return a, b, c, d, e(n)

def gen(n):
    for i in range(n):
        yield i
    yield from range(n)
    return n

async def coro(aw):
    async with aw as v:
        async for w in v:
            await w
    return [x async for x in aw]

def matcher(cmd):
    match cmd:
        case ["go", direction]:
            return direction
        case {"x": x, "y": y} if x > y:
            return x
        case Shape(n=3):
            return "tri"
        case _:
            return None

def walrus(data):
    if (n := len(data)) > 10:
        return n
    while chunk := data[:2]:
        data = data[2:]
    return (
        n,
        chunk,
    )

def unicode_cols():
    s = "é" * 40 + "λ" * 20; t = s.upper(); u = t.lower()
    return s, t, u

def nested_closures(a):
    def level1(b):
        def level2(c):
            nonlocal b
            b += c
            return lambda: a + b + c
        return level2
    return level1

def multi_line_call(a):
    return max(
        a,
        min(a,
            a + 1),
        key=lambda v:
            -v,
    )

def assert_and_del(x):
    assert x, (
        "message")
    del x
    global CONST
    CONST = None

def implicit_return(x):
    if x:
        print(x)
'''


def no_column_module():
    """An AST whose nodes have no columns: the compiler emits kind 13."""
    tree = ast.parse(textwrap.dedent("""\
        def nocols(x):
            y = x + 1
            if y:
                return y * 2
            return [v for v in range(y)]
        nocols(3)
        """))
    for node in ast.walk(tree):
        if hasattr(node, "col_offset"):
            node.col_offset = -1
            node.end_col_offset = -1
    return tree


def corpus():
    src = (FIXED + short_forms() + long_line() + far_jumps() +
           huge_function(260))
    yield compile(src, "corpus.py", "exec")
    yield compile(no_column_module(), "nocols.py", "exec")


def code_objects(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_linetable"):
            yield from code_objects(c)


# --- reference decoder (mirrors user/linetable.c) ----------------------------

def entries(table, firstlineno):
    """Yield (units, line-or-NO_LINE, kind) for each entry."""
    pos = 0
    line = firstlineno

    def varint():
        nonlocal pos
        shift = val = 0
        while True:
            b = table[pos]
            pos += 1
            val |= (b & 63) << shift
            shift += 6
            if not b & 64:
                return val

    def svarint():
        v = varint()
        return -(v >> 1) if v & 1 else v >> 1

    while pos < len(table):
        hdr = table[pos]
        pos += 1
        assert hdr & 0x80, "entry header without bit 7"
        kind = (hdr >> 3) & 15
        units = (hdr & 7) + 1
        if kind == 15:
            yield units, NO_LINE, kind
            continue
        if kind == 14:
            line += svarint()
            varint(), varint(), varint()
        elif kind == 13:
            line += svarint()
        elif kind >= 10:
            line += kind - 10
            pos += 2
        else:
            pos += 1
        yield units, line, kind


def reference_lines(co):
    out = []
    for units, line, _ in entries(co.co_linetable, co.co_firstlineno):
        out += [line] * units
    return out


def expected_lines(co):
    n = len(co.co_code) // 2
    pos = list(co.co_positions())
    assert len(pos) == n, (co.co_qualname, len(pos), n)
    return [NO_LINE if p[0] is None else p[0] for p in pos]


# --- output ------------------------------------------------------------------

def c_bytes(data, indent="\t\t"):
    rows = []
    for i in range(0, len(data), 24):
        rows.append(indent + '"' +
                    "".join(f"\\x{b:02x}" for b in data[i:i + 24]) + '"')
    return "\n".join(rows) if rows else indent + '""'


def c_ints(vals, per_row=16):
    rows = []
    for i in range(0, len(vals), per_row):
        rows.append("\t" + ", ".join(str(v) for v in vals[i:i + per_row]) + ",")
    return "\n".join(rows)


HEADER_TYPES = """\
#ifndef LT_FIXTURE_DEFINED
#define LT_FIXTURE_DEFINED
struct lt_fixture {
	const char *name;
	int32_t firstlineno;
	const uint8_t *table;
	size_t table_len;
	const int32_t *lines;	/* expected line of each code unit, -1 = none */
	size_t n_units;
};
#endif
"""


def main():
    if sys.version_info < (3, 11):
        sys.exit("need CPython 3.11 or newer")
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUT.h")
    tag = f"{sys.version_info[0]}{sys.version_info[1]}"
    codes = [c for top in corpus() for c in code_objects(top)]

    kinds = set()
    for co in codes:
        exp = expected_lines(co)
        ref = reference_lines(co)
        if ref[:len(exp)] != exp or any(v != NO_LINE for v in ref[len(exp):]):
            sys.exit(f"reference decoder disagrees with co_positions() "
                     f"on {co.co_qualname}")
        kinds |= {k for _, _, k in entries(co.co_linetable, co.co_firstlineno)}
    missing = set(range(16)) - kinds
    if missing:
        sys.exit(f"corpus misses entry kinds {sorted(missing)}")

    out = [
        "/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */",
        f"/* Generated by scripts/gen-linetable-fixtures.py under "
        f"{sys.version.split()[0]}. Do not edit. */",
        f"#ifndef LINETABLE_{tag}_H",
        f"#define LINETABLE_{tag}_H",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        HEADER_TYPES,
    ]
    for i, co in enumerate(codes):
        out.append(f"static const int32_t lt{tag}_lines_{i}[] = {{")
        out.append(c_ints(expected_lines(co)))
        out.append("};")
    out.append("")
    out.append(f"static const struct lt_fixture lt_fixtures_{tag}[] = {{")
    for i, co in enumerate(codes):
        table = co.co_linetable
        out += [
            "\t{",
            f'\t\t.name = "{co.co_qualname}",',
            f"\t\t.firstlineno = {co.co_firstlineno},",
            "\t\t.table = (const uint8_t *)",
            c_bytes(table) + ",",
            f"\t\t.table_len = {len(table)},",
            f"\t\t.lines = lt{tag}_lines_{i},",
            f"\t\t.n_units = {len(co.co_code) // 2},",
            "\t},",
        ]
    out += ["};", "", f"#endif /* LINETABLE_{tag}_H */", ""]
    with open(sys.argv[1], "w") as f:
        f.write("\n".join(out))
    units = sum(len(co.co_code) // 2 for co in codes)
    print(f"{sys.argv[1]}: {len(codes)} code objects, {units} code units, "
          f"kinds {sorted(kinds)}", file=sys.stderr)


if __name__ == "__main__":
    main()
