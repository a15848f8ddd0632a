"""nexus-stats: usage statistics from the per-skill usage logs, or from usage entries on stdin.

Streams usage entries as `nexus skill run` logs them ({"ts", "skill", "type", "ms", "exit", "error",
"args", ...}) and keeps only running figures, so logs of any size take little memory. For every
skill: total invocations, success rate, average duration, last use, recent failures grouped by
message, and calls per category, from each skill's metadata: user data (a tool that signs in to
the user's accounts), credentials (it needs a secret: primaryEnv, requires.env), prompts, other.
With NAME, one skill in detail: calls per day over the past week, its most common commands and
its latest errors.

Usage:
  nexus-stats [NAME] [--days N] [--session ID] [--stdin] [--json]
  nexus-stats (-h | --help)

Options:
  --days N      The window: the past N days [default: 30].
  --session ID  Only the calls of one session (NEXUS_SESSION_ID; see `nexus sessions`).
  --stdin       Read usage entries (JSON Lines) from stdin instead of every
                $NEXUS_HOME/state/nexus/skills/NAME/usage.log.
  --json        One JSON document: totalInvocations, successRate (0 to 1), avgDurationMs,
                lastUsed, skills, recentFailures, categories, skippedLines; with NAME, that
                skill's figures with daily, commonCommands and recentErrors.
  -h --help     Show this help.

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
  cat "${NEXUS_HOME:-$HOME/nexus}"/state/nexus/skills/*/usage.log | nexus-stats --stdin --json
"""


from nexus.cli.command import DOCUMENT, renders, tool
from nexus.cli.output import piped_stdin
from nexus.usage import stats, text


@renders(text.render)
def usage_stats(ctx):
    args = ctx.args
    days = stats.parse_days(args["--days"])
    stream = None
    if args["--stdin"]:
        stream = piped_stdin("usage entries (JSON Lines)")
        if hasattr(stream, "reconfigure"):  # read as a log is read: a stray byte spoils one entry, not all
            stream.reconfigure(errors="replace", newline="\n")
    return stats.collect(ctx.config, days, args["NAME"], stream, warn=ctx.warn, session=args["--session"])


main = tool("nexus-stats", DOCUMENT, __doc__, usage_stats)
