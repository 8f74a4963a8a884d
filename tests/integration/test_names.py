"""Names and file names: UTF-8 intact; `;` and control characters sanitised."""
import unicodedata

from common import (check, fail, fmt_stacks, run_profiler, start_workload, timeout, total,
                    one_build_per_version)

UNI_FILE = "f\u00efl\u00e9_\u6d4b\u8bd5.py"          # fïlé_测试.py


def _nfc(s):
    return unicodedata.normalize("NFC", s)


@timeout(60)
@one_build_per_version
def test_unicode_names(python):
    w = start_workload(python, UNI_FILE, 60)
    res = run_profiler(w.pid, ["-F", 199, "-d", 2], timeout=30).expect_ok()
    stacks = res.stacks()           # fails if the output is not valid UTF-8
    check(total(stacks) >= 50, "only %d samples %s" % (total(stacks), res.where()))
    want_chain = ["<module>", "\u03bb_worker", python.shown("Caf\u00e9.na\u00efve"),
                  "inner_g\u00e9n\u00e9r\u00e9"]
    names_seen = set()
    files_seen = set()
    for s in stacks:
        for f in s.frames:
            names_seen.add(f.name)
            files_seen.add(f.file)
    missing = [n for n in want_chain if n not in names_seen]
    if missing:
        near = [n for n in names_seen if _nfc(n) in map(_nfc, missing)]
        fail("names missing from the profile: %r (seen: %r%s) %s"
             % (missing, sorted(names_seen)[:10],
                ", same after NFC: %r" % near if near else "", res.where()))
    check(files_seen == {UNI_FILE},
          "file names %r, want only %r" % (sorted(files_seen, key=str), UNI_FILE))
    full = [s for s in stacks if s.names == want_chain]
    check(sum(s.count for s in full) >= 0.9 * total(stacks),
          "only %d of %d samples have the full chain %s [top: %s]"
          % (sum(s.count for s in full), total(stacks), ";".join(want_chain),
             fmt_stacks(stacks, 4)))


@timeout(60)
@one_build_per_version
def test_sanitized_names(python):
    w = start_workload(python, "weird_names.py", 60)
    res = run_profiler(w.pid, ["-F", 199, "-d", 2], timeout=30).expect_ok()
    raw = res.profile_bytes().decode("utf-8", "replace")
    stacks = res.stacks()           # strict: no control characters, parseable lines
    check(total(stacks) >= 50, "only %d samples %s" % (total(stacks), res.where()))
    qual = w.info["qualname"].replace(";", ":").replace("\n", " ").replace("\t", " ")
    fname = w.info["filename"].replace(";", ":").replace("\x01", " ")
    want = "%s (%s:" % (qual, fname)
    leaves = {}
    for s in stacks:
        leaves[s.leaf.raw] = leaves.get(s.leaf.raw, 0) + s.count
    hits = sum(c for k, c in leaves.items() if k.startswith(want))
    check(hits >= 0.8 * total(stacks),
          "expected leaf frames %r..., got leaves %r (raw output starts %r)"
          % (want, sorted(leaves.items(), key=lambda kv: -kv[1])[:4], raw[:300]))
    check(all(s.names[:2] == ["<module>", "outer"] for s in stacks),
          "stacks do not start with <module>;outer: %s" % fmt_stacks(stacks, 4))
