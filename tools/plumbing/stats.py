"""nexus-stats: usage statistics from the per-skill usage logs, or from usage entries on stdin.

Its usage and options are its record in the command table (tools/commands.py).
"""

from nexus.cli.command import renders
from nexus.cli.output import piped_stdin
from nexus.usage import stats, telemetry, text


@renders(text.render, {"--dry-run": text.render_dry, "--otlp": text.render_push})
def usage_stats(ctx):
    """Streams usage entries as `nexus skill run` logs them ({"ts", "skill", "type", "ms", "exit", "error",
    "args", ...}) and keeps only running figures, so logs of any size take little memory. For every
    skill: total invocations, success rate, average duration, last use, recent failures grouped by
    message, and calls per category, from each skill's metadata: user data (a tool that signs in to
    the user's accounts), credentials (it needs a secret: primaryEnv, requires.env), prompts, other.
    With NAME, one skill in detail: calls per day over the past week, its most common commands and
    its latest errors.

    With --otlp, the plumbing of `nexus telemetry push` (see it): the entries not sent yet go to the
    OpenTelemetry collector as spans; what rotation pruned before it was sent is counted and said.

    A line that is not a JSON object, an entry without a valid ts, skill, type or ms, and an
    entry timestamped in the future are skipped, reported on stderr per file and counted in
    skippedLines. A success is an exit code of 0, or no error logged for a call without one.

    Exit status:
      0  success
      1  NAME is not a skill and has no usage log
      2  usage error (--days not a whole number from 1 to 36500), or --stdin with nothing piped in

    Examples:
      nexus-stats --days 7
      nexus-stats disk-report --json | jq '.commonCommands'
      cat "$NEXUS_HOME"/state/nexus/skills/*/usage.log | nexus-stats --stdin
    """
    args = ctx.args
    if args["--otlp"]:
        return push(ctx)
    stream = None
    if args["--stdin"]:
        stream = piped_stdin("usage entries (JSON Lines)")
        if hasattr(stream, "reconfigure"):  # read as a log is read: a stray byte spoils one entry, not all
            stream.reconfigure(errors="replace", newline="\n")
    return stats.collect(ctx.config, args["--days"], args["NAME"], stream, warn=ctx.warn, session=args["--session"])


def push(ctx):
    """`nexus-stats --otlp`: what `nexus telemetry push` does."""
    return telemetry.push(ctx.config, ctx.args["--dry-run"], warn=ctx.warn)
