"""A script started by a relative path (`python ./tests/workloads/x.py`):
its frames name it as given, without the leading `./`, in the profile and
in dump."""
import subprocess

import common
from common import REPO, Workload, check, run_profiler, spawn, timeout
from test_all_python import read_tagged
from test_dump import _dump


@timeout(60)
def test_relative_script_name(python):
    proc = spawn([python.path, "./tests/workloads/spinner.py", "30"], cwd=REPO,
                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    read_tagged(Workload(proc, {}, "spinner"), "READY", 30)
    res = run_profiler(proc.pid, ["-F", 199, "-d", 1], timeout=30).expect_ok()
    files = {f.file for s in res.stacks() for f in s.frames if f.name == "spin_inner"}
    check(files == {"tests/workloads/spinner.py"},
          "spin_inner's file %s, want tests/workloads/spinner.py %s" % (sorted(files), res.where()))
    rc, out, err = _dump(["-p", proc.pid])
    check(rc == 0 and 'File "tests/workloads/spinner.py", line' in out and '"./' not in out,
          "dump: exit %d, %r" % (rc, out[:400]))
