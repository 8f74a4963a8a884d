#!/usr/bin/env python3
"""Can a walk on Python 3.8-3.11 trust a fingerprint it took from a code
object in an earlier sample, if the frame holds the same code, function and
globals addresses (f_code, f_func, f_globals) as then? This creates and drops
functions the way exec()-generated code does (templates, namedtuple-style
factories, eval in a loop) and counts how often an address triple comes back
naming another function: each time, such a cache would have named the frame
wrongly. Run it with the interpreter to check:

  python3.11 scripts/code-reuse.py [calls]
"""
import sys


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    names = ["handler_%d" % i for i in range(50)]
    pairs, triples = {}, {}
    wrong_pairs = wrong_triples = 0
    for i in range(calls):
        name = names[i % len(names)]
        ns = {}
        exec("def %s(x):\n    return x + 1\n" % name, ns)
        f = ns[name]
        pair = (id(f.__code__), id(f))
        triple = pair + (id(ns),)
        if pairs.get(pair, name) != name:
            wrong_pairs += 1
        if triples.get(triple, name) != name:
            wrong_triples += 1
        pairs[pair] = triples[triple] = name
        del ns, f
    print("%s: %d functions made and dropped; an address pair (code, function) named "
          "another function %d times, a triple (code, function, globals) %d times"
          % (sys.version.split()[0], calls, wrong_pairs, wrong_triples))


if __name__ == "__main__":
    main()
