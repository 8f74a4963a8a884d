"""Safe files: what -o and --stats may and may not do when run as root.

-o never follows a symbolic link (O_NOFOLLOW), never truncates or writes a
file that another user owns (the classic attack: a file or link planted
under the expected name in a sticky, world-writable directory like /tmp),
never blocks on a FIFO planted there, and creates its file mode 0644 or
stricter whatever the umask. --stats obeys the same rules. A run that fails
before it has a profile leaves an existing output file as it was.
"""
import os
import stat
import tempfile
import time

from common import (artifacts, check, primary_python, run_profiler, start_workload, timeout,
                    unused_pid)

OTHER = 4242
VICTIM = b"root:x:0:0:root:/root:/bin/bash\nprecious: do not touch\n"


def _sticky_dir():
    d = tempfile.mkdtemp(prefix="sticky-", dir=artifacts())
    os.chmod(d, 0o1777)
    return d


def _victim(path, uid=0, mode=0o644):
    with open(path, "wb") as f:
        f.write(VICTIM)
    os.chown(path, uid, uid)
    os.chmod(path, mode)
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _intact(path, before, what):
    with open(path, "rb") as f:
        data = f.read()
    st = os.stat(path)
    check(data == VICTIM and (st.st_size, st.st_mtime_ns, st.st_ino) == before,
          "%s: the file was modified (now %d bytes: %r)" % (what, len(data), data[:80]))


def _refused(res, what, words=(), rc=1):
    check(res.rc == rc, "%s: expected exit %d, got %s %s" % (what, rc, res.rc, res.where()))
    lines = res.err_lines()
    check(len(lines) == 1 and lines[0].startswith("tachyon-bpf: "),
          "%s: want one 'tachyon-bpf: ...' line on stderr, got %r" % (what, lines))
    for w in words:
        check(w in lines[0], "%s: message lacks %r: %r" % (what, w, lines[0]))


def _target():
    return start_workload(primary_python(), "spinner.py", 60)


@timeout(60)
def test_output_symlink_refused():
    """-o LINK where LINK -> a passwd-like file: refused, the file untouched;
    a dangling link is refused too and its target not created."""
    w = _target()
    d = tempfile.mkdtemp(prefix="files-", dir=artifacts())
    victim = os.path.join(d, "passwd")
    before = _victim(victim)
    link = os.path.join(d, "out.folded")
    os.symlink(victim, link)
    res = run_profiler(w.pid, ["-F", 99, "-d", 1, "-o", link], timeout=30)
    _refused(res, "-o symlink", ["symbolic link"])
    _intact(victim, before, "-o symlink")
    check(os.path.islink(link), "the symlink itself was replaced")

    dangling = os.path.join(d, "dangling.folded")
    os.symlink(os.path.join(d, "created-by-root"), dangling)
    res = run_profiler(w.pid, ["-F", 99, "-d", 1, "-o", dangling], timeout=30)
    _refused(res, "-o dangling symlink", ["symbolic link"])
    check(not os.path.exists(os.path.join(d, "created-by-root")),
          "-o followed a dangling symlink and created its target")


@timeout(60)
def test_output_other_users_file_in_sticky_dir():
    """In a sticky world-writable directory (like /tmp), an existing file
    owned by another user must not be truncated or overwritten by root's -o
    (fs.protected_regular is 0 here: the kernel does not prevent it)."""
    w = _target()
    d = _sticky_dir()
    path = os.path.join(d, "profile.folded")
    before = _victim(path, uid=OTHER, mode=0o666)
    res = run_profiler(w.pid, ["-F", 99, "-d", 1, "-o", path], timeout=30)
    _intact(path, before, "root's -o over uid %d's file in a sticky dir" % OTHER)
    _refused(res, "-o another user's file")


@timeout(60)
def test_output_fifo_refused():
    """A FIFO planted under the -o name: refused at once, not a hang on
    open() until someone reads it."""
    w = _target()
    d = _sticky_dir()
    path = os.path.join(d, "profile.folded")
    os.mkfifo(path, 0o666)
    os.chown(path, OTHER, OTHER)
    t0 = time.monotonic()
    res = run_profiler(w.pid, ["-F", 99, "-d", 1, "-o", path], timeout=20)
    check(time.monotonic() - t0 < 15, "took %.0f s" % (time.monotonic() - t0))
    _refused(res, "-o FIFO")


@timeout(60)
def test_output_null_device_allowed_other_devices_refused():
    """-o /dev/null and --stats /dev/null (benchmarks, smoke runs) work: there
    is nothing to clobber. Any other device is refused (a root profiler must
    not write a profile into /dev/zero's kin, let alone /dev/mem)."""
    w = _target()
    res = run_profiler(w.pid, ["-F", 99, "-d", 1, "-o", "/dev/null"], timeout=20)
    check(res.rc == 0, "-o /dev/null: %s" % res.where())
    check(any("samples in" in l for l in res.err_lines()),
          "-o /dev/null: no closing statistics: %r" % res.err_lines())
    st = os.stat("/dev/null")
    check(stat.S_ISCHR(st.st_mode), "/dev/null is no longer a device: %o" % st.st_mode)
    res = run_profiler(w.pid, ["-F", 99, "-d", 1, "--stats", "/dev/null"], timeout=20)
    check(res.rc == 0, "--stats /dev/null: %s" % res.where())
    res = run_profiler(w.pid, ["-F", 99, "-d", 1, "-o", "/dev/zero"], timeout=20)
    _refused(res, "-o /dev/zero", ["not a regular file"])


@timeout(60)
def test_output_mode_with_umask_0():
    """With umask 000 the profile is still created 0644 or stricter, and so
    is the --stats file."""
    w = _target()
    d = tempfile.mkdtemp(prefix="files-", dir=artifacts())
    out = os.path.join(d, "p.folded")
    stats = os.path.join(d, "p.stats.json")
    umask0 = ["sh", "-c", 'umask 000; exec "$@"', "sh"]
    res = run_profiler(w.pid, ["-F", 99, "-d", 1, "-o", out, "--stats", stats], timeout=30,
                       prefix=umask0)
    check(res.rc == 0, "profiler exit %s %s" % (res.rc, res.where()))
    for p in (out, stats):
        mode = stat.S_IMODE(os.stat(p).st_mode)
        check(not mode & 0o133, "%s created mode %04o under umask 000, want 0644 or stricter"
              % (os.path.basename(p), mode))


@timeout(60)
def test_output_own_file_overwritten():
    """An existing file of the caller's own is simply replaced by the profile."""
    w = _target()
    d = tempfile.mkdtemp(prefix="files-", dir=artifacts())
    path = os.path.join(d, "p.folded")
    _victim(path)
    res = run_profiler(w.pid, ["-F", 199, "-d", 1, "-o", path], timeout=30)
    check(res.rc == 0, "profiler exit %s %s" % (res.rc, res.where()))
    data = open(path, "rb").read()
    check(VICTIM not in data and b"spin_inner" in data,
          "the old content was not replaced by the profile: %r" % data[:200])


@timeout(60)
def test_failed_run_keeps_existing_output():
    """A run that fails before profiling (no such pid) must not destroy the
    file -o names: the profile replaces it only once there is one."""
    d = tempfile.mkdtemp(prefix="files-", dir=artifacts())
    path = os.path.join(d, "yesterday.folded")
    before = _victim(path)
    res = run_profiler(unused_pid(), ["-F", 99, "-d", 1, "-o", path], timeout=30)
    check(res.rc == 1, "expected exit 1 for a missing pid, got %s" % res.rc)
    _intact(path, before, "failed run")


@timeout(60)
def test_stats_symlink_refused():
    """--stats LINK -> a passwd-like file: the file is not overwritten."""
    w = _target()
    d = tempfile.mkdtemp(prefix="files-", dir=artifacts())
    victim = os.path.join(d, "passwd")
    before = _victim(victim)
    link = os.path.join(d, "stats.json")
    os.symlink(victim, link)
    res = run_profiler(w.pid, ["-F", 99, "-d", 1, "--stats", link], timeout=30)
    _intact(victim, before, "--stats symlink")
    check(res.rc != 0 or "stats" in res.err_text,
          "--stats through a symlink neither refused nor warned: %s" % res.err_text)


@timeout(60)
def test_stats_other_users_file_in_sticky_dir():
    """--stats over another user's file in a sticky dir: left alone."""
    w = _target()
    d = _sticky_dir()
    path = os.path.join(d, "stats.json")
    before = _victim(path, uid=OTHER, mode=0o666)
    run_profiler(w.pid, ["-F", 99, "-d", 1, "--stats", path], timeout=30)
    _intact(path, before, "root's --stats over uid %d's file" % OTHER)


def _closed(fds):
    """A prefix that runs the profiler with these of fds 0-2 closed."""
    return ["sh", "-c", 'exec "$@" ' + " ".join("%d>&-" % fd for fd in fds), "sh"]


@timeout(60)
def test_closed_std_fds():
    """fd 2 closed: the next file opened took its number, so the closing line
    (or an error) was written into the -o file. fd 1 closed with the profile
    on stdout: refused up front, not 'writing the profile: Invalid argument'
    after the run."""
    w = _target()
    d = tempfile.mkdtemp(prefix="files-", dir=artifacts())
    path = os.path.join(d, "f.folded")
    res = run_profiler(w.pid, ["-F", 99, "-d", 1, "-o", path], timeout=30, prefix=_closed([2]))
    check(res.rc == 0, "2>&-: exit %s %s" % (res.rc, res.where()))
    data = open(path, "rb").read()
    check(b"spin_inner" in data and b"tachyon-bpf" not in data,
          "2>&-: the -o file holds more than the profile: %r" % data[-300:])
    path = os.path.join(d, "c.folded")
    res = run_profiler(unused_pid(), ["-d", 1, "-o", path], timeout=30, prefix=_closed([0, 2]))
    check(res.rc == 1, "2>&- with a missing pid: exit %s, want 1" % res.rc)
    check(not os.path.exists(path) or b"tachyon-bpf" not in open(path, "rb").read(),
          "2>&-: the error message went into the -o file")
    res = run_profiler(w.pid, ["-d", 3], timeout=30, prefix=_closed([1]))
    _refused(res, ">&-", ["stdout: closed", "-o FILE"], rc=2)
    check(res.elapsed < 2.5, ">&-: refused only after the run (%.1f s)" % res.elapsed)
    # dump has no -o: with fd 1 closed its report went to /dev/null, exit 0.
    res = run_profiler(None, ["dump", "-p", w.pid], timeout=30, prefix=_closed([1]))
    _refused(res, "dump >&-", ["dump: stdout: closed", "> FILE"], rc=2)


def _idle_target():
    script = os.path.join(artifacts(), "idle_files.py")
    with open(script, "w") as f:
        f.write("import os, time\nprint('READY {\"pid\": %d}' % os.getpid(), flush=True)\n"
                "time.sleep(60)\n")
    return start_workload(primary_python(), None, script_path=script)


@timeout(60)
def test_no_profile_leaves_no_new_file():
    """A run that writes no profile (no such process, no samples, a later -o
    refused) left a 0-byte file behind for each -o it had opened: a file
    that was not there before the run is removed; one that was is kept."""
    d = tempfile.mkdtemp(prefix="files-", dir=artifacts())
    new = lambda name: os.path.join(d, name)
    res = run_profiler(unused_pid(), ["-d", 1, "-o", new("c.svg"), "--stats", new("c.json")],
                       timeout=30)
    check(res.rc == 1, "missing pid: exit %s %s" % (res.rc, res.where()))
    w = _target()
    res = run_profiler(w.pid, ["-d", 1, "-o", new("b.svg"), "-o", "/nonexistent/c.svg"],
                       timeout=30)
    _refused(res, "-o b.svg -o /nonexistent/c.svg", ["/nonexistent/c.svg"])
    idle = _idle_target()
    res = run_profiler(idle.pid, ["-d", 1, "-o", new("f.svg"), "-o", new("f.tby")], timeout=30)
    _refused(res, "idle target", ["no samples"])
    res = run_profiler(None, ["replay", new("none.tby"), "-o", new("r.svg")], timeout=30)
    check(res.rc == 1, "replay of a missing file: exit %s %s" % (res.rc, res.where()))
    left = sorted(os.listdir(d))
    check(not left, "files left behind by runs that wrote no profile: %s" % left)
    before = _victim(new("kept.svg"))
    run_profiler(idle.pid, ["-d", 1, "-o", new("kept.svg")], timeout=30)
    _intact(new("kept.svg"), before, "idle target over an existing file")
