"""nexus: the dispatcher of `nexus COMMAND`. What each command is, and the help made from that, is the
command table's (tools/commands.py)."""

import sys

from nexus import __version__
from nexus.catalog import scope
from nexus.cli.command import call, meant, streams_ready
from nexus.cli.records import definition
from nexus.tools.commands import COMMANDS, GROUPS, HIDDEN, group_help, named, overview, prepared, suggestion


def short_overview():
    """What `nexus` alone says: the groups of commands, and where to read more."""
    singles = [c for c in COMMANDS if " " not in c.words and c.words not in GROUPS]  # `mcp` is listed as a group
    lines = ["usage: nexus COMMAND [ARGS...]", "", "Commands, by group (nexus GROUP --help lists a group's):"]
    width = max(len(w) for w in list(GROUPS) + [c.words for c in singles])
    lines += [line for group, about in GROUPS.items() for line in definition(group, about, width)]
    lines += [line for c in singles for line in definition(c.words, c.summary, width)]
    lines += ["", "See 'nexus --help' for every command, 'nexus help COMMAND' for one."]
    return "\n".join(lines) + "\n"


def not_a_command(argv):
    """What nexus says to a first word that is no command, group or option: the one meant, if it is close."""
    if argv[0].startswith("-"):
        flags = ["--help", "--version", *(c.words for c in HIDDEN)]
        return f"nexus: unknown option {argv[0]}{meant(argv[0], flags)}"
    guess = suggestion(argv)
    return f"nexus: '{' '.join(argv[:2])}' is not a nexus command" + (f". Did you mean 'nexus {guess}'?" if guess else "")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not streams_ready("nexus"):
        return 2
    argv, failed = prepared("nexus", argv, scope.take_option)
    if failed is not None:
        return failed
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

