"""The porcelain's usage and upkeep views: `nexus skill stats`, `nexus report` and `nexus skills rotate`."""

import os
import sys

from nexus import fileio, paths
from nexus.cli.command import renders
from nexus.errors import NexusError
from nexus.gateway import jobs
from nexus.state import usage_log
from nexus.style import plural
from nexus.usage import report, stats, text


@renders(text.render)
def skill_stats(ctx):
    """The figures come from the usage logs, which rotation keeps to the newest 5,000 entries per
    skill by default (skills.log.maxEntries); `nexus skill show` has the lifetime counters.
    To aggregate logs from elsewhere: cat */usage.log | nexus-stats --stdin.

    Exit status:
      0  success;  1  NAME is no skill and has no usage log, or --session has no call in the window;
      2  usage error
    """
    args = ctx.args
    found = stats.collect(ctx.config, args["--days"], args["NAME"], warn=ctx.warn, session=args["--session"],
                          profile=args["--profile"])
    if args["--session"] and not found["totalInvocations"]:  # a mistyped id, not a session without calls
        raise NexusError(f"no call of session {args['--session']!r} in the usage logs of the past {args['--days']} "
                         f"days{' for ' + args['NAME'] if args['NAME'] else ''}; see `nexus sessions`")
    return found


def render_rotate(report, out):
    out.write(f"nexus: rotated {plural(len(report['skills']), 'usage log')} to at most {report['maxEntries']:,} "
              f"entries and {report['maxBytes']:,} bytes each; removed {plural(report['jobsRemoved'], 'ended job')}\n")


@renders(render_rotate)
def rotate(ctx):
    """Each log keeps its newest entries: at most skills.log.maxEntries (default 5000) and
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
    out.write(report.render(data))


def render_written(data, out):
    """-o FILE: the path of the file written."""
    out.write(f"{data['file']}\n")


@renders(render_report, {"-o": render_written})
def usage_report(ctx):
    """One self-contained HTML file (no network, no scripts, no fonts; inline SVG and CSS; light and dark
    colours follow the reader's preference): calls per day by skill, success rate, p50 and p95
    durations, failures over time with their messages, sessions, and the skills that are degraded or
    have drifted. Each chart comes with a table of the same figures, which are those of
    `nexus skill stats --json`.

    Examples:
      nexus report -o ~/nexus-report.html
      nexus report --days 7 > week.html
    """
    data = report.collect(ctx.config, ctx.args["--days"], ctx.warn)
    target = ctx.args["-o"]
    if not target and not ctx.json and sys.stdout.isatty():  # 20 KB of HTML is no use on a screen
        target = ctx.args["-o"] = DEFAULT_REPORT  # as if -o had named it: the renderer says where it went
        ctx.warn(f"a terminal shows no HTML: the report goes to {DEFAULT_REPORT} (-o FILE names another)")
    if target and not ctx.json:
        target = os.path.abspath(target)
        fileio.write_atomic(target, report.render(data).encode(), 0o600)  # private, as the logs it is made of
        return {"file": target}
    return data
