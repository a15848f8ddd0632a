"""nexus: the skill gateway for AI agents.

Finds the skills an agent can use right now, runs them, and records every run.
"""

import sys

from nexus import __version__
from nexus.catalog import scope
from nexus.cli.command import DOCUMENT, PROCESS, TEXT, Command, prepared, streams_ready

# The command table: the one description of every command. The dispatcher, `nexus --help`, each
# group's help, the man pages and the shell completions are all made from it.
COMMANDS = (
    Command("skills list", "skills:list_skills", DOCUMENT,
            "Skills grouped by status: ready, needs setup, not installed, disabled, invalid."),
    Command("skills refresh", "skills:refresh", DOCUMENT, "Rescan every skill source and rewrite the manifest."),
    Command("skills path", "skills:path", DOCUMENT, "Print every skill source folder, lowest precedence first."),
    Command("skills verify", "skill:verify_all", DOCUMENT,
            "Re-verify every skill never verified or verified over HOURS ago (for cron)."),
    Command("skills rotate", "usage:rotate", DOCUMENT, "Prune every usage log to its limits (for cron)."),
    Command("skills check", "check:check", DOCUMENT, "Lint SKILL.md files against the Agent Skills and nexus rules."),
    Command("skills audit", "audit:audit", DOCUMENT,
            "Read every file of skills for what hostile skills do: hidden text, pipe-to-shell, credentials, ..."),
    Command("skills cursor-rules", "agents:cursor_rules", TEXT,
            "The Cursor rules text; --write puts it in DIR/.cursor/rules/."),
    Command("skills agents-md", "agents:agents_md", TEXT,
            "The AGENTS.md skills section; --write updates only that section of FILE."),
    Command("skills prompt", "agents:prompt", TEXT, "The block of ready skills an agent's system prompt includes."),
    Command("skills add", "distribute:add", DOCUMENT, "Add skills from a folder or a git repository to the managed source."),
    Command("skills remove", "distribute:remove", DOCUMENT, "Remove added skills."),
    Command("skills update", "distribute:update", DOCUMENT, "Fetch added skills again and report which changed."),
    Command("skills link", "distribute:link", DOCUMENT,
            "Link the ready skills where an agent looks (cursor, claude-code, codex, agents)."),
    Command("skill install", "skill:install", DOCUMENT, "Run the install spec that fits this platform, then verify the skill."),
    Command("skill trust", "audit:trust", DOCUMENT,
            "Accept an added skill's files as they are now, after showing the change and its audit."),
    Command("skill show", "skill:show", DOCUMENT, "A skill's status, requirements, usage and prompt."),
    Command("skill verify", "skill:verify_skill", DOCUMENT, "Run a skill's verify command and record the outcome."),
    Command("skill run", "nexus.gateway.run:command", PROCESS,
            "The gateway: run a skill's tool or script, or print its prompt; every call is logged."),
    Command("skill stats", "usage:skill_stats", DOCUMENT, "Usage statistics, for every skill or one."),
    Command("skill enable", "config:enable_skill", DOCUMENT, "Enable a skill in the config (skills.entries.KEY.enabled)."),
    Command("skill disable", "config:disable_skill", DOCUMENT, "Disable a skill in the config: listed as disabled, never run."),
    Command("skill env", "config:set_env", DOCUMENT, "Set or remove environment variables the skill's tool gets."),
    Command("skill key", "config:store_key", DOCUMENT, "Store the skill's API key, read from stdin or asked for without echo."),
    Command("skill allow", "config:allow_skill", DOCUMENT,
            "Widen what a confined skill may do: network, a folder to write or read."),
    Command("config get", "config:get_key", DOCUMENT, "Print the value nexus uses for a key: the file's, else the default."),
    Command("config set", "config:set_key", DOCUMENT, "Set a key in the config, in place: comments and formatting stay."),
    Command("config unset", "config:unset_key", DOCUMENT, "Remove a key from the config: nexus then uses the default."),
    Command("config list", "config:list_keys", DOCUMENT, "Every key nexus knows, its value and where it comes from."),
    Command("config path", "config:show_path", DOCUMENT, "Print the path of the config file."),
    Command("config edit", "config:edit_file", DOCUMENT, "Edit the config in $VISUAL or $EDITOR; an invalid result is never saved."),
    Command("profiles", "profiles:list_profiles", DOCUMENT,
            "Each profile: what it allows and denies, and the skills an agent given it may see and run."),
    Command("status", "skills:status", DOCUMENT,
            "One line: how many skills are ready, need setup, are not installed, disabled."),
    Command("capabilities", "capabilities:list_capabilities", DOCUMENT,
            "Every capability: the skills that provide and need it, and the provider chosen."),
    Command("capability resolve", "capabilities:resolve", DOCUMENT,
            "The ready provider of a capability to use, for scripts; --explain ranks them all."),
    Command("connectors", "capabilities:list_connectors", DOCUMENT,
            "The accounts skills need connected (google, github, ...): connected, or the step that unlocks."),
    Command("sessions", "sessions:list_sessions", DOCUMENT,
            "Each session in the usage logs: its calls, skills, failures, first and last call."),
    Command("session show", "sessions:show", DOCUMENT, "One session's calls across every skill, in time order."),
    Command("session new", "sessions:new", TEXT, "A fresh session id, for NEXUS_SESSION_ID."),
    Command("session crystallize", "sessions:crystallize", DOCUMENT,
            "Turn a session's successful calls into a script skill that replays them."),
    Command("report", "usage:usage_report", DOCUMENT,
            "The usage report: one self-contained HTML file of charts and tables (-o FILE to write it)."),
    Command("jobs", "jobs:list_jobs", DOCUMENT, "Background runs (skill run --background): running and ended."),
    Command("job show", "jobs:show", DOCUMENT, "One background run: its status, exit, times and output files."),
    Command("job logs", "jobs:logs", PROCESS, "What a background run wrote; --follow until it ends."),
    Command("job wait", "jobs:wait", PROCESS, "Wait for a background run to end; exit with its status."),
    Command("job kill", "jobs:kill", DOCUMENT, "End a background run's whole process group."),
    Command("mcp", "mcp:serve", PROCESS, "Serve the ready skills to an agent over MCP (the same as nexus-mcp)."),
    Command("mcp config", "mcp:config", TEXT, "The entry that registers nexus with an MCP client; --write adds it."),
)

GROUPS = {  # the first word of a command -> what its commands are about
    "skills": "Every skill at once: list, check, verify, keep, hand to agents, add and link.",
    "skill": "One skill: show, run, verify, install, its usage statistics, and its config.",
    "config": "The config file (nexus.toml): get, set, unset, list, path, edit.",
    "capability": "A capability: which ready skill provides it.",
    "session": "One agent session: its calls, a fresh id, and a skill made from it.",
    "job": "One background run: show it, read its output, wait for it, end it.",
    "mcp": "The ready skills over the Model Context Protocol, for the agents that speak it.",
}

# Hidden commands, as git completes with --list-cmds: skill names from the manifest, and config keys.
LIST_SKILLS = Command("--list-skills", "agents:skill_names", TEXT, "Every skill name in the manifest (for completion).")
LIST_KEYS = Command("--list-keys", "config:key_names", TEXT, "Every config key (for completion).")

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


def _command_lines(commands, prefix=""):
    width = max(len(c.words) - len(prefix) for c in commands)
    return [f"  {c.words[len(prefix):]:<{width}}  {c.summary}" for c in commands]


def overview():
    """`nexus --help`: every command with its summary, by group."""
    lines = [__doc__.strip(), "", "Usage:", "  nexus COMMAND [ARGS...]", "  nexus COMMAND --help",
             "  nexus (-h | --help | --version)", "", "Commands:"]
    lines += _command_lines(COMMANDS)
    lines += ["", OPTIONS + "\n" + ENVIRONMENT + "\n" + EXIT_STATUS,
              "Each command is also a composable tool (nexus-discover, nexus-manifest, ...); see their --help."]
    return "\n".join(lines) + "\n"


def short_overview():
    """What `nexus` alone says: the groups of commands, and where to read more."""
    singles = [c for c in COMMANDS if " " not in c.words and c.words not in GROUPS]  # `mcp` is listed as a group
    lines = ["usage: nexus COMMAND [ARGS...]", "", "Commands, by group (nexus GROUP --help lists a group's):"]
    width = max(len(w) for w in list(GROUPS) + [c.words for c in singles])
    lines += [f"  {group:<{width}}  {about}" for group, about in GROUPS.items()]
    lines += [f"  {c.words:<{width}}  {c.summary}" for c in singles]
    lines += ["", "See 'nexus --help' for every command, 'nexus COMMAND --help' for one."]
    return "\n".join(lines) + "\n"


def suggestion(argv):
    """The command a mistyped one was likely meant to be, or None."""
    import difflib

    typed = " ".join(argv[:2])
    words = [c.words for c in COMMANDS] + list(GROUPS)
    close = difflib.get_close_matches(typed, words, n=1, cutoff=0.75) or difflib.get_close_matches(
        argv[0], list(GROUPS) + [c.words for c in COMMANDS if " " not in c.words], n=1, cutoff=0.6)
    return close[0] if close else None


def group_help(group):
    """`nexus skills --help`: the commands of one group, with their summaries."""
    commands = [c for c in COMMANDS if c.words.startswith(group + " ")]
    own = [c for c in COMMANDS if c.words == group]
    lines = [f"nexus {group}: {GROUPS[group]}", ""]
    if own:  # the group is a command too (`nexus mcp`): its help first
        lines.append(own[0].usage())
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
        return command.main(rest)
    for hidden in (LIST_SKILLS, LIST_KEYS):
        if argv == [hidden.words]:
            return hidden.main([])
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
    guess = suggestion(argv)
    print(f"nexus: '{' '.join(argv[:2])}' is not a nexus command" + (f". Did you mean 'nexus {guess}'?" if guess else ""),
          file=sys.stderr)
    print("See 'nexus --help' for every command.", file=sys.stderr)
    return 2
