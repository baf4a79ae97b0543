#!/usr/bin/env python3
"""Browser check of a hopbench HTML report (`hopbench report`, `hopbench::html::write_report`):
render every page in headless Chromium and check what a reader would see.

usage: scripts/report_browser_check.py REPORT_DIR MATRIX_MD [--screenshot OUT.png]
                                       [--chromium BIN] [--keep]
needs: Debian's chromium (apt-get install --no-install-recommends chromium); Python 3 stdlib only

What is checked, and how:

1. Static, every file of the report: no `http://` or `https://` anywhere (the SVG namespace name
   `xmlns="http://www.w3.org/2000/svg"` excepted: an XML name that no browser fetches, and that
   an SVG file loaded as an image needs), no CSS `url(` or `@import`; every `src`, `href` and
   `data` of every page names a file of the report.
2. Rendered: each page is loaded by `chromium --headless --dump-dom` with a fresh profile and
   `--virtual-time-budget=5000`, so load events run before the DOM is written out. In the DOM:
   - index.html: one matrix row (`tr[data-row][data-dataset][data-leg]`) per row of MATRIX_MD,
     the same (dataset, leg), status and query count, and for every column the same text (a CI
     after a mean that MATRIX_MD prints without one is accepted: the page shows every CI);
     a cell without numbers shows its reason;
   - every `<img>` has `data-loaded="1"`: the report's images set it in their `onload` when
     the image decoded with a width (`naturalWidth > 0`), and `"0"` in `onerror`;
   - the page's one script ran: `<html data-sortable="N">`, N = the page's sortable tables;
   - each every-leg drill-down (`q-<dataset>.html`): its picker ran (`<table data-legs>`
     equals its leg columns), no column is hidden by default, and loaded again with
     `#pair=A,B` (its first and last leg) only the columns of A and B show.
3. Network: every load runs with `--host-resolver-rules="MAP * ~NOTFOUND"` (any host name
   resolves to nothing, so no request could succeed) and `--log-net-log`; the NetLog is scanned
   for URL requests that a page initiated (initiator = an origin). The browser's own background
   requests (component updates, time, spelling dictionaries: initiator "not an origin") are
   listed but not counted; they fail under the resolver rules too. Before the report, a scratch
   page with an `http://` image is loaded the same way and the check must see its request: the
   check is shown able to fail.
4. A screenshot of index.html at 1400x1000 (`--screenshot`, default `report.png` in a temporary
   directory, printed).

Exit status 0 when every check passes, 1 otherwise (each failure is printed).
"""
import argparse
import html.parser
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

SVG_NS = 'xmlns="http://www.w3.org/2000/svg"'
FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print(f"FAIL {msg}")


def find_chromium(explicit):
    for name in [explicit] if explicit else ["chromium", "chromium-browser", "google-chrome"]:
        path = shutil.which(name)
        if path:
            return path
    sys.exit("no chromium found: apt-get install --no-install-recommends chromium")


def run_chromium(chromium, url, extra, netlog):
    """Runs chromium on `url` with a fresh profile; returns (stdout, NetLog events)."""
    profile = tempfile.mkdtemp(prefix="hopbench-chromium-")
    try:
        cmd = [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            "--mute-audio",
            f"--user-data-dir={profile}",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            f"--log-net-log={netlog}",
            "--virtual-time-budget=5000",
            *extra,
            url,
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            fail(f"chromium exited {out.returncode} on {url}: {out.stderr[-2000:]}")
        return out.stdout, read_netlog(netlog)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def read_netlog(path):
    """The NetLog's URL requests as (event type, url, initiator)."""
    text = pathlib.Path(path).read_text()
    try:
        log = json.loads(text)
    except json.JSONDecodeError:  # a log closed early lacks its last brackets
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    out = []
    for e in log.get("events", []):
        p = e.get("params") or {}
        if types.get(e["type"]) == "URL_REQUEST_START_JOB" and "url" in p:
            out.append((p["url"], p.get("initiator", "")))
    return out


def page_requests(requests):
    """Requests a page initiated: every one whose initiator is an origin (file pages: "null")."""
    return [(u, i) for u, i in requests if i != "not an origin"]


class Dom(html.parser.HTMLParser):
    """The parts of a dumped DOM the checks read."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.html_attrs = {}
        self.imgs = []
        self.rows = []  # (attrs, [(cell attrs, text)])
        self.headers = []  # (attrs, text) of thead th with data-col
        self.sortable = 0
        self._row = None
        self._cell = None
        self._skip = 0
        self._th = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.html_attrs = a
        elif tag == "img":
            self.imgs.append(a)
        elif tag == "table" and "sortable" in (a.get("class") or "").split():
            self.sortable += 1
        elif tag == "tr" and "data-row" in a and "data-dataset" in a:
            self._row = (a, [])
        elif tag in ("td", "th") and self._row is not None:
            self._cell = [a, ""]
        elif tag == "th" and "data-col" in a:
            self._th = [a, ""]
        elif tag == "span" and self._cell is not None and "n" in (a.get("class") or "").split():
            self._skip = 1
        elif self._skip and tag == "span":
            self._skip += 1

    def handle_endtag(self, tag):
        if tag == "span" and self._skip:
            self._skip -= 1
        elif tag in ("td", "th") and self._cell is not None:
            self._row[1].append((self._cell[0], " ".join(self._cell[1].split())))
            self._cell = None
        elif tag == "th" and self._th is not None:
            self.headers.append((self._th[0], " ".join(self._th[1].split())))
            self._th = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None and not self._skip:
            self._cell[1] += data
        if self._th is not None:
            self._th[1] += data


def parse_matrix_md(text):
    lines = [l for l in text.splitlines() if l.startswith("| ")]
    header = [h.strip() for h in lines[0].strip("|").split(" | ")]
    header = [h[: -len(" [95% CI]")] if h.endswith(" [95% CI]") else h for h in header]
    rows = {}
    for line in lines[1:]:
        f = [x.strip() for x in line.strip().strip("|").split(" | ")]
        if len(f) != len(header):
            fail(f"matrix.md: malformed row {line!r}")
            continue
        key = (f[0], f[1])
        if key in rows:
            fail(f"matrix.md: {key} twice")
        rows[key] = dict(zip(header, f))
    return header, rows


def check_static(report):
    files = sorted(p for p in report.rglob("*") if p.is_file())
    for p in files:
        text = p.read_text(errors="replace")
        bare = text.replace(SVG_NS, "")
        for bad in ("http://", "https://", "url(", "@import"):
            if bad in bare:
                fail(f"{p.relative_to(report)}: contains `{bad}`")
        if p.suffix == ".html":
            for ref in re.findall(r'\s(?:src|href|data)="([^"]*)"', text):
                target = ref.split("#")[0]
                if target and not (p.parent / target).is_file():
                    fail(f"{p.relative_to(report)}: `{ref}` is not a file of the report")
    return files


def check_matrix(dom, md_header, md_rows):
    labels = {text.split(" ")[0]: a["data-col"] for a, text in dom.headers}
    labels.update({"tokens@10": "tokens@10", "median ms": "median_ms", "p95 ms": "p95_ms"})
    page = {}
    for attrs, cells in dom.rows:
        key = (attrs["data-dataset"], attrs["data-leg"])
        if key in page:
            fail(f"index.html: two rows for {key}")
        by_col = {}
        reason = None
        for a, text in cells:
            if "reason" in (a.get("class") or "").split():
                reason = text
            col = a.get("data-metric") or a.get("data-col")
            if col:
                by_col[col] = text
        page[key] = (attrs.get("data-status"), by_col, reason)
    if sorted(page) != sorted(md_rows):
        fail(
            f"index.html rows != matrix.md rows: only on the page {sorted(set(page) - set(md_rows))}, "
            f"only in matrix.md {sorted(set(md_rows) - set(page))}"
        )
    numbers = 0
    for key, md in md_rows.items():
        if key not in page:
            continue
        status, cols, reason = page[key]
        if status != md["status"]:
            fail(f"{key}: status {status} on the page, {md['status']} in matrix.md")
        if cols.get("queries") != md["queries"]:
            fail(f"{key}: queries {cols.get('queries')} on the page, {md['queries']} in matrix.md")
        for h in md_header[4:]:
            want = md[h]
            if md["status"] != "ok":
                if want != "—":
                    fail(f"{key} {h}: matrix.md has a number for a cell without numbers")
                continue
            col = labels.get(h)
            got = cols.get(col)
            same = got == want or ("[" not in want and got is not None and got.startswith(want + " ["))
            if not same:
                fail(f"{key} {h}: page `{got}`, matrix.md `{want}`")
            else:
                numbers += 1
        if md["status"] != "ok" and not reason:
            fail(f"{key}: a {md['status']} cell without its reason")
    return len(page), numbers


def self_test(chromium, tmp):
    """The network check must see a page's http request."""
    scratch = tmp / "self-test"
    scratch.mkdir()
    (scratch / "page.html").write_text(
        '<!DOCTYPE html><html lang="en"><body><img src="http://hopbench-self-test.invalid/x.png" '
        'alt="x"></body></html>'
    )
    _, requests = run_chromium(
        chromium, (scratch / "page.html").as_uri(), ["--dump-dom"], tmp / "net-self-test.json"
    )
    seen = [u for u, _ in page_requests(requests) if "hopbench-self-test.invalid" in u]
    if not seen:
        fail("self-test: the NetLog check did not see a page's http request; it cannot be trusted")
    return bool(seen)


LEG_TH = re.compile(r'<th scope="col" class="num" data-leg="([^"]*)"( hidden(?:="")?)?>')


def check_picker(chromium, page, dom_text, netlog):
    """The every-leg drill-down: its script ran (`<table data-legs>` = the leg columns), every
    column shows by default, and `#pair=A,B` narrows the table to the columns of A and B."""
    legs = LEG_TH.findall(dom_text)
    names = [html.unescape(n) for n, _ in legs]
    wired = re.search(r'<table id="drill-all" data-legs="(\d+)"', dom_text)
    if not wired or int(wired.group(1)) != len(names):
        fail(f"{page.name}: the picker script did not run ({len(names)} leg columns)")
        return
    if any(hidden for _, hidden in legs):
        fail(f"{page.name}: a leg column is hidden before a pair is picked")
    if len(names) < 2:
        return
    a, b = names[0], names[-1]
    url = page.as_uri() + "#pair=" + urllib.parse.quote(a) + "," + urllib.parse.quote(b)
    picked, requests = run_chromium(chromium, url, ["--dump-dom"], netlog)
    for u, init in page_requests(requests):
        fail(f"{page.name}#pair: the page requested {u} (initiator {init})")
    shown = [html.unescape(n) for n, hidden in LEG_TH.findall(picked) if not hidden]
    if shown != [a, b]:
        fail(f"{page.name}#pair={a},{b}: shows the columns {shown}")
    else:
        print(f"{page.name}: {len(names)} leg columns; #pair={a},{b} shows those two only")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report", type=pathlib.Path)
    ap.add_argument("matrix_md", type=pathlib.Path)
    ap.add_argument("--screenshot", type=pathlib.Path)
    ap.add_argument("--chromium")
    ap.add_argument("--keep", action="store_true", help="keep the NetLogs and DOM dumps")
    args = ap.parse_args()
    report = args.report.resolve()
    chromium = find_chromium(args.chromium)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="hopbench-report-check-"))
    version = subprocess.run([chromium, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"{version}; scratch {tmp}")

    files = check_static(report)
    print(f"static: {len(files)} files, no network URL, every reference resolves")
    self_test(chromium, tmp)
    print("self-test: a page's http request shows in the NetLog check")

    md_header, md_rows = parse_matrix_md(args.matrix_md.read_text())
    pages = sorted(p for p in report.glob("*.html"))
    background = set()
    images = 0
    for i, p in enumerate(pages):
        dom_text, requests = run_chromium(chromium, p.as_uri(), ["--dump-dom"], tmp / f"net-{i}.json")
        if args.keep:
            (tmp / f"dom-{p.name}").write_text(dom_text)
        for u, init in requests:
            if init == "not an origin":
                background.add(re.sub(r"\?.*", "", u))
        for u, init in page_requests(requests):
            fail(f"{p.name}: the page requested {u} (initiator {init})")
        dom = Dom()
        dom.feed(dom_text)
        if dom.html_attrs.get("lang") != "en":
            fail(f"{p.name}: no lang=en")
        if dom.html_attrs.get("data-sortable") != str(dom.sortable):
            fail(
                f"{p.name}: the sorting script did not run (data-sortable="
                f"{dom.html_attrs.get('data-sortable')!r}, {dom.sortable} sortable tables)"
            )
        for img in dom.imgs:
            images += img.get("data-loaded") == "1"
            if img.get("data-loaded") != "1":
                fail(f"{p.name}: image {img.get('src')} did not load (data-loaded={img.get('data-loaded')!r})")
            if not img.get("alt"):
                fail(f"{p.name}: image {img.get('src')} has no alt text")
        if 'id="drill-all"' in dom_text:
            check_picker(chromium, p, dom_text, tmp / f"net-pick-{i}.json")
        if p.name == "index.html":
            rows, numbers = check_matrix(dom, md_header, md_rows)
            print(f"index.html: {rows} matrix rows, {numbers} numbers equal to matrix.md's")
    print(f"rendered: {len(pages)} pages, {images} images loaded, no request from any page")
    if background:
        print("browser background requests (not the pages'; all failed to resolve):")
        for u in sorted(background):
            print(f"  {u}")

    shot = args.screenshot or pathlib.Path(tempfile.mkdtemp(prefix="hopbench-report-shot-")) / "report.png"
    run_chromium(
        chromium,
        (report / "index.html").as_uri(),
        [f"--screenshot={shot}", "--window-size=1400,1000"],
        tmp / "net-screenshot.json",
    )
    if not pathlib.Path(shot).is_file():
        fail("no screenshot written")
    else:
        print(f"screenshot: {shot} ({pathlib.Path(shot).stat().st_size} bytes)")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
