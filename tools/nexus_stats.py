"""The porcelain's usage and upkeep views: `nexus skill stats`, `nexus status`, `nexus skills rotate`."""

import datetime
import sys

from nexus import cli, stats
from nexus.style import Style, ago, parse_iso, plural, table, truncate

PROG = "nexus"

STATS_DOC = """nexus skill stats: usage statistics, for every skill or one.

Usage:
  nexus skill stats [NAME] [--days N] [--json]
  nexus skill stats (-h | --help)

Options:
  --days N   The window: the past N days [default: 30].
  --json     Every figure as numbers and ISO timestamps, as `nexus-stats --json` prints them.
  -h --help  Show this help.

The figures come from the usage logs, which rotation keeps to the newest 5,000 entries per
skill by default (skills.log.maxEntries); `nexus skill show` has the lifetime counters.
To aggregate logs from elsewhere: cat */usage.log | nexus-stats --stdin.
"""

MOST_FAILURES = 10
CATEGORY_LABELS = {"userData": "User Data", "credentials": "Credentials", "prompts": "Prompts", "other": "Other"}


def _percent(rate):
    return "-" if rate is None else f"{rate:.1%}".replace(".0%", "%")


def _duration(record):
    ms = record["avgDurationMs"]
    if record["type"] == "prompt":
        return "(prompt)"
    if ms is None:
        return "-"
    return f"{ms}ms" if ms < 100 else f"{ms / 1000:.1f}s"


def _local_time(ts):
    return parse_iso(ts).astimezone().strftime("%Y-%m-%d %H:%M")


def _all_skills(report, style):
    lines = [*style.header("NEXUS SKILL USAGE STATISTICS"), "",
             f"Total invocations: {report['totalInvocations']} (past {plural(report['days'], 'day')})"]
    if not report["skills"]:
        return lines + ["", "No skill was used in this window."]
    lines.append(f"Overall success rate: {_percent(report['successRate'])}")
    rows = [["#", "Skill", "Calls", "Success", "Avg Time", "Last Used"]]
    rows += [[f"{rank}.", s["name"] + (" (removed)" if s["removed"] else ""), str(s["totalInvocations"]),
              _percent(s["successRate"]), _duration(s), ago(s["lastUsed"])]
             for rank, s in enumerate(report["skills"], 1)]
    lines += ["", "Most Used Skills:", *table(rows, indent="  ")]
    if report["recentFailures"]:
        lines += ["", f"Recent Failures (past {plural(stats.recent_days(report['days']), 'day')}):"]
        lines += [f'  {style.bullet} {f["skill"]}: "{truncate(f["error"], 60)}" ({plural(f["count"], "occurrence")})'
                  for f in report["recentFailures"][:MOST_FAILURES]]
        more = len(report["recentFailures"]) - MOST_FAILURES
        if more > 0:
            lines.append(f"  {style.bullet} {plural(more, 'other message')}: see --json")
    used = [c for c in report["categories"] if c["totalInvocations"]]
    width = max(len(str(c["totalInvocations"])) for c in used)
    lines += ["", "Skill Categories:"]
    lines += [f"  {CATEGORY_LABELS[c['name']] + ':':<13}{c['totalInvocations']:>{width}} "
              f"{'call' if c['totalInvocations'] == 1 else 'calls'} ({_names(c['skills'])})" for c in used]
    return lines


def _names(names, most=4):
    more = f", +{len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def _one_skill(report, style):
    lines = [*style.header(f"{report['name'].upper()} USAGE STATISTICS"), "",
             f"Total invocations: {report['totalInvocations']} (past {plural(report['days'], 'day')})"]
    if not report["totalInvocations"]:
        return lines + ["", f"'{report['name']}' was not used in this window."]
    lines += [f"Success rate: {_percent(report['successRate'])}",
              f"Average duration: {_duration(report)}",
              f"Last used: {ago(report['lastUsed'])}",
              "", f"Daily Usage (past {plural(len(report['daily']), 'day')}):"]
    largest = max(d["calls"] for d in report["daily"])
    for day in report["daily"]:
        weekday = datetime.date.fromisoformat(day["date"]).strftime("%a")
        bar = style.bar(day["calls"], largest)
        lines.append(" ".join(part for part in (f"  {weekday}:", bar, str(day["calls"])) if part))
    if report["commonCommands"]:
        lines += ["", "Most Common Commands:"]
        lines += [f"  {rank}. {truncate(c['command'], 50) or '(no arguments)'} ({plural(c['calls'], 'call')})"
                  for rank, c in enumerate(report["commonCommands"], 1)]
    if report["recentErrors"]:
        lines += ["", "Recent Errors:"]
        for error in report["recentErrors"]:
            resolved = " (resolved)" if error["resolved"] else ""
            lines.append(f'  {style.bullet} {_local_time(error["ts"])}: "{truncate(error["error"], 60)}"{resolved}')
    return lines


def human(report, out):
    """The layout of SKILL_GATEWAY_DESIGN.md, plain ASCII off a terminal."""
    style = Style(out)
    lines = _one_skill(report, style) if "daily" in report else _all_skills(report, style)
    out.write("\n".join(lines) + "\n")


@cli.command(PROG)
def skill_stats(argv):
    args = cli.parse(STATS_DOC, ["skill", "stats", *argv])
    days = stats.parse_days(args["--days"])
    report = stats.collect(days, args["NAME"], warn=lambda line: cli.warn(PROG, line))
    if args["--json"]:
        print(cli.dumps(report))
    else:
        human(report, sys.stdout)


STATUS_DOC = """nexus status: one line saying how many skills are ready, need setup, are not installed, disabled.

Usage:
  nexus status [--json]
  nexus status (-h | --help)

Options:
  --json     Print {"ready", "needsSetup", "notInstalled", "disabled", "invalid", "unsupported"}, each a count.
  -h --help  Show this help.

Skills whose `os` excludes this platform are not in the line (they are in --json as unsupported).
Broken SKILL.md files are counted as invalid, and named by `nexus skills list`.
"""

STATUS_KEYS = {"ready": "ready", "needs-setup": "needsSetup", "not-installed": "notInstalled",
               "disabled": "disabled", "invalid": "invalid", "unsupported": "unsupported"}


@cli.command(PROG)
def status(argv):
    import collections

    from nexus import catalog

    args = cli.parse(STATUS_DOC, ["status", *argv])
    _, records = catalog.load(lambda line: cli.warn(PROG, line))
    counts = collections.Counter(r["status"] for r in records)
    summary = {key: counts[name] for name, key in STATUS_KEYS.items()}
    if args["--json"]:
        print(cli.dumps(summary))
        return
    line = (f"nexus: {summary['ready']} ready, {summary['needsSetup']} need setup, "
            f"{summary['notInstalled']} not installed, {summary['disabled']} disabled")
    print(line + (f", {summary['invalid']} invalid" if summary["invalid"] else ""))


ROTATE_DOC = """nexus skills rotate: prune every usage log to its limits (for cron).

Usage:
  nexus skills rotate [--json]
  nexus skills rotate (-h | --help)

Options:
  --json     Print {"skills": [{"name", "logEntries"}], "maxEntries", "maxBytes"}.
  -h --help  Show this help.

Each log keeps its newest entries: at most skills.log.maxEntries (default 5000) and
skills.log.maxBytes (default 2 MB) in nexus.toml. Safe while skills run: a log is rotated
under its skill's lock, so an entry written meanwhile is never lost.

Example crontab line:
  17 3 * * *  nexus skills rotate >/dev/null
"""


@cli.command(PROG)
def skills_rotate(argv):
    from nexus import config as configlib, usage

    args = cli.parse(ROTATE_DOC, ["skills", "rotate", *argv])
    config = configlib.load()
    max_entries, max_bytes = usage.limits(config)
    rotated, failed = [], 0
    for name in usage.logged_skills():
        try:
            rotated.append({"name": name, "logEntries": usage.rotate(name, config)})
        except OSError as e:
            cli.warn(PROG, f"cannot rotate '{usage.log_path(name)}': {e.strerror}")
            failed += 1
    if args["--json"]:
        print(cli.dumps({"skills": rotated, "maxEntries": max_entries, "maxBytes": max_bytes}))
    else:
        print(f"nexus: rotated {plural(len(rotated), 'usage log')} to at most {max_entries} entries "
              f"and {max_bytes} bytes each")
    return 1 if failed else 0
