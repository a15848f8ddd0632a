"""The usage report: one self-contained HTML file people would rather look at than a table of text.

No network, no scripts, no fonts: inline SVG charts and CSS, readable without JavaScript. Every chart
has a title and axis labels, and a table beside it with the same figures (for screen readers, and for
copying). Light and dark colours follow the reader's preference. The figures are those of
`nexus skill stats --json` over the same window, gathered in the same single pass over the logs.
"""

import datetime
import html

from .. import schema
from ..catalog import listing
from . import stats

PALETTE = 8  # skills drawn in their own colour in the stacked chart; the rest are "other"
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
p.lede { color: var(--muted); margin: 0 0 1.5rem; }
section { background: var(--panel); border-radius: 8px; padding: 1rem 1.25rem; margin: 0 0 1.25rem; }
.figures { display: flex; gap: 2rem; flex-wrap: wrap; margin: 0 0 1.25rem; }
.figure b { display: block; font-size: 1.5rem; }
.figure span { color: var(--muted); }
svg { display: block; width: 100%; height: auto; margin: .5rem 0; }
svg text { fill: var(--fg); font-size: 11px; }
svg .axis { fill: var(--muted); }
svg line.grid { stroke: var(--grid); }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 0; font-size: .9rem; }
th, td { text-align: left; padding: .2rem .6rem .2rem 0; border-bottom: 1px solid var(--grid); vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
details summary { cursor: pointer; color: var(--muted); }
.bad { color: var(--bad); }
.swatch { display: inline-block; width: .8em; height: .8em; border-radius: 2px; margin-right: .3em; }
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
    return {"days": days, "generatedAt": schema.now_iso(), "stats": figures,
            "daily": [{"date": date, "calls": calls[date]} for date in sorted(calls)],
            "failures": failures, "sessions": aggregator.sessions.result(),
            "health": listing.unhealthy(listing.records(config, warn))}


def render(data):
    """The whole HTML document for `data` (see collect)."""
    stats = data["stats"]
    skills = stats["skills"]
    parts = [
        "<!doctype html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        f"<title>nexus usage, past {data['days']} days</title>", f"<style>{CSS}</style>", "</head>", "<body>",
        f"<h1>nexus usage</h1><p class=\"lede\">The past {data['days']} days, since {_e(stats['since'][:10])}; "
        f"written {_e(data['generatedAt'][:16].replace('T', ' '))} UTC.</p>",
        _figures(stats), _daily(data["daily"], skills), _success(skills), _durations(skills), _models(stats),
        _failures(data["failures"], [d["date"] for d in data["daily"]]), _sessions(data["sessions"]),
        _health(data["health"]),
        "</body>", "</html>",
    ]
    return "\n".join(parts) + "\n"


def _e(text):
    return html.escape(str(text), quote=True)


def _pct(rate):
    return "-" if rate is None else f"{rate:.1%}"


def _ms(ms):
    return "-" if ms is None else f"{ms:,} ms" if ms < 10_000 else f"{ms / 1000:,.1f} s"


def _figures(stats):
    cells = [(f"{stats['totalInvocations']:,}", "calls"), (_pct(stats["successRate"]), "succeeded"),
             (_ms(stats["avgDurationMs"]), "average duration"), (str(len(stats["skills"])), "skills used")]
    return '<div class="figures">' + "".join(f'<div class="figure"><b>{_e(v)}</b><span>{_e(k)}</span></div>'
                                             for v, k in cells) + "</div>"


def _table(caption, head, rows, numeric=()):
    """A table with the chart's figures; columns whose index is in `numeric` are right-aligned."""
    cls = lambda i: ' class="n"' if i in numeric else ""  # noqa: E731
    out = [f"<table><caption hidden>{_e(caption)}</caption><thead><tr>"]
    out += [f"<th{cls(i)} scope=\"col\">{_e(h)}</th>" for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td{cls(i)}>{cell}</td>" for i, cell in enumerate(row)) + "</tr>")
    return "".join(out) + "</tbody></table>"


def _svg(title, width, height, body):
    ident = "".join(c if c.isalnum() else "-" for c in title.lower())
    return (f'<svg viewBox="0 0 {width} {height}" role="img" aria-labelledby="{ident}" '
            f'xmlns="http://www.w3.org/2000/svg"><title id="{ident}">{_e(title)}</title>{body}</svg>')


def _section(title, chart, table, note="", shown=True):
    return (f"<section><h2>{_e(title)}</h2>{note}{chart}<details{' open' if shown else ''}>"
            f"<summary>The figures</summary>{table}</details></section>")


def _daily(daily, skills):
    """Calls per day, stacked by skill: the busiest skills in colour, the others together."""
    title = "Calls per day, by skill"
    top = [s["name"] for s in skills[:PALETTE]]
    colour = {name: f"var(--c{i})" for i, name in enumerate(top)}
    width, height, left, bottom, top_pad = 720, 260, 44, 40, 12
    largest = nice_top(max([sum(d["calls"].values()) for d in daily] + [1]))
    step = (width - left - 10) / max(len(daily), 1)
    body = _y_axis(largest, left, width, height, bottom, top_pad, "calls")
    for i, day in enumerate(daily):
        x, y = left + i * step, height - bottom
        for name in top + ["other"]:
            n = day["calls"].get(name, 0) if name != "other" else sum(
                v for k, v in day["calls"].items() if k not in colour)
            if n:
                h = (height - bottom - top_pad) * n / largest
                y -= h
                body += (f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{max(step - 2, 1):.1f}" height="{h:.1f}" '
                         f'fill="{colour.get(name, "var(--c8)")}"><title>{_e(day["date"])} {_e(name)}: {n}</title></rect>')
        if len(daily) <= 14 or i % max(1, len(daily) // 10) == 0:
            body += f'<text class="axis" x="{x + step / 2:.1f}" y="{height - bottom + 14}" text-anchor="middle">{_e(day["date"][5:])}</text>'
    body += f'<text class="axis" x="{(left + width) / 2:.0f}" y="{height - 6}" text-anchor="middle">day (month-day)</text>'
    legend = " ".join(f'<span><i class="swatch" style="background:{colour[n]}"></i>{_e(n)}</span>' for n in top)
    legend += ' <span><i class="swatch" style="background:var(--c8)"></i>other</span>' if len(skills) > PALETTE else ""
    rows = [[_e(d["date"]), f"{sum(d['calls'].values()):,}",
             _e(", ".join(f"{k} {v}" for k, v in sorted(d["calls"].items(), key=lambda kv: (-kv[1], kv[0]))))] for d in daily]
    return _section(title, _svg(title, width, height, body) + f"<p>{legend}</p>",
                    _table(title, ["Day", "Calls", "By skill"], rows, numeric=(1,)), shown=len(rows) <= 7)


def nice_top(largest):
    """Where an axis of four steps ends: the first step of 1, 2, 2.5 or 5 times a power of ten that reaches
    (2.5 from tens up, so that every label is a whole number)."""
    magnitude = 1
    while True:
        for step in (magnitude, 2 * magnitude, *([magnitude * 5 // 2] if magnitude >= 10 else []), 5 * magnitude):
            if step * 4 >= largest:
                return step * 4
        magnitude *= 10


def _y_axis(top, left, width, height, bottom, top_pad, label):
    """Grid lines and labels for 0..top in four steps, and the axis's name along it."""
    out = ""
    for k in range(5):
        y = height - bottom - (height - bottom - top_pad) * k / 4
        out += f'<line class="grid" x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}"/>'
        out += f'<text class="axis" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{top * k / 4:,.0f}</text>'
    return out + (f'<text class="axis" transform="rotate(-90)" x="{-(height - bottom) / 2:.0f}" y="12" '
                  f'text-anchor="middle">{_e(label)}</text>')


def _bars(title, items, scale_max, unit_label, fmt, width=720):
    """Horizontal bars, one per skill: items are (name, [(value, fill, label)])."""
    row_h, left, top_pad = 26, 150, 8
    height = top_pad + row_h * max(len(items), 1) + 34
    plot = width - left - 60
    body = ""
    for k in range(5):
        x = left + plot * k / 4
        body += f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{top_pad}" y2="{height - 34}"/>'
        body += f'<text class="axis" x="{x:.1f}" y="{height - 20}" text-anchor="middle">{fmt(scale_max * k / 4)}</text>'
    body += f'<text class="axis" x="{left + plot / 2:.0f}" y="{height - 4}" text-anchor="middle">{_e(unit_label)}</text>'
    for i, (name, values) in enumerate(items):
        y = top_pad + i * row_h
        body += f'<text x="{left - 8}" y="{y + 16}" text-anchor="end">{_e(name)}</text>'
        for j, (value, fill, label) in enumerate(values):
            if value is None:
                continue
            w = plot * min(value / scale_max, 1) if scale_max else 0
            h = 16 / len(values)
            body += (f'<rect x="{left}" y="{y + 4 + j * h:.1f}" width="{max(w, 1):.1f}" height="{h - 1:.1f}" '
                     f'fill="{fill}"><title>{_e(name)} {_e(label)}: {fmt(value)}</title></rect>')
    return _svg(title, width, height, body)


def _success(skills):
    title = "Success rate, by skill"
    items = [(s["name"], [(s["successRate"], "var(--c2)" if (s["successRate"] or 0) >= 0.9 else "var(--bad)",
                           "success rate")]) for s in skills]
    chart = _bars(title, items, 1.0, "calls that succeeded", lambda v: f"{v:.0%}")
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
                                              "Completion tokens"], rows, numeric=(1, 2, 3, 4, 5)))


def _durations(skills):
    title = "Duration, by skill: median (p50) and p95"
    timed = [s for s in skills if s.get("type") not in ("prompt", "unknown")]  # unknown: read as a prompt
    largest = nice_top(max([s.get("p95Ms") or 0 for s in timed] + [1]))
    items = [(s["name"], [(s.get("p50Ms"), "var(--c0)", "p50"), (s.get("p95Ms"), "var(--c1)", "p95")]) for s in timed]
    chart = _bars(title, items, largest, "milliseconds (p50 above, p95 below)", lambda v: f"{v:,.0f}")
    rows = [[_e(s["name"]), _ms(s.get("p50Ms")), _ms(s.get("p95Ms")), _ms(s["avgDurationMs"])] for s in timed]
    note = ('<p><span><i class="swatch" style="background:var(--c0)"></i>p50</span> '
            '<span><i class="swatch" style="background:var(--c1)"></i>p95</span></p>')
    return _section(title, chart, _table(title, ["Skill", "p50", "p95", "Average"], rows, numeric=(1, 2, 3)), note)


def _failures(failures, days):
    """Failed calls per day, on the same days as the calls per day."""
    title = "Failures over time"
    per_day = dict.fromkeys(days, 0)
    for f in failures:
        per_day[f["date"]] = per_day.get(f["date"], 0) + f["count"]
    width, height, left, bottom, top_pad = 720, 180, 44, 40, 12
    largest = nice_top(max(list(per_day.values()) + [1]))
    step = (width - left - 10) / max(len(days), 1)
    body = _y_axis(largest, left, width, height, bottom, top_pad, "failed calls")
    for i, day in enumerate(days):
        if not per_day[day]:
            continue
        h = (height - bottom - top_pad) * per_day[day] / largest
        body += (f'<rect x="{left + i * step + 1:.1f}" y="{height - bottom - h:.1f}" width="{max(step - 2, 1):.1f}" '
                 f'height="{h:.1f}" fill="var(--bad)"><title>{_e(day)}: {per_day[day]}</title></rect>')
    for i, day in enumerate(days):
        if len(days) <= 14 or i % max(1, len(days) // 10) == 0:
            body += f'<text class="axis" x="{left + i * step + step / 2:.1f}" y="{height - bottom + 14}" text-anchor="middle">{_e(day[5:])}</text>'
    body += f'<text class="axis" x="{(left + width) / 2:.0f}" y="{height - 6}" text-anchor="middle">day (month-day)</text>'
    rows = [[_e(f["date"]), _e(f["skill"]), f'{f["count"]:,}', f'<span class="bad">{_e(f["error"])}</span>']
            for f in failures]
    if not failures:
        return _section(title, "<p>No call failed in this window.</p>", _table(title, ["Day", "Skill", "Calls", "Error"], []))
    return _section(title, _svg(title, width, height, body),
                    _table(title, ["Day", "Skill", "Calls", "Error"], rows, numeric=(2,)))


def _sessions(found):
    title = "Sessions"
    rows = [[_e(s["id"]), _e(s["first"][:16].replace("T", " ")), _e(s["last"][:16].replace("T", " ")),
             f"{s['calls']:,}", f"{s['failures']:,}", _e(", ".join(s["skills"]))] for s in found]
    table = _table(title, ["Session", "First call (UTC)", "Last call (UTC)", "Calls", "Failed", "Skills"], rows,
                   numeric=(3, 4))
    return (f"<section><h2>{_e(title)}</h2><p>Each agent session (NEXUS_SESSION_ID) in this window, newest first; "
            f"\"-\" gathers the calls made without one.</p>{table}</section>")


def _health(found):
    title = "Degraded and drifted skills"
    if not found:
        return f"<section><h2>{_e(title)}</h2><p>None: every skill works as it used to.</p></section>"
    rows = [[_e(name), _e(flag), _e(why)] for name, flag, why in found]
    return f"<section><h2>{_e(title)}</h2>{_table(title, ['Skill', 'Flag', 'Why'], rows)}</section>"
