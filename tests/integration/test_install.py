"""make install: the binary in PREFIX/sbin and tachyon-bpf(8) in the man tree,
under DESTDIR, and a man page that renders and documents every option.

No BPF involved; `make install` only copies (the binary is built already).
"""
import filecmp
import os
import re
import shutil
import stat
import subprocess
import tempfile

from common import REPO, binary, check, timeout

SECTIONS = ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "OUTPUT FORMATS",
            "EXIT STATUS", "PRIVILEGES", "EXAMPLES")


def _install(destdir, *extra):
    p = subprocess.run(["make", "-C", REPO, "--no-print-directory", "install",
                        "DESTDIR=" + destdir] + list(extra),
                       capture_output=True, timeout=300)
    check(p.returncode == 0, "make install %s failed (%d): %s"
          % (" ".join(extra), p.returncode, p.stderr.decode()[-600:]))


def _render(page):
    """The page as text: man -l (man-db), with groff as the fallback check."""
    env = dict(os.environ, MANPAGER="cat", PAGER="cat", MANWIDTH="100", LC_ALL="C.UTF-8")
    if shutil.which("man"):
        p = subprocess.run(["man", "-l", page], capture_output=True, env=env, timeout=60)
        check(p.returncode == 0 and p.stdout, "man -l %s failed (%d): %s"
              % (page, p.returncode, p.stderr.decode()[-400:]))
        text = p.stdout.decode("utf-8", "replace")
    else:
        text = None
    p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", page], capture_output=True,
                       timeout=60)
    check(p.returncode == 0, "groff -man failed: %s" % p.stderr.decode()[-400:])
    check(p.stderr == b"", "groff warns about the page: %s" % p.stderr.decode()[-600:])
    if text is None:
        text = p.stdout.decode("utf-8", "replace")
    # Strip overstrike bold/underline if a pager left it in.
    return re.sub(r".\x08", "", text)


def _long_options():
    opts = set()
    for cmd in ([], ["top"], ["dump"]):
        p = subprocess.run([binary()] + cmd + ["--help"], capture_output=True, timeout=10)
        check(p.returncode == 0, "tachyon-bpf %s --help failed" % " ".join(cmd))
        opts |= set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", p.stdout.decode()))
    return opts


@timeout(300)
def test_install_destdir():
    d = tempfile.mkdtemp(prefix="tb-install-")
    try:
        _install(d)
        sbin = os.path.join(d, "usr/local/sbin/tachyon-bpf")
        page = os.path.join(d, "usr/local/share/man/man8/tachyon-bpf.8")
        for f, mode in ((sbin, 0o755), (page, 0o644)):
            check(os.path.isfile(f), "make install DESTDIR=%s did not create %s" % (d, f))
            got = stat.S_IMODE(os.stat(f).st_mode)
            check(got == mode, "%s has mode %o, expected %o" % (f, got, mode))
        check(filecmp.cmp(sbin, binary(), shallow=False), "installed binary differs from %s"
              % binary())
        check(filecmp.cmp(page, os.path.join(REPO, "doc/tachyon-bpf.8"), shallow=False),
              "installed man page differs from doc/tachyon-bpf.8")
        p = subprocess.run([sbin, "--version"], capture_output=True, timeout=10)
        check(p.returncode == 0 and p.stdout.startswith(b"tachyon-bpf "),
              "installed binary --version: %r" % p.stdout)

        # PREFIX moves both.
        _install(d, "PREFIX=/usr")
        for f in ("usr/sbin/tachyon-bpf", "usr/share/man/man8/tachyon-bpf.8"):
            check(os.path.isfile(os.path.join(d, f)), "PREFIX=/usr: %s missing" % f)

        text = _render(page)
        check(re.search(r"^TACHYON-BPF\(8\)", text, re.M), "rendered page lacks the "
              "TACHYON-BPF(8) title: %r" % text[:200])
        for sec in SECTIONS:
            check(re.search(r"^%s$" % re.escape(sec), text, re.M),
                  "man page lacks the %s section" % sec)
        flat = re.sub(r"\s+", " ", text.replace("\u2010\n", "").replace("-\n", "-"))
        # Hyphenation and justification can split words: compare without it.
        joined = re.sub(r"(\w)\u2010 ", r"\1", flat)
        missing = sorted(o for o in _long_options() if o not in text and o not in joined)
        check(not missing, "options in --help but not in the man page: %s" % missing)
        for word in ("top", "dump", "collapsed", "speedscope", "pprof", "svg", "CAP_BPF",
                     "CAP_PERFMON", "CAP_SYS_PTRACE", "innermost first"):
            check(word in joined, "the man page does not mention %r" % word)
        for code in ("0", "1", "2"):
            check(re.search(r"^\s+%s\s+\S" % code, text, re.M),
                  "EXIT STATUS does not describe exit %s" % code)
    finally:
        shutil.rmtree(d, ignore_errors=True)
