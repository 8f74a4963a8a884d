"""File names: cwd-relative, site-/dist-packages, lib/pythonX.Y, full path,
--full-filenames, and -o FILE."""
import os

from common import (art_path, check, fail, fmt_stacks, run_profiler, start_workload, timeout, total,
                    one_build_per_version)


@timeout(60)
@one_build_per_version
def test_filenames(python):
    tree = art_path("tree")
    os.makedirs(os.path.join(tree, "cwd"), exist_ok=True)
    w = start_workload(python, "filenames.py", tree, 60, cwd=os.path.join(tree, "cwd"))
    info = w.info
    files = info["files"]
    tree = os.path.dirname(info["cwd"])
    expect = {
        "cwd_hot": "sub/cwd_mod.py",
        "site_hot": "tb_site/hot.py",
        "dist_hot": "tb_dist/hot.py",
        "lib_hot": "tb_lib/hot.py",
        "other_hot": files["other_hot"],
        "main": info["main"],
        "<module>": info["main"],
        "stdlib_user": info["main"],
    }
    res = run_profiler(w.pid, ["-F", 499, "-d", 2], timeout=30).expect_ok()
    stacks = res.stacks()
    check(total(stacks) >= 300, "only %d samples %s" % (total(stacks), res.where()))
    errors = []
    seen = {}
    for s in stacks:
        for f in s.frames:
            if f.file is not None:       # markers/<unknown>: test_churn's concern
                seen.setdefault(f.name, set()).add(f.file)
    for fn, want in sorted(expect.items()):
        got = seen.get(fn)
        if not got:
            errors.append("%s missing" % fn)
        elif got != {want}:
            errors.append("%s: file %s, want %r" % (fn, sorted(got), want))
    all_files = set(f for v in seen.values() for f in v)
    if "fractions.py" not in all_files:
        errors.append("no frame shows the stdlib file as 'fractions.py' (files: %s)"
                      % sorted(all_files))
    long_ = [f for f in all_files if "lib/python" in f or "-packages/" in f]
    if long_:
        errors.append("unshortened files: %s" % long_)
    if errors:
        fail("default names: " + "; ".join(errors) + " " + res.where())

    # --full-filenames, written with -o
    out = art_path("full.folded")
    res = run_profiler(w.pid, ["-F", 499, "-d", 2, "--full-filenames"], timeout=30,
                       outfile=out).expect_ok()
    check(res.out == b"", "stdout not empty with -o: %r" % res.out[:200])
    stacks = res.stacks()
    check(total(stacks) >= 300, "only %d samples in -o file %s" % (total(stacks), res.where()))
    seen = {}
    for s in stacks:
        for f in s.frames:
            if f.file is not None:
                seen.setdefault(f.name, set()).add(f.file)
    full = dict(files, main=info["main"], stdlib_user=info["main"])
    full["<module>"] = info["main"]
    for fn, want in sorted(full.items()):
        got = seen.get(fn)
        if got != {want}:
            errors.append("%s: file %s, want %r" % (fn, sorted(got or []), want))
    all_files = set(f for v in seen.values() for f in v)
    if info["fractions"] not in all_files:
        errors.append("fractions frames not shown as %s" % info["fractions"])
    rel = [f for f in all_files if not f.startswith("/")]
    if rel:
        errors.append("relative paths despite --full-filenames: %s" % rel)
    if errors:
        fail("--full-filenames: " + "; ".join(errors) + " " + res.where())
