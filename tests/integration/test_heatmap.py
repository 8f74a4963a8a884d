"""The heatmap: an HTML page of the hottest functions' source lines.

callgraph.py measures each leaf's share of its CPU time itself and names the
line of each leaf's `# HOT` loop (its truth file). The page must put each
leaf's self samples on exactly that line, with that line's source text read
from the target's file, the leaf's share close to the measured one, every
sample's leaf on a shown line, and links that point at rows that exist.
Headless Chromium renders it with ?by=self: the page's script must run (the
button's text says what it switched to) and log no error.
"""
import html.parser
import json
import os
import re
import signal

from common import (WORKLOADS, art_path, check, chromium, primary_python, run_profiler,
                    start_workload, timeout)

FREQ = 999
SECONDS = 2
TOLERANCE = 0.06        # share; the sampling error at ~700 samples is ~0.019 (1 sigma)


class Page(html.parser.HTMLParser):
    """Rows of the source tables (id, data-self, data-total, text) and links."""

    def __init__(self):
        super().__init__()
        self.rows, self.links, self.ids = [], [], set()
        self._row, self._cell, self._text = None, None, ""
        self.button = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "tr" and re.match(r"f\d+l\d+$", a.get("id", "")):
            self._row = {"id": a["id"], "self": int(a.get("data-self", 0)),
                         "total": int(a.get("data-total", 0)), "code": ""}
        elif tag == "td" and self._row is not None:
            self._cell = a.get("class")
        elif tag == "a" and a.get("href", "").startswith("#"):
            self.links.append(a["href"][1:])
        elif tag == "button":
            self.button = a

    def handle_endtag(self, tag):
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
        elif tag == "td":
            self._cell = None

    def handle_data(self, data):
        if self._row is not None and self._cell == "code":
            self._row["code"] += data


@timeout(150)
def test_heatmap_lines():
    python = primary_python()
    truth_path = art_path("callgraph.truth.json")
    w = start_workload(python, "callgraph.py", truth_path, "--max-seconds", 40, cwd=WORKLOADS)
    out = art_path("heatmap.html")
    res = run_profiler(w.pid, ["-F", FREQ, "-d", SECONDS], timeout=SECONDS + 30, stats=True,
                       outfile=out).expect_ok()
    w.signal(signal.SIGUSR1)           # the workload writes its truth and exits
    w.wait(20)
    with open(truth_path) as f:
        truth = json.load(f)
    written = res.stats()["written"]
    check(written >= 300, "only %d samples written %s" % (written, res.where()))
    check(res.out == b"", "stdout not empty with -o: %r" % res.out[:200])

    page = Page()
    page.feed(open(out, encoding="utf-8").read())
    rows = {int(r["id"].split("l")[1]): r for r in page.rows}
    check(rows, "no source rows in %s %s" % (out, res.where()))
    selfs = sum(r["self"] for r in page.rows)
    # every sample's leaf is a callgraph.py line, all of them shown
    check(selfs == written, "self samples on shown lines add up to %d, written %d %s"
          % (selfs, written, res.where()))
    for leaf, line in truth["hot_lines"].items():
        row = rows.get(line)
        check(row is not None, "%s's hot line %d is not shown %s" % (leaf, line, res.where()))
        check("# HOT " + leaf in row["code"],
              "line %d shows %r, not %s's source (wrong file or line?)" % (line, row["code"], leaf))
        got, want = row["self"] / written, truth["leaf_share"][leaf]
        check(abs(got - want) <= TOLERANCE,
              "%s: %.1f%% of the samples on its line %d, the workload measured %.1f%% %s"
              % (leaf, 100 * got, line, 100 * want, res.where()))
    main_total = max(r["total"] for r in page.rows)
    check(main_total == written, "the hottest line's total is %d, want every sample (%d)"
          % (main_total, written))
    dead = [ln for ln in page.links if ln not in page.ids]
    check(page.links and not dead, "function links without a row: %s" % dead[:5])

    url = "file://" + out + "?by=self"
    chromium(url, screenshot=art_path("heatmap.png"), window="1200,900")
    dom, log = chromium(url, dump_dom=True)
    errors = [ln for ln in log.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    check(not errors, "the page logged errors: %s" % errors[:3])
    check('class="self"' in dom and "colour by total" in dom,
          "?by=self did not switch the page (its script did not run?)")
    check(os.path.getsize(art_path("heatmap.png")) > 10000, "screenshot is blank")
