"""The usage report: one self-contained HTML file people would rather look at than a table of text.

No network, no scripts, no fonts: inline SVG charts and CSS, readable without JavaScript. Every chart
has a title and axis labels, and a table beside it with the same figures (for screen readers, and for
copying). Light and dark colours follow the reader's preference. The figures are those of
`nexus skill stats --json` over the same window, gathered in the same single pass over the logs.
"""

import datetime
import html

from .. import schema, style
from ..catalog import listing
from . import stats

PALETTE = 8  # skills drawn in their own colour in the stacked chart; the rest are "other"
SHOWN = 20  # rows of a long table shown at once; the rest are folded
SESSIONS = 200  # sessions the page holds, the newest: `nexus sessions --all` has every one
CSS = """
:root { --fg: #1d232b; --muted: #5b6673; --bg: #ffffff; --panel: #f4f6f8; --grid: #d9dee4; --bad: #c2362b;
        --c0: #2f6fd6; --c1: #d9822b; --c2: #2e9e6a; --c3: #8a4fd1; --c4: #c94a8c; --c5: #1a9bb0;
        --c6: #a48a1c; --c7: #6b7a89; --c8: #9aa5b1; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6e9ed; --muted: #9aa5b1; --bg: #14181d; --panel: #1d232b; --grid: #343d48; --bad: #ff6b5e;
          --c0: #6aa1ff; --c1: #ffb068; --c2: #5fd39b; --c3: #b58cff; --c4: #ff86c0; --c5: #5fd2e6;
          --c6: #e0c45a; --c7: #a7b4c2; --c8: #6b7a89; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 64rem; padding: 1.5rem; background: var(--bg); color: var(--fg);
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.2rem; margin: 0 0 .5rem; }
p.lede { color: var(--muted); margin: 0 0 1rem; }
nav { margin: 0 0 1.25rem; line-height: 1.9; }
nav a { color: var(--c0); margin-right: .9rem; white-space: nowrap; }
section { background: var(--panel); border-radius: 8px; padding: 1rem 1.25rem; margin: 0 0 1.25rem; min-width: 0; }
section.trouble { border-left: 4px solid var(--bad); }
.figures { display: flex; gap: 1rem 2rem; flex-wrap: wrap; margin: 0 0 1.25rem; }
.figure b { display: block; font-size: 1.5rem; }
.figure span { color: var(--muted); }
svg { display: block; width: 100%; height: auto; margin: .5rem 0; }
svg text { fill: var(--fg); font-size: 11px; }
svg .axis { fill: var(--muted); }
svg line.grid { stroke: var(--grid); }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 0; font-size: .9rem; }
th, td { text-align: left; padding: .2rem .6rem .2rem 0; border-bottom: 1px solid var(--grid); vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.nowrap { white-space: nowrap; }
details summary { cursor: pointer; color: var(--muted); }
details pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: .25rem 0; font-size: .85rem; }
.bad { color: var(--bad); }
.muted { color: var(--muted); }
.swatch { display: inline-block; width: .8em; height: .8em; border-radius: 2px; margin-right: .3em; }
.bars { margin: .5rem 0; }
.bar { display: grid; grid-template-columns: minmax(6rem, 12rem) 1fr; gap: .1rem .75rem; align-items: center;
       padding: .15rem 0; }
.bar .name { overflow-wrap: anywhere; }
.bar .track { display: flex; flex-direction: column; gap: 2px; }
.bar .value { display: flex; align-items: center; gap: .4rem; font-size: .8rem; color: var(--muted);
              font-variant-numeric: tabular-nums; white-space: nowrap; }
.bar .value i { display: block; height: .7rem; min-width: 3px; border-radius: 2px; flex: none; }
@media (max-width: 40rem) {
  body { padding: .75rem; }
  section { padding: .75rem; }
  .bar { grid-template-columns: 1fr; }
  svg text { font-size: 24px; }
  svg text.minor { display: none; }  /* every other day label, and the y axis's name (the title says it) */
  /* A wide table of records becomes a list: its short cells on one line, labelled, the last below. */
  table.stack thead { display: none; }
  table.stack tr { display: block; padding: .35rem 0; border-bottom: 1px solid var(--grid); }
  table.stack td { display: inline-block; border: 0; padding: 0 .75rem 0 0; }
  table.stack td:not(:first-child):not(:last-child)::before { content: attr(data-label) " "; color: var(--muted); }
  table.stack td:last-child { display: block; }
  table.stack td.n:last-child::before { content: attr(data-label) " "; color: var(--muted); }  /* a figure: labelled */
}
"""


def collect(config, days, warn=None):
    """Everything the report shows, from one pass over the usage logs, and the health of each skill."""
    aggregator = stats.Aggregator(days, series=True)
    figures = stats.collect(config, days, warn=warn, aggregator=aggregator)
    today = aggregator.now.astimezone().date()
    dates = [(today - datetime.timedelta(days=n)).isoformat() for n in range(min(days, 366) - 1, -1, -1)]
    calls = {date: {} for date in dates}
    for (date, skill), count in sorted(aggregator.per_day.items()):
        calls.setdefault(date.isoformat(), {})[skill] = count
    failures = [{"date": date.isoformat(), "skill": skill, "error": message, "count": count}
                for (date, skill, message), count in sorted(aggregator.failed_per_day.items())]
    grouped = {}
    for (date, skill, message), count in aggregator.failed_per_day.items():
        grouped[skill, message] = grouped.get((skill, message), 0) + count
    groups = [{"skill": skill, "error": message, "count": count,
               "lastSeen": stats.iso(aggregator.last_failed[skill, message])}
              for (skill, message), count in grouped.items()]
    groups.sort(key=lambda g: (g["lastSeen"], g["count"]), reverse=True)
    return {"days": days, "generatedAt": schema.now_iso(), "stats": figures,
            "daily": [{"date": date, "calls": calls[date]} for date in sorted(calls)],
            "failures": failures, "failureGroups": groups, "sessions": aggregator.sessions.result(),
            "health": listing.unhealthy(listing.records(config, warn))}


def render(data):
    """The whole HTML document for `data` (see collect): trouble first, then the charts."""
    stats = data["stats"]
    unhealthy = {name for name, _, _ in data["health"]}
    # Degraded and drifted skills lead every chart by skill, and are drawn in the failure colour.
    skills = sorted(stats["skills"], key=lambda s: s["name"] not in unhealthy)
    if stats["totalInvocations"]:
        body = [_daily(data["daily"], stats["skills"]), _success(skills, unhealthy), _durations(skills, unhealthy),
                _models(stats), _failures(data["failures"], data["failureGroups"], [d["date"] for d in data["daily"]]),
                _sessions(data["sessions"])]
    else:
        body = [f"<section><h2>Nothing yet</h2><p>No skill was called in the past {_e(data['days'])} days, so "
                "there is nothing to chart. Every call of <code>nexus skill run</code> (and of an agent through "
                "<code>nexus mcp</code>) is logged; the report fills in as they come.</p></section>"]
    parts = [
        "<!doctype html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        f"<title>nexus usage, past {data['days']} days</title>", f"<style>{CSS}</style>", "</head>", "<body>",
        f"<h1>nexus usage</h1><p class=\"lede\">The past {data['days']} days, since {_e(stats['since'][:10])}; "
        f"written {_e(data['generatedAt'][:16].replace('T', ' '))}. Times are UTC.</p>",
        _figures(stats), *_linked([_health(data["health"]), *body]),
        "</body>", "</html>",
    ]
    return "\n".join(parts) + "\n"


def _linked(parts):
    """The sections with an id each, after a line of links to them: a long page read on a phone is one
    tap from its sessions."""
    found, links = [], []
    for part in parts:
        if not part.startswith("<section"):
            found.append(part)
            continue
        title = part[part.index("<h2>") + 4:part.index("</h2>")]
        ident = ' id="' in part[:part.index(">")] and part.split(' id="', 1)[1].split('"', 1)[0]
        if not ident:
            ident = "".join(c if c.isalnum() else "-" for c in html.unescape(title).lower()).strip("-")
            part = f'<section id="{ident}"' + part[len("<section"):]
        short = html.unescape(title).split(":")[0].split(",")[0]  # "Calls per day", "Duration", "Failing"
        links.append(f'<a href="#{ident}">{_e(short)}</a>')
        found.append(part)
    return [f"<nav>{' '.join(links)}</nav>", *found] if len(links) > 1 else found


def _e(text):
    """Text from a log or a skill as the page shows it: visible (a control character as \\e, a byte that
    was not UTF-8 as \\xff, so the page can always be written), then escaped."""
    return html.escape(style.visible(text), quote=True)


def _pct(rate):
    return "-" if rate is None else f"{rate:.1%}"


def _ms(ms):
    return "-" if ms is None else f"{ms:,} ms" if ms < 10_000 else f"{ms / 1000:,.1f} s"


def _figures(stats):
    rate, refused = stats["successRate"], stats.get("refusedForPolicy", 0)
    # the rate leaves out the calls a policy refused (no failure of the skill's), so the failures do too
    failed = round((stats["totalInvocations"] - refused) * (1 - rate)) if rate is not None else 0
    cells = [(f"{stats['totalInvocations']:,}", "calls", ""), (_pct(stats["successRate"]), "succeeded", ""),
             (f"{failed:,}", "failed", ' class="bad"' if failed else ""),
             *([(f"{refused:,}", "refused by policy", "")] if refused else []),
             (_ms(stats["avgDurationMs"]), "average duration", ""), (str(len(stats["skills"])), "skills used", "")]
    return '<div class="figures">' + "".join(f'<div class="figure"><b{c}>{_e(v)}</b><span>{_e(k)}</span></div>'
                                             for v, k, c in cells) + "</div>"


def _table(caption, head, rows, numeric=(), nowrap=(), stack=False):
    """A table with the chart's figures, scrolling inside its card when the page is narrower; columns
    whose index is in `numeric` are right-aligned, those in `nowrap` never wrap (names, dates). With
    `stack`, a narrow screen shows each row as a short record (CSS), and past SHOWN rows the rest are folded."""
    def cls(i):
        names = " ".join(n for n, on in (("n", i in numeric), ("nowrap", i in nowrap)) if on)
        return f' class="{names}"' if names else ""

    kind = ' class="stack"' if stack else ""

    def part(rows):
        cells = lambda row: "".join(f'<td{cls(i)} data-label="{_e(head[i])}">{cell}</td>'  # noqa: E731
                                    for i, cell in enumerate(row))
        return (f'<div class="scroll"><table{kind}><caption hidden>{_e(caption)}</caption>'
                "<thead><tr>" + "".join(f'<th{cls(i)} scope="col">{_e(h)}</th>' for i, h in enumerate(head))
                + "</tr></thead><tbody>" + "".join(f"<tr>{cells(row)}</tr>" for row in rows) + "</tbody></table></div>")

    if len(rows) <= SHOWN or not stack:
        return part(rows)
    return part(rows[:SHOWN]) + f"<details><summary>{len(rows) - SHOWN:,} more</summary>{part(rows[SHOWN:])}</details>"


def _svg(title, width, height, body):
    ident = "".join(c if c.isalnum() else "-" for c in title.lower())
    return (f'<svg viewBox="0 0 {width} {height}" role="img" aria-labelledby="{ident}" '
            f'xmlns="http://www.w3.org/2000/svg"><title id="{ident}">{_e(title)}</title>{body}</svg>')


def _section(title, chart, table, note="", shown=True):
    return (f"<section><h2>{_e(title)}</h2>{note}{chart}<details{' open' if shown else ''}>"
            f"<summary>The figures</summary>{table}</details></section>")


# The charts over time: a plot WIDTH x HEIGHT, in units that a phone's screen shrinks to about half;
# their text is 11 units, 24 on a narrow screen (CSS), where only every other day label is shown.
WIDTH, LEFT, BOTTOM, TOP_PAD = 720, 80, 54, 14


def _day_labels(days, step, height):
    """The x axis's day labels: about ten of them, every other one hidden on a narrow screen (from the
    first, which would touch the y axis's 0)."""
    every = 1 if len(days) <= 7 else max(1, len(days) // 10) if len(days) > 14 else 1
    out, shown = "", 0
    for i, day in enumerate(days):
        if i % every:
            continue
        minor = ' minor' if shown % 2 == 0 and len(days) > 7 else ""  # the first too: it would touch the 0
        shown += 1
        out += (f'<text class="axis{minor}" x="{LEFT + i * step + step / 2:.1f}" y="{height - BOTTOM + 6}" '
                f'dominant-baseline="hanging" text-anchor="middle">{_e(day[5:])}</text>')
    return out + (f'<text class="axis" x="{(LEFT + WIDTH) / 2:.0f}" y="{height - 4}" '
                  f'text-anchor="middle">day (month-day)</text>')


def _daily(daily, skills):
    """Calls per day, stacked by skill: the busiest skills in colour, the others together."""
    title = "Calls per day, by skill"
    top = [s["name"] for s in skills[:PALETTE]]
    colour = {name: f"var(--c{i})" for i, name in enumerate(top)}
    height = 300
    largest, steps = scale(max([sum(d["calls"].values()) for d in daily] + [1]))
    step = (WIDTH - LEFT - 10) / max(len(daily), 1)
    body = _y_axis(largest, steps, height, "calls")
    for i, day in enumerate(daily):
        x, y = LEFT + i * step, height - BOTTOM
        for name in top + ["other"]:
            n = day["calls"].get(name, 0) if name != "other" else sum(
                v for k, v in day["calls"].items() if k not in colour)
            if n:
                h = (height - BOTTOM - TOP_PAD) * n / largest
                y -= h
                body += (f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{max(step - 2, 1):.1f}" height="{h:.1f}" '
                         f'fill="{colour.get(name, "var(--c8)")}"><title>{_e(day["date"])} {_e(name)}: {n}</title></rect>')
    body += _day_labels([d["date"] for d in daily], step, height)
    legend = " ".join(f'<span class="nowrap"><i class="swatch" style="background:{colour[n]}"></i>{_e(n)}</span>'
                      for n in top)
    legend += (' <span class="nowrap"><i class="swatch" style="background:var(--c8)"></i>other</span>'
               if len(skills) > PALETTE else "")
    rows = [[_e(d["date"]), f"{sum(d['calls'].values()):,}",
             _e(", ".join(f"{k} {v}" for k, v in sorted(d["calls"].items(), key=lambda kv: (-kv[1], kv[0]))))] for d in daily]
    return _section(title, _svg(title, WIDTH, height, body) + f"<p>{legend}</p>",
                    _table(title, ["Day", "Calls", "By skill"], rows, numeric=(1,), nowrap=(0,)), shown=len(rows) <= 7)


def scale(largest):
    """(top, steps) of an axis for values up to `largest`: 3 to 6 steps (fewer only below 3) of 1, 2,
    2.5 or 5 times a power of ten (2.5 from tens up, so that every label is a whole number), the top
    the lowest that reaches it, with fewer steps where two reach it alike: 272 gives (300, 3), 470
    (500, 5), 1 (1, 1)."""
    best, magnitude = None, 1
    while best is None or magnitude <= largest:
        for unit in (magnitude, 2 * magnitude, *([magnitude * 5 // 2] if magnitude >= 10 else []), 5 * magnitude):
            steps = max(min(3, largest), -(-largest // unit))
            if steps <= 6 and (best is None or (unit * steps, steps) < (best[0], best[1])):
                best = (unit * steps, steps)
        magnitude *= 10
    return best


def tick(value, top):
    """An axis label that fits LEFT at a phone's 24 units a character: 2,500, and from 10,000 up 12.5k,
    1.5M (the figures' table has them whole)."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if top >= 10 * size if size == 1_000 else top >= size:
            return f"{value / size:,.4g}{suffix}" if value else "0"
    return f"{value:,.0f}"


def _y_axis(top, steps, height, label):
    """Grid lines and labels for 0..top in `steps` steps, and the axis's name along it."""
    out = ""
    for k in range(steps + 1):
        y = height - BOTTOM - (height - BOTTOM - TOP_PAD) * k / steps
        out += f'<line class="grid" x1="{LEFT}" x2="{WIDTH - 10}" y1="{y:.1f}" y2="{y:.1f}"/>'
        out += (f'<text class="axis" x="{LEFT - 6}" y="{y:.1f}" dominant-baseline="middle" '
                f'text-anchor="end">{tick(top * k / steps, top)}</text>')
    return out + (f'<text class="axis minor" transform="rotate(-90)" x="{-(height - BOTTOM) / 2:.0f}" y="4" '
                  f'dominant-baseline="hanging" text-anchor="middle">{_e(label)}</text>')


def _bars(title, items, scale_max, fmt):
    """Horizontal bars in HTML, one group per skill, whose text is the page's own at any width: items
    are (name, bad, [(value, fill, label)]); a bar of 0 is a visible stub, its value written beside it."""
    rows = []
    for name, bad, values in items:
        bars = "".join(
            f'<span class="value"><i style="width:calc((100% - 7.5rem) * {min(value / scale_max, 1) if scale_max else 0:.4f});'
            f'background:{fill}"></i>{_e(label)} {_e(fmt(value))}</span>'
            for value, fill, label in values if value is not None)
        rows.append(f'<div class="bar"><span class="name{" bad" if bad else ""}">{_e(name)}'
                    f'{" (degraded or drifted)" if bad else ""}</span><span class="track">{bars}</span></div>')
    return f'<div class="bars" role="img" aria-label="{_e(title)}">{"".join(rows)}</div>'


def _success(skills, unhealthy):
    title = "Success rate, by skill"
    items = [(s["name"], s["name"] in unhealthy,
              [(s["successRate"], "var(--c2)" if (s["successRate"] or 0) >= 0.9 and s["name"] not in unhealthy
                else "var(--bad)", "")]) for s in skills]
    chart = _bars(title, items, 1.0, lambda v: f"{v:.0%}")
    rows = [[_e(s["name"]), f"{s['totalInvocations']:,}", _pct(s["successRate"])] for s in skills]
    return _section(title, chart, _table(title, ["Skill", "Calls", "Success rate"], rows, numeric=(1, 2)))


def _models(stats):
    """By model, when agents said theirs (NEXUS_MODEL): a table, nothing otherwise."""
    if not stats.get("models"):
        return ""
    title = "By model"
    rows = [[_e(m["name"]), f"{m['totalInvocations']:,}", _pct(m["successRate"]), _ms(m["avgDurationMs"]),
             f"{m['promptTokens']:,}", f"{m['completionTokens']:,}"] for m in stats["models"]]
    return _section(title, "", _table(title, ["Model", "Calls", "Success rate", "Average", "Prompt tokens",
                                              "Completion tokens"], rows, numeric=(1, 2, 3, 4, 5), stack=True))


def _durations(skills, unhealthy):
    title = "Duration, by skill: median (p50) and p95"
    timed = [s for s in skills if s.get("type") not in ("prompt", "unknown")]  # unknown: read as a prompt
    largest = max([s.get("p95Ms") or 0 for s in timed] + [1])
    items = [(s["name"], s["name"] in unhealthy,
              [(s.get("p50Ms"), "var(--c0)", "p50"), (s.get("p95Ms"), "var(--c1)", "p95")]) for s in timed]
    chart = _bars(title, items, largest, _ms)
    rows = [[_e(s["name"]), _ms(s.get("p50Ms")), _ms(s.get("p95Ms")), _ms(s["avgDurationMs"])] for s in timed]
    note = ('<p><span><i class="swatch" style="background:var(--c0)"></i>p50</span> '
            '<span><i class="swatch" style="background:var(--c1)"></i>p95</span></p>')
    return _section(title, chart, _table(title, ["Skill", "p50", "p95", "Average"], rows, numeric=(1, 2, 3)), note)


def _message(error):
    """A failure's message: its last line (where a tool says what went wrong), the whole log window
    unfolded beneath it when there is more."""
    last = style.last_line(error)
    if last == error.strip():
        return f'<span class="bad">{_e(last)}</span>'
    window = html.escape(style.visible(error, lines=True), quote=True)  # its lines kept, shown as lines
    return f'<details><summary class="bad">{_e(last)}</summary><pre>{window}</pre></details>'


def _failures(failures, groups, days):
    """Failed calls per day, on the same days as the calls per day; then the failures grouped by skill
    and message, the most recently seen first."""
    title = "Failures over time"
    if not failures:
        return f"<section><h2>{_e(title)}</h2><p>No call failed in this window.</p></section>"
    per_day = dict.fromkeys(days, 0)
    for f in failures:
        per_day[f["date"]] = per_day.get(f["date"], 0) + f["count"]
    height = 220
    largest, steps = scale(max(list(per_day.values()) + [1]))
    step = (WIDTH - LEFT - 10) / max(len(days), 1)
    body = _y_axis(largest, steps, height, "failed")
    for i, day in enumerate(days):
        if not per_day[day]:
            continue
        h = (height - BOTTOM - TOP_PAD) * per_day[day] / largest
        body += (f'<rect x="{LEFT + i * step + 1:.1f}" y="{height - BOTTOM - h:.1f}" width="{max(step - 2, 1):.1f}" '
                 f'height="{h:.1f}" fill="var(--bad)"><title>{_e(day)}: {per_day[day]}</title></rect>')
    body += _day_labels(days, step, height)
    rows = [[_e(g["skill"]), f'{g["count"]:,}', _e(g["lastSeen"][:16].replace("T", " ")), _message(g["error"])]
            for g in groups]
    return (f"<section class=\"trouble\"><h2>{_e(title)}</h2>{_svg(title, WIDTH, height, body)}"
            f"<h3>By skill and message, last seen first</h3>"
            f"{_table('Failures by skill and message', ['Skill', 'Calls', 'Last seen', 'Error'], rows, numeric=(1,), nowrap=(0, 2), stack=True)}"
            "</section>")


def _sessions(found):
    title = "Sessions"
    more, found = max(len(found) - SESSIONS, 0), found[:SESSIONS]  # newest first: the page stays small
    rows = [[_e(s["id"]), _e(", ".join(s["clients"]) or "-"), _e(s["first"][:16].replace("T", " ")),
             _e(s["last"][:16].replace("T", " ")), f"{s['calls']:,}", f"{s['failures']:,}", f"{s['refused']:,}",
             _e(", ".join(s["skills"]))] for s in found]
    table = _table(title, ["Session", "Client", "First call", "Last call", "Calls", "Failed", "Refused", "Skills"], rows,
                   numeric=(4, 5, 6), nowrap=(0, 2, 3), stack=True)
    rest = (f"<p>The newest {SESSIONS:,} of {SESSIONS + more:,}: <code>nexus sessions --all</code> lists every "
            f"one, <code>nexus session show ID</code> the calls of one.</p>" if more else "")
    return (f'<section id="sessions"><h2>{_e(title)}</h2><p>Each agent session (NEXUS_SESSION_ID) in this window, '
            f"newest first, with the agent program that made its calls (Client: what an MCP client said it is); "
            f"\"-\" gathers the calls made without a session.</p>{table}{rest}</section>")


def _health(found):
    title = "Failing, drifted and invalid skills"
    if not found:
        return (f"<section><h2>{_e(title)}</h2><p>None: no skill's recent calls mostly fail, no verify command "
                "prints something else, and every SKILL.md reads.</p></section>")
    # A skill failing its calls says so in the words every listing uses (status.state_words).
    rows = [[f'<span class="bad">{_e(name)}</span>', _e("failing" if why.startswith("failing ") else flag), _e(why)]
            for name, flag, why in found]
    return f'<section class="trouble"><h2>{_e(title)}</h2>{_table(title, ["Skill", "Flag", "Why"], rows, nowrap=(0,))}</section>'
