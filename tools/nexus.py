"""nexus: the dispatcher of `nexus COMMAND`. What each command is, and the help made from that, is the
command table's (tools/commands.py); `nexus skill run` takes its row alone (tools/plumbing/run.py), without the
table."""

import sys

from nexus import __version__
from nexus.catalog import scope
from nexus.cli.command import call, leave, prepared, streams_ready


def main(argv=None):
    as_script, argv = argv is None, sys.argv[1:] if argv is None else list(argv)
    if not streams_ready("nexus"):
        return 2
    argv, failed = prepared("nexus", argv, scope.take_option)
    if failed is not None:
        return failed
    if argv[:2] == ["skill", "run"]:  # the gateway: its row alone, and run as a script, it leaves at once
        from nexus.tools.plumbing.run import SKILL_RUN

        status = call(SKILL_RUN, argv[2:], "nexus")
        return leave(status) if as_script else status
    # every other command: the table (the gateway's row above never builds it)
    from nexus.tools.commands import GROUPS, HIDDEN, group_help, named, not_a_command, overview, short_overview

    if argv[:1] and argv[0] in GROUPS and argv[1:] in (["-h"], ["--help"]):
        sys.stdout.write(group_help(argv[0]))
        return 0
    command, rest = named(argv)
    if command:
        return call(command, rest, "nexus")
    for hidden in HIDDEN:
        if argv == [hidden.words]:
            return call(hidden, [], "nexus")
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(overview())
        return 0
    if argv == ["--version"]:
        print(f"nexus {__version__}")
        return 0
    if argv and argv[0] in GROUPS and not argv[1:]:
        sys.stderr.write(group_help(argv[0]))
        return 2
    if not argv:
        sys.stderr.write(short_overview())
        return 2
    print(not_a_command(argv), file=sys.stderr)
    print("See 'nexus --help' for every command.", file=sys.stderr)
    return 2

