"""Usage statistics as people read them: the layout of `nexus skill stats`, plain ASCII off a terminal.

Shared by `nexus skill stats` and `nexus-stats`, which print the same report.
"""

import datetime

from ..style import Style, ago, cells, clip, fitted, last_line, local, plural, visible, when
from . import stats

MOST_FAILURES = 10
CATEGORY_LABELS = {"userData": "User Data", "credentials": "Credentials", "prompts": "Prompts", "other": "Other"}


def _percent(rate):
    return "-" if rate is None else f"{rate:.1%}".replace(".0%", "%")


def _duration(record, key="avgDurationMs"):
    ms = record.get(key)
    if record["type"] in ("prompt", "unknown"):  # unknown: read as a prompt, and said as what it is
        return f"({record['type']})" if key == "avgDurationMs" else "-"
    if ms is None:
        return "-"
    return f"{ms}ms" if ms < 100 else f"{ms / 1000:.1f}s"


def _window(report):
    """The window the figures cover: the past N days, or where rotation cut a log within them, since when."""
    cut = report.get("logsSince") or {}
    said = f"past {plural(report['days'], 'day')}"
    if not cut:
        return said
    since = local(max(cut.values()))[:10]
    whose = "" if list(cut) == [report.get("name")] else f" of {_names(sorted(cut))}"
    return f"{said}; the log{'s' if len(cut) > 1 else ''}{whose} hold{'' if len(cut) > 1 else 's'} calls since {since} only"


def _all_skills(report, style):
    lines = [*style.header("NEXUS SKILL USAGE STATISTICS"), "",
             f"Total invocations: {report['totalInvocations']:,} ({_window(report)})"]
    if not report["skills"]:
        return lines + ["", "No skill was used in this window."]
    lines.append(f"Overall success rate: {_percent(report['successRate'])}")
    rows = [["#", "Skill", "Calls", "Success", "Avg Time", "p50", "p95", "Last Used"]]
    rows += [[f"{rank}.", s["name"] + (" (removed)" if s["removed"] else ""), f"{s['totalInvocations']:,}",
              _percent(s["successRate"]), _duration(s), _duration(s, "p50Ms"), _duration(s, "p95Ms"), ago(s["lastUsed"])]
             for rank, s in enumerate(report["skills"], 1)]
    lines += ["", "Most Used Skills:", *fitted(rows, style.columns, give=(7, 1), indent="  ")]
    if report["recentFailures"]:
        lines += ["", f"Recent Failures (past {plural(stats.recent_days(report['days']), 'day')}):"]
        lines += [_quoted(f"  {style.bullet} {visible(f['skill'])}: ", f["error"], f" ({plural(f['count'], 'occurrence')})", style)
                  for f in report["recentFailures"][:MOST_FAILURES]]
        more = len(report["recentFailures"]) - MOST_FAILURES
        if more > 0:
            lines.append(f"  {style.bullet} {plural(more, 'other message')}: see --json")
    lines += _models(report, style)
    used = [c for c in report["categories"] if c["totalInvocations"]]
    width = max(len(f"{c['totalInvocations']:,}") for c in used)
    lines += ["", "Skill Categories:"]
    lines += [style.clip(f"  {CATEGORY_LABELS[c['name']] + ':':<13}{c['totalInvocations']:>{width},} "
                         f"{'call' if c['totalInvocations'] == 1 else 'calls'} ({_names(c['skills'])})") for c in used]
    return lines


def _models(report, style):
    """By model, when agents said theirs (NEXUS_MODEL): calls, success rate, tokens."""
    if not report.get("models"):
        return []
    rows = [["Model", "Calls", "Success", "Avg Time", "Prompt tokens", "Completion tokens"]]
    rows += [[m["name"], f"{m['totalInvocations']:,}", _percent(m["successRate"]), _duration({**m, "type": "tool"}),
              f"{m['promptTokens']:,}", f"{m['completionTokens']:,}"] for m in report["models"]]
    return ["", "By Model:", *fitted(rows, style.columns, give=(0,), indent="  ")]


def _quoted(head, error, tail, style):
    """A line that quotes the last line of an error (the whole window is in --json), cut to the terminal
    rather than losing its head or tail."""
    room = style.columns and max(style.columns - cells(head) - cells(tail) - 2, 12)
    return f'{head}"{clip(last_line(error), room)}"{tail}'


def _names(names, most=4):
    more = f", +{len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def _one_skill(report, style):
    lines = [*style.header(f"{report['name'].upper()} USAGE STATISTICS"), "",
             f"Total invocations: {report['totalInvocations']:,} ({_window(report)})"]
    if not report["totalInvocations"]:
        return lines + ["", f"'{report['name']}' was not used in this window."]
    lines += [f"Success rate: {_percent(report['successRate'])}",
              f"Average duration: {_duration(report)} (p50 {_duration(report, 'p50Ms')}, p95 {_duration(report, 'p95Ms')})",
              f"Last used: {when(report['lastUsed'])}",
              "", f"Daily Usage (past {plural(len(report['daily']), 'day')}):"]
    largest = max(d["calls"] for d in report["daily"])
    for day in report["daily"]:
        weekday = datetime.date.fromisoformat(day["date"]).strftime("%a")
        bar = style.bar(day["calls"], largest)
        lines.append(" ".join(part for part in (f"  {weekday}:", bar, f"{day['calls']:,}") if part))
    if report["commonCommands"]:
        lines += ["", "Most Common Commands:"]
        lines += [style.clip(f"  {rank}. {c['command'] or '(no arguments)'} ({plural(c['calls'], 'call')})")
                  for rank, c in enumerate(report["commonCommands"], 1)]
    if report["recentErrors"]:
        lines += ["", "Recent Errors:"]
        for error in report["recentErrors"]:
            resolved = " (resolved)" if error["resolved"] else ""
            lines.append(_quoted(f"  {style.bullet} {local(error['ts'])}: ", error["error"], resolved, style))
    return lines + _models(report, style)


def render(report, out):
    """The report as text: every skill, or one in detail."""
    style = Style(out)
    lines = _one_skill(report, style) if "daily" in report else _all_skills(report, style)
    out.write("\n".join(lines) + "\n")


def render_push(report, out):
    """What `nexus telemetry push` sent, and what rotation pruned before it could."""
    where = visible(report["endpoint"] or "-")
    lines = [f"{plural(report['sent'], 'span')} sent to {where}" if report["sent"] else "Nothing new to send."]
    lines += [f"  {visible(name)}: {count:,} {'entry' if count == 1 else 'entries'} pruned by rotation before they were sent"
              if count != "unknown" else f"  {visible(name)}: entries may have been pruned before they were sent"
              for name, count in sorted(report["prunedBySkill"].items())]
    out.write("\n".join(lines) + "\n")


def render_dry(report, out):
    """--dry-run: the spans that would be sent, as JSON (what the push would send, readable)."""
    import json  # indented, for a person

    out.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
