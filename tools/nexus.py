"""nexus: the skill gateway for AI agents.

Finds the skills an agent can use right now, runs them, and records every run.
"""

import sys

from nexus import __version__
from nexus.cli.command import call, meant, streams_ready
from nexus.cli.records import WIDTH, definition, reflow, wrap
from nexus.errors import UsageError
from nexus.catalog import scope
from nexus.tools.commands import COMMANDS, GROUPS, HIDDEN, prepared

OPTIONS = """\
Options:
  -h --help       Show this help; after a command, that command's help.
  --version       Print the version.
  --profile NAME  Before the command: only the skills of profile NAME (see `nexus profiles`).
"""

ENVIRONMENT = """\
Environment:
  NEXUS_HOME          The nexus root (default ~/nexus): workspace skills, config, state.
  NEXUS_CONFIG        The config file (default $NEXUS_HOME/nexus.toml); it must exist when named.
  MANAGED_SKILLS_DIR  The managed skills folder (default ~/.nexus/skills).
                      These three are absolute paths, or start with ~; a relative one is refused.
  NEXUS_SESSION_ID    Recorded with each call of a skill, so an agent's calls can be grouped.
  SOURCE_DATE_EPOCH   The time a manifest says it was generated (for reproducible output).
  NO_COLOR            Plain output even on a terminal.
  NEXUS_DEBUG=1       Show tracebacks.
"""

EXIT_STATUS = """\
Exit status:
  0  success
  1  the gateway refused: not found, disabled, not installed, not configured, verification failed
  2  usage error or unreadable input
  N  skill run: the tool's own exit status (128+N when it was killed by signal N, 124 after --timeout)
"""

TOOLS = "Each command is also a composable tool (nexus-discover, nexus-manifest, ...); see their --help.\n"


def _command_lines(commands, prefix=""):
    """`  words  summary` lines, the summary wrapped under itself to fit the width of --help."""
    width = max(len(c.words) - len(prefix) for c in commands)
    return [line for c in commands for line in definition(c.words[len(prefix):], c.summary, width)]


def overview():
    """`nexus --help`: every command with its summary, by group."""
    lines = [__doc__.strip(), "", "Usage:", "  nexus COMMAND [ARGS...]", "  nexus COMMAND --help",
             "  nexus help [COMMAND...]", "  nexus (-h | --help | --version)", "", "Commands:"]
    lines += _command_lines(COMMANDS)
    lines += ["", reflow(OPTIONS + "\n" + ENVIRONMENT + "\n" + EXIT_STATUS + "\n" + TOOLS)]
    return "\n".join(lines) + "\n"


def short_overview():
    """What `nexus` alone says: the groups of commands, and where to read more."""
    singles = [c for c in COMMANDS if " " not in c.words and c.words not in GROUPS]  # `mcp` is listed as a group
    lines = ["usage: nexus COMMAND [ARGS...]", "", "Commands, by group (nexus GROUP --help lists a group's):"]
    width = max(len(w) for w in list(GROUPS) + [c.words for c in singles])
    lines += [line for group, about in GROUPS.items() for line in definition(group, about, width)]
    lines += [line for c in singles for line in definition(c.words, c.summary, width)]
    lines += ["", "See 'nexus --help' for every command, 'nexus help COMMAND' for one."]
    return "\n".join(lines) + "\n"


def suggestion(argv):
    """The command a mistyped one was likely meant to be, or None."""
    import difflib  # a typo's hint: never on the way of a command that runs

    typed = " ".join(argv[:2])
    words = [c.words for c in COMMANDS] + list(GROUPS)
    close = difflib.get_close_matches(typed, words, n=1, cutoff=0.75) or difflib.get_close_matches(
        argv[0], list(GROUPS) + [c.words for c in COMMANDS if " " not in c.words], n=1, cutoff=0.6)
    return close[0] if close else None


def group_help(group):
    """`nexus skills --help`: the commands of one group, with their summaries."""
    commands = [c for c in COMMANDS if c.words.startswith(group + " ")]
    own = [c for c in COMMANDS if c.words == group]
    lines = [*wrap(f"nexus {group}: {GROUPS[group]}", WIDTH), ""]
    if own:  # the group is a command too (`nexus mcp`): its help first, without its title
        lines.append(own[0].help().partition("\n\n")[2])
    else:
        lines += ["Usage:", f"  nexus {group} COMMAND [ARGS...]", f"  nexus {group} COMMAND --help", ""]
    lines += ["Commands:", *_command_lines(commands, group + " ")]
    return "\n".join(lines) + "\n"


def find(argv):
    """The command named by the first words of argv (the longest match: `mcp config` before `mcp`),
    and the rest of argv."""
    found = [c for c in COMMANDS if argv[:len(c.words.split())] == c.words.split()]
    command = max(found, key=lambda c: len(c.words.split()), default=None)
    return command, argv[len(command.words.split()):] if command else argv


def help_text(ctx):
    """`nexus help` is `nexus --help`; `nexus help GROUP` is `nexus GROUP --help`; `nexus help COMMAND`
    is `nexus COMMAND --help`, as `git help` is."""
    words = ctx.args["COMMAND"]
    if not words:
        return overview()
    if words[0] in GROUPS and len(words) == 1 and words[0] not in [c.words for c in COMMANDS]:
        return group_help(words[0])
    command, rest = find(words)
    if command is None or rest:
        guess = suggestion(words)
        raise UsageError(f"'{' '.join(words)}' is not a nexus command" + (f": did you mean '{guess}'?" if guess else ""))
    return group_help(command.words) if command.words in GROUPS else command.help()


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
    command, rest = find(argv)
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

