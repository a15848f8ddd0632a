"""The porcelain's usage and upkeep views: `nexus skill stats`, `nexus report` and `nexus skills rotate`."""

import os
import sys

from nexus import fileio, paths
from nexus.cli.command import renders
from nexus.gateway import jobs
from nexus.state import usage_log
from nexus.style import plural
from nexus.usage import report, stats, text


@renders(text.render)
def skill_stats(ctx):
    """Usage:
      nexus skill stats [NAME] [--days N] [--session ID] [--profile NAME] [--json]
      nexus skill stats (-h | --help)

    Options:
      --days N        The window: the past N days [default: 30].
      --session ID    Only the calls of one session (NEXUS_SESSION_ID; see `nexus sessions`).
      --profile NAME  Only the calls made under one profile (see `nexus profiles`).
      --json          Every figure as numbers and ISO timestamps, as `nexus-stats --json` prints them.
      -h --help       Show this help.

    The figures come from the usage logs, which rotation keeps to the newest 5,000 entries per
    skill by default (skills.log.maxEntries); `nexus skill show` has the lifetime counters.
    To aggregate logs from elsewhere: cat */usage.log | nexus-stats --stdin.
    """
    days = stats.parse_days(ctx.args["--days"])
    return stats.collect(ctx.config, days, ctx.args["NAME"], warn=ctx.warn, session=ctx.args["--session"],
                         profile=ctx.args["--profile"])


def render_rotate(report, out):
    out.write(f"nexus: rotated {plural(len(report['skills']), 'usage log')} to at most {report['maxEntries']} "
              f"entries and {report['maxBytes']} bytes each; removed {plural(report['jobsRemoved'], 'ended job')}\n")


@renders(render_rotate)
def rotate(ctx):
    """Usage:
      nexus skills rotate [--json]
      nexus skills rotate (-h | --help)

    Options:
      --json     Print {"skills": [{"name", "logEntries"}], "maxEntries", "maxBytes", "jobsRemoved"}.
      -h --help  Show this help.

    Each log keeps its newest entries: at most skills.log.maxEntries (default 5000) and
    skills.log.maxBytes (default 2 MB), set with `nexus config set`. Safe while skills run: a log is
    rotated under its skill's lock, so an entry written meanwhile is never lost. Background runs that
    ended over 7 days ago are removed too, with their output.

    Example crontab line:
      17 3 * * *  nexus skills rotate >/dev/null
    """
    max_entries, max_bytes = usage_log.limits(ctx.config)
    rotated = []
    for name in usage_log.logged_skills():
        try:
            rotated.append({"name": name, "logEntries": usage_log.rotate(name, ctx.config)})
        except OSError as e:
            ctx.warn(f"cannot rotate '{paths.usage_log(name)}': {e.strerror}")
            ctx.status = 1
    return {"skills": rotated, "maxEntries": max_entries, "maxBytes": max_bytes, "jobsRemoved": jobs.prune(warn=ctx.warn)}


DEFAULT_REPORT = "nexus-report.html"


def render_report(data, out):
    out.write(f"{data['file']}\n" if "file" in data else report.render(data))


@renders(render_report)
def usage_report(ctx):
    """Usage:
      nexus report [--days N] [-o FILE] [--json]
      nexus report (-h | --help)

    Options:
      --days N       The window: the past N days [default: 30].
      -o FILE        Write the report to FILE (atomically) and print its path. Without it, the
                     report goes to stdout, or, when stdout is a terminal, to nexus-report.html
                     in the current folder.
      --json         The figures the report shows, as JSON, instead of the report.
      -h --help      Show this help.

    One self-contained HTML file (no network, no scripts, no fonts; inline SVG and CSS; light and dark
    colours follow the reader's preference): calls per day by skill, success rate, p50 and p95
    durations, failures over time with their messages, sessions, and the skills that are degraded or
    have drifted. Each chart comes with a table of the same figures, which are those of
    `nexus skill stats --json`.

    Examples:
      nexus report -o ~/nexus-report.html
      nexus report --days 7 > week.html
    """
    data = report.collect(ctx.config, stats.parse_days(ctx.args["--days"]), ctx.warn)
    target = ctx.args["-o"]
    if not target and not ctx.json and sys.stdout.isatty():  # 20 KB of HTML is no use on a screen
        target = DEFAULT_REPORT
        ctx.warn(f"a terminal shows no HTML: the report goes to {DEFAULT_REPORT} (-o FILE names another)")
    if target and not ctx.json:
        target = os.path.abspath(target)
        fileio.write_atomic(target, report.render(data).encode(), 0o600)  # private, as the logs it is made of
        return {"file": target}
    return data
