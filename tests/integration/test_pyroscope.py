"""--pyroscope: pushes of each interval to a Pyroscope ingest endpoint.

A local HTTP receiver (http.server on 127.0.0.1, an ephemeral port) stands in
for Pyroscope. It records every request and answers from a script (500 for
the first push, 200 after). The profiler pushes every second for 5 seconds;
the test checks the method, the path, every query parameter, the body format
(collapsed lines), that the failed push was reported on stderr (one line) and
retried with its samples intact (same `from`, counts at least as large), that
the delivered intervals are contiguous, and that the delivered pushes add up,
stack by stack, to exactly the profile written with -o.
"""
import collections
import http.server
import os
import re
import socket
import threading
import time
import urllib.parse

from common import (art_path, check, fail, parse_collapsed, primary_python, run_profiler,
                    start_workload, timeout)

FREQ = 199          # -e cpu-clock: sampleRate is exactly -F (the tick would use HZ/N)
SECONDS = 5
APP = "tachyon.test{env=ci,team=a b}"
NO_PROXY = {"http_proxy": None, "https_proxy": None, "HTTP_PROXY": None,
            "HTTPS_PROXY": None, "all_proxy": None, "ALL_PROXY": None}


class Receiver:
    """A tiny HTTP server in a thread: records requests, answers from `codes`."""

    def __init__(self, codes=()):
        self.requests = []
        self.codes = list(codes)
        self.lock = threading.Lock()
        recv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                self._record("POST")

            def do_GET(self):
                self._record("GET")

            def do_PUT(self):
                self._record("PUT")

            def _record(self, method):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                with recv.lock:
                    code = recv.codes.pop(0) if recv.codes else 200
                    recv.requests.append({
                        "method": method, "path": self.path, "body": body, "code": code,
                        "ctype": self.headers.get("Content-Type"), "t": time.time()})
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _parse_request(req, where):
    check(req["method"] == "POST", "push used %s, not POST %s" % (req["method"], where))
    u = urllib.parse.urlsplit(req["path"])
    check(u.path == "/ingest", "push went to %r, not /ingest %s" % (u.path, where))
    q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
    want = {"name", "from", "until", "sampleRate", "spyName", "format"}
    check(set(q) == want, "push query parameters %s, expected %s (%s) %s"
          % (sorted(q), sorted(want), req["path"], where))
    for k, v in q.items():
        check(len(v) == 1, "query parameter %s given %d times %s" % (k, len(v), where))
    q = {k: v[0] for k, v in q.items()}
    check(q["name"] == APP, "name=%r, expected %r (URL-encoded on the wire) %s"
          % (q["name"], APP, where))
    check(q["sampleRate"] == str(FREQ), "sampleRate=%r, expected %d %s"
          % (q["sampleRate"], FREQ, where))
    check(q["spyName"] == "tachyon-bpf", "spyName=%r %s" % (q["spyName"], where))
    check(q["format"] == "folded", "format=%r %s" % (q["format"], where))
    for k in ("from", "until"):
        check(re.match(r"^\d{10}$", q[k]), "%s=%r is not a UNIX time in seconds %s"
              % (k, q[k], where))
    frm, until = int(q["from"]), int(q["until"])
    check(frm < until, "from=%d is not before until=%d %s" % (frm, until, where))
    check(req["ctype"] and req["ctype"].startswith("text/plain"),
          "Content-Type %r, expected text/plain %s" % (req["ctype"], where))
    stacks = parse_collapsed(req["body"], "[push body] " + where)
    check(stacks, "empty push body %s" % where)
    return frm, until, {";".join(f.raw for f in s.frames): s.count for s in stacks}


def _spinner():
    return start_workload(primary_python(), "spinner.py", 60)


@timeout(60)
def test_pyroscope_push_and_retry():
    rcv = Receiver(codes=[500])
    try:
        w = _spinner()
        out = art_path("pyroscope.folded")
        t0 = time.time()
        res = run_profiler(w.pid, ["-e", "cpu-clock", "-F", FREQ, "-d", SECONDS,
                                   "--pyroscope", rcv.url + "/",
                                   "--app", APP, "--push-interval", 1],
                           timeout=SECONDS + 40, env=NO_PROXY, outfile=out).expect_ok()
        t1 = time.time()
    finally:
        rcv.close()
    where = res.where()
    reqs = rcv.requests
    check(len(reqs) >= 3, "only %d pushes in %d s at --push-interval 1 %s"
          % (len(reqs), SECONDS, where))
    parsed = [_parse_request(r, where) for r in reqs]

    # The 500 is reported, once, on one line.
    bad = [l for l in res.err_lines() if "pyroscope:" in l]
    check(len(bad) == 1, "expected one stderr line about the failed push, got %d: %r"
          % (len(bad), bad))
    check(re.search(r"HTTP 500", bad[0]) and bad[0].startswith("tachyon-bpf: "),
          "the failure line does not name the HTTP status: %r" % bad[0])

    # The retry covers the failed interval: same start, every sample still there.
    (f0, _, b0), (f1, _, b1) = parsed[0], parsed[1]
    check(reqs[0]["code"] == 500 and reqs[1]["code"] == 200, "receiver script broken")
    check(f1 == f0, "the push after the failed one starts at %d, not at the failed "
          "one's from=%d (samples of the failed interval dropped?) %s" % (f1, f0, where))
    for stack, n in b0.items():
        check(b1.get(stack, 0) >= n, "retry lost samples of %r: %d < %d %s"
              % (stack[-80:], b1.get(stack, 0), n, where))
    check(sum(b1.values()) > sum(b0.values()), "the retry carries no new samples %s" % where)

    # Delivered intervals are contiguous and inside the run.
    ok = [p for p, r in zip(parsed, reqs) if r["code"] == 200]
    for (fa, ua, _), (fb, ub, _) in zip(ok, ok[1:]):
        check(fb == ua, "delivered intervals not contiguous: until=%d then from=%d %s"
              % (ua, fb, where))
    check(ok[0][0] >= int(t0) - 1 and ok[-1][1] <= int(t1) + 2,
          "pushed times %d..%d outside the run %d..%d" % (ok[0][0], ok[-1][1], t0, t1))

    # What was delivered is exactly the profile, stack by stack.
    got = collections.Counter()
    for _, _, body in ok:
        got.update(body)
    want = {";".join(f.raw for f in s.frames): s.count for s in res.stacks()}
    check(sum(want.values()) >= SECONDS * FREQ / 4, "only %d samples in the profile %s"
          % (sum(want.values()), where))
    if dict(got) != want:
        diff = [(k[-60:], got.get(k, 0), want.get(k, 0)) for k in set(got) | set(want)
                if got.get(k, 0) != want.get(k, 0)]
        fail("delivered pushes (%d samples) differ from the profile (%d samples): %s %s"
             % (sum(got.values()), sum(want.values()), diff[:4], where))
    check(any("spin_inner" in k for k in want), "spin_inner missing from the profile %s" % where)


@timeout(60)
def test_pyroscope_unreachable():
    """Nobody listening: every push fails with one line, the run still succeeds."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    w = _spinner()
    out = art_path("unreachable.folded")
    res = run_profiler(w.pid, ["-F", FREQ, "-d", 3, "--pyroscope", "http://127.0.0.1:%d" % port,
                               "--app", "x", "--push-interval", 1],
                       timeout=40, env=NO_PROXY, outfile=out).expect_ok()
    bad = [l for l in res.err_lines() if "pyroscope:" in l]
    check(len(bad) >= 2, "expected a stderr line per failed push, got %r %s" % (bad, res.where()))
    for l in bad:
        check(l.startswith("tachyon-bpf: ") and "127.0.0.1:%d" % port in l,
              "failure line does not name the server: %r" % l)
    check(any("lost" in l for l in bad[-1:]), "the final failure does not say the samples "
          "are lost: %r" % bad[-1])
    check(sum(s.count for s in res.stacks()) > 0, "no profile written %s" % res.where())
    check(os.path.getsize(out) > 0, "empty -o file")
