"""The usage report, looked at as a person would: the HTML parses, its tables hold the figures of
`nexus skill stats --json`, and a real headless browser (Debian's chromium) renders it to a picture."""

import datetime
import html.parser
import itertools
import json
import re
import shutil
import struct
import subprocess
import zlib

import pytest
from helpers import make_tool, on_terminal, write_log, write_skill

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Page(html.parser.HTMLParser):
    """The tables of a page (rows of cell texts) and every tag that may fetch something."""

    VOID = {"meta", "br", "img", "input", "link", "hr", "line", "rect", "path", "circle"}

    def __init__(self):
        super().__init__()
        self.tables, self.row, self.cell, self.fetches, self.open, self.scripts = [], None, None, [], [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag not in self.VOID:
            self.open.append(tag)
        if tag == "script":
            self.scripts += 1
        if any(attrs.get(key, "").startswith(("http:", "https:", "//")) for key in ("src", "href")):
            self.fetches.append((tag, attrs))
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag not in self.VOID:
            assert self.open and self.open.pop() == tag, f"</{tag}> closes <{self.open[-1] if self.open else None}>"
        if tag in ("td", "th"):
            self.row.append(self.cell.strip())
            self.cell = None
        elif tag == "tr":
            self.tables[-1].append(self.row)

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


@pytest.fixture
def used(workspace, nexus_home):
    """Logs of three skills over a few days: successes, failures with messages, sessions."""
    now = datetime.datetime.now(datetime.timezone.utc)
    for name, calls in (("alpha", 40), ("beta", 12), ("gamma", 5)):
        write_skill(workspace, name, meta={"tool": "sh"})
        lines = []
        for i in range(calls):
            ts = (now - datetime.timedelta(hours=7 * i)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            entry = {"ts": ts, "skill": name, "type": "tool", "ms": 10 + 37 * i % 900, "exit": 0 if i % 4 else 1,
                     "session": f"s{i % 3}", **({"client": "claude-code/2.1"} if i % 3 == 0 else {})}
            if i % 4 == 0:
                entry["error"] = f"{name} failed <the> way & more"
            lines.append(entry)
        write_log(nexus_home, name, reversed(lines))
    return nexus_home


def test_the_report_parses_and_its_tables_hold_the_figures_of_skill_stats(script_runner, used, tmp_path):
    target = tmp_path / "report.html"
    written = script_runner.run(["nexus", "report", "-o", str(target)])
    assert written.returncode == 0 and written.stdout == f"{target}\n"
    page = Page()
    page.feed(target.read_text())
    page.close()
    assert page.open == [] and page.scripts == 0 and page.fetches == []  # self-contained, no JavaScript
    text = target.read_text()
    assert "prefers-color-scheme: dark" in text and text.count("<svg") == 2 and text.count("<title") >= 3
    stats = json.loads(script_runner.run(["nexus", "skill", "stats", "--json"]).stdout)
    tables = {tuple(t[0]): t[1:] for t in page.tables}
    success = {row[0]: row[1:] for row in tables[("Skill", "Calls", "Success rate")]}
    durations = {row[0]: row[1:] for row in tables[("Skill", "p50", "p95", "Average")]}
    for skill in stats["skills"]:
        assert success[skill["name"]] == [f"{skill['totalInvocations']:,}", f"{skill['successRate']:.1%}"]
        assert durations[skill["name"]] == [f"{skill['p50Ms']:,} ms", f"{skill['p95Ms']:,} ms",
                                            f"{skill['avgDurationMs']:,} ms"]
    daily = tables[("Day", "Calls", "By skill")]
    assert sum(int(row[1].replace(",", "")) for row in daily) == stats["totalInvocations"]
    failures = tables[("Skill", "Calls", "Last seen", "Error")]
    assert sum(int(row[1]) for row in failures) == round(stats["totalInvocations"] * (1 - stats["successRate"]))
    assert "alpha failed <the> way & more" in [row[3] for row in failures]  # escaped, read back as written
    sessions = tables[("Session", "Client", "First call", "Last call", "Calls", "Failed", "Refused", "Skills")]
    assert sorted(row[:2] for row in sessions) == [["s0", "claude-code/2.1"], ["s1", "-"], ["s2", "-"]]
    reported = json.loads(script_runner.run(["nexus", "report", "--json"]).stdout)["stats"]
    assert reported.pop("since") >= stats.pop("since")  # the window starts when each command ran
    assert reported == stats


def sections(text):
    """The report's sections in order: (title, its HTML)."""
    return [(part.split("</h2>")[0], "<section" + part.split("</section>")[0] + "</section>")
            for part in text.split("<section")[1:]]


def test_trouble_comes_first_in_the_failure_colour(script_runner, used, workspace, nexus_home, tmp_path, bindir):
    answer = tmp_path / "answer"
    answer.write_text("labels: INBOX\n")
    make_tool(bindir, "mail")
    write_skill(workspace, "mail", meta={"tool": "mail", "verify": f"cat {answer}"})
    assert script_runner.run(["nexus", "skill", "verify", "mail"]).returncode == 0
    answer.write_text("error: token expired; showing cached labels\n")  # drifted: it prints something else
    assert script_runner.run(["nexus", "skill", "verify", "mail", "--force"]).returncode == 0
    for ok in (True, True, True):
        assert script_runner.run(["nexus", "skill", "run", "mail"]).returncode == 0
    now = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
    write_skill(workspace, "broken", meta={"tool": "sh"})
    write_log(nexus_home, "broken", [{"ts": now, "skill": "broken", "type": "tool", "ms": 5, "exit": 2, "error": "no"}])
    text = script_runner.run(["nexus", "report"]).stdout
    titles = [title for title, _ in sections(text)]
    assert titles[0].endswith("Failing, drifted and invalid skills") and 'class="trouble"' in sections(text)[0][1]
    success = next(part for title, part in sections(text) if "Success rate" in title)
    bars = success.split('<div class="bar">')[1:]
    assert bars[0].startswith('<span class="name bad">mail') and "var(--bad)" in bars[0]  # first, though it succeeds
    (zero,) = [bar for bar in bars if ">broken<" in bar]
    assert "var(--bad)" in zero and "0%" in zero and ".value i { display: block; height: .7rem; min-width: 3px" in text


def test_the_figures_count_a_policy_refusal_as_neither_success_nor_failure(script_runner, workspace, nexus_home):
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    write_skill(workspace, "mail", meta={"tool": "sh"})
    calls = [{"exit": 0}] * 3 + [{"exit": 1, "error": "boom"}] + [{"exit": 1, "refused": "scope", "error": "no"}] * 2
    write_log(nexus_home, "mail", [{"ts": now, "skill": "mail", "type": "tool", "ms": 5, **call} for call in calls])
    text = script_runner.run(["nexus", "report"]).stdout
    figures = dict((label, value) for value, label in re.findall(r"<b[^>]*>([^<]*)</b><span>([^<]*)</span>", text))
    assert figures["calls"] == "6" and figures["succeeded"] == "75.0%" and figures["failed"] == "1"
    assert figures["refused by policy"] == "2"  # 6 x 25% would have said 2 failed


def test_an_empty_report_says_so(script_runner, workspace):
    text = script_runner.run(["nexus", "report"]).stdout
    assert "<h2>Nothing yet</h2>" in text and "No skill was called in the past 30 days" in text
    assert "<svg" not in text  # no bare axes


def test_the_y_axis_ends_near_the_largest_value_and_failures_are_grouped(script_runner, workspace, nexus_home):
    now = datetime.datetime.now(datetime.timezone.utc)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if now - midnight < datetime.timedelta(seconds=30):  # the calls span 27 s: all of them on one day
        now = midnight - datetime.timedelta(milliseconds=1)
    write_skill(workspace, "busy", meta={"tool": "sh"})
    entries = []
    for i in range(272):  # one day of 272 calls; 25 kinds of failure among them, one of several lines
        ts = (now - datetime.timedelta(milliseconds=100 * i)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        entry = {"ts": ts, "skill": "busy", "type": "tool", "ms": 5, "exit": 0}
        if i < 50:
            k = i % 25
            entry.update(exit=1, error=f"Traceback\n  File x\nValueError: case {k}" if k == 3 else f"error {k}")
        entries.append(entry)
    write_log(nexus_home, "busy", reversed(entries))
    text = script_runner.run(["nexus", "report", "--days", "1"]).stdout
    daily = next(part for title, part in sections(text) if "Calls per day" in title)
    assert max(int(part.split("<")[0].replace(",", "")) for part in daily.split('text-anchor="end">')[1:]) == 300
    failed = next(part for title, part in sections(text) if "Failures" in title)
    page = Page()
    page.feed(failed)
    shown, folded = page.tables
    assert len(shown) == 21 and len(folded) == 6 and "<summary>5 more</summary>" in failed  # 20 + the rest, folded
    rows = shown[1:] + folded[1:]
    assert [row[1] for row in rows] == ["2"] * 25 and len({row[3] for row in rows}) == 25
    assert [row[2] for row in rows] == sorted((row[2] for row in rows), reverse=True)  # last seen, newest first
    assert all(len(row[2]) == 16 for row in rows) and 'class="nowrap" data-label="Last seen"' in failed
    (traced,) = [row for row in rows if "case 3" in row[3]]
    assert traced[3].startswith("ValueError: case 3") and "Traceback" in traced[3]  # the last line; the whole below
    assert "<summary class=\"bad\">ValueError: case 3</summary><pre>Traceback" in failed


def png_size_and_colours(path, edge=0):
    """(width, height, distinct colours in a sample of pixels, distinct colours of the `edge` columns at
    the right) of an 8-bit RGB(A) PNG, decoded without a library."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    assert depth == 8 and colour in (2, 6)
    chunks, at = [], 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IDAT":
            chunks.append(data[at + 8:at + 8 + length])
        at += 12 + length
    raw, size = zlib.decompress(b"".join(chunks)), 3 if colour == 2 else 4
    stride, previous, colours, right = width * size, bytearray(width * size), set(), set()
    for r in range(height):  # undo each row's filter (PNG spec, section 9) to get its pixels
        kind, row = raw[r * (stride + 1)], bytearray(raw[r * (stride + 1) + 1:(r + 1) * (stride + 1)])
        for i in range(stride):
            left = row[i - size] if i >= size else 0
            up, corner = previous[i], previous[i - size] if i >= size else 0
            if kind == 1:
                row[i] = (row[i] + left) & 255
            elif kind == 2:
                row[i] = (row[i] + up) & 255
            elif kind == 3:
                row[i] = (row[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                row[i] = (row[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        if r % 7 == 0:
            colours.update(bytes(row[c * size:c * size + 3]) for c in range(0, width, 5))
        right.update(bytes(row[c * size:c * size + 3]) for c in range(width - edge, width))
        previous = row
    return width, height, len(colours), len(right)


@pytest.mark.once
@pytest.mark.once  # the browser is the point: the report itself is made the same in both launch modes
def test_a_real_browser_renders_the_report(script_runner, used, tmp_path):
    if CHROMIUM is None:
        pytest.skip("chromium is not on PATH: the report was not rendered in a browser "
                    "(install Debian's chromium; .ci/run does when it runs as root with CI set)")
    target, picture = tmp_path / "report.html", tmp_path / "report.png"
    assert script_runner.run(["nexus", "report", "-o", str(target)]).returncode == 0
    schemes = (("light", []), ("dark", ["--force-dark-mode", "--blink-settings=preferredColorScheme=0"]))
    for (scheme, flags), (width_, height_) in itertools.product(schemes, ((390, 2400), (1280, 1400))):
        done = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
             f"--user-data-dir={tmp_path / ('profile-' + scheme)}", "--enable-logging=stderr", "--v=0",
             f"--window-size={width_},{height_}", f"--screenshot={picture}", *flags, target.as_uri()],
            capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert ":CONSOLE" not in done.stderr  # no console message: nothing failed to load or run
        width, height, colours, edge = png_size_and_colours(picture, edge=8)
        assert (width, height) == (width_, height_)
        assert colours > 8, f"the {scheme} page looks blank at {width_} px"
        # The page's own margin at the right is bare at every width: no table or chart runs off the page.
        assert edge == 1, f"something runs off the {scheme} page at {width_} px"


@pytest.mark.once
def test_on_a_terminal_the_report_goes_to_a_file_it_names(used, tmp_path):
    code, shown, _ = on_terminal([shutil.which("nexus"), "report"], cwd=tmp_path)
    target = tmp_path / "nexus-report.html"
    said, _, path = shown.strip().rpartition("\n")
    assert code == 0 and path == str(target) and "<html" not in shown
    assert "nexus-report.html" in said and "-o FILE" in said
    assert target.read_text().startswith("<!doctype html>")
    piped = subprocess.run([shutil.which("nexus"), "report"], capture_output=True, text=True, cwd=tmp_path / "nexus")
    assert piped.stdout.startswith("<!doctype html>") and not (tmp_path / "nexus" / "nexus-report.html").exists()


def test_bad_input_is_one_line_and_a_usage_error(script_runner, used, tmp_path):
    for argv in (["--days", "0"], ["--days", "many"], ["--bogus"], ["-o"]):
        result = script_runner.run(["nexus", "report", *argv])
        assert result.returncode == 2 and result.stdout == "" and result.stderr.startswith("nexus: "), argv
    target = tmp_path / "no-such-folder" / "report.html"
    result = script_runner.run(["nexus", "report", "-o", str(target)])  # named as asked: never our temporary file
    assert result.returncode == 1 and result.stderr == f"nexus: {target}: No such file or directory\n"


def test_a_failing_skill_is_on_the_trouble_card(script_runner, workspace, bindir):
    make_tool(bindir, "feed", "#!/bin/sh\necho 'upstream 503' >&2\nexit 1\n")
    write_skill(workspace, "feed", meta={"tool": "feed"})
    for _ in range(5):
        script_runner.run(["nexus", "skill", "run", "feed", "--no-verify"])
    title, card = sections(script_runner.run(["nexus", "report"]).stdout)[0]
    assert 'class="trouble"' in card and "every skill works" not in card
    assert '"Flag">failing</td><td data-label="Why">failing 5 of the last 5 calls</td>' in card


def test_a_busy_report_keeps_its_labels_whole_and_its_page_small(script_runner, workspace, nexus_home):
    """Five-digit days on a phone: the y axis says 15k, not a clipped .5,000; thousands of sessions: the
    newest 200 and the command for the rest; a link to each section; the By model table a record a row."""
    write_skill(workspace, "burst", meta={"tool": "sh"})
    now = datetime.datetime.now(datetime.timezone.utc)
    ts = now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    write_log(nexus_home, "burst", [{"ts": ts, "skill": "burst", "type": "tool", "ms": 5, "exit": 0,
                                     "session": f"s{n:05d}", "model": "claude-sonnet-4.5"} for n in range(12000)])
    text = script_runner.run(["nexus", "report"]).stdout
    axis = re.findall(r'<text class="axis" x="[^"]+" y="[^"]+" dominant-baseline="middle" text-anchor="end">([^<]+)<',
                      text)
    assert axis == ["0", "2k", "4k", "6k", "8k", "10k", "12k"], axis
    titles = dict(sections(text))
    sessions = next(part for title, part in sections(text) if title.endswith(">Sessions"))
    assert sessions.count("<tr>") == 200 + 2 and "The newest 200 of 12,000: <code>nexus sessions --all</code>" in sessions
    assert len(text) < 400_000  # was 6.7 MB with 17,702 sessions
    assert '<nav><a href="#' in text and '<a href="#sessions">Sessions</a>' in text and '<section id="sessions">' in text
    assert any('<table class="stack"><caption hidden>By model' in part for part in titles.values())


def test_tick_labels():
    from nexus.usage.report import tick

    assert [tick(v, 2500) for v in (0, 500, 2500)] == ["0", "500", "2,500"]
    assert [tick(v, 15000) for v in (0, 5000, 12500, 15000)] == ["0", "5k", "12.5k", "15k"]
    assert tick(1_500_000, 2_000_000) == "1.5M"
