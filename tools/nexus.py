"""nexus: the skill gateway for AI agents.

Finds the skills an agent can use right now, runs them, and records every run.

Usage:
  nexus skills list [--ready | --locked | --all] [--json]
  nexus skills list --summary [--json]
  nexus skills refresh [--json]
  nexus skills path [--json]
  nexus skills verify --all [--stale HOURS] [--json] [--timeout SECONDS]
  nexus skills rotate [--json]
  nexus skills check [PATH...] [--strict] [--json]
  nexus skills cursor-rules [--write [DIR]]
  nexus skills agents-md [--write FILE]
  nexus skills prompt [--format xml|markdown]
  nexus skills add SOURCE [--skill NAME]... [--list] [--copy] [--force] [--json]
  nexus skills remove NAME...
  nexus skills update [NAME...] [--force] [--json]
  nexus skills link --agent AGENT [--dir DIR] [--unlink]
  nexus skill install NAME [--id ID] [--dry-run] [--yes]
  nexus skill show NAME [--json | --prompt-only]
  nexus skill verify NAME [--force] [--json] [--timeout SECONDS]
  nexus skill run NAME [--dry-run] [--no-verify] [--no-log] [--json] [--timeout SECONDS] [-- ARGS...]
  nexus skill stats [NAME] [--days N] [--json]
  nexus status [--json]
  nexus COMMAND... --help
  nexus (-h | --help | --version)

Commands:
  skills list          Skills grouped by status: ready, needs setup, not installed, disabled, invalid.
  skills refresh       Rescan every skill source and rewrite the manifest.
  skills path          Print every skill source folder, lowest precedence first.
  skills verify        Re-verify every skill never verified or verified over HOURS ago (for cron).
  skills rotate        Prune every usage log to its limits (for cron).
  skills check         Lint SKILL.md files against the Agent Skills and nexus rules.
  skills cursor-rules  The Cursor rules text; --write puts it in DIR/.cursor/rules/.
  skills agents-md     The AGENTS.md skills section; --write updates only that section of FILE.
  skills prompt        The block of ready skills an agent's system prompt includes.
  skills add           Add skills from a folder or a git repository to the managed source.
  skills remove        Remove added skills.
  skills update        Fetch added skills again and report which changed.
  skills link          Link the ready skills where an agent looks (cursor, claude-code, codex, agents).
  skill install        Run the install spec that fits this platform, then verify the skill.
  skill show           A skill's status, requirements, usage and prompt.
  skill verify         Run a skill's verify command and record the outcome.
  skill run            The gateway: run a skill's tool or script, or print its prompt; every call is logged.
  skill stats          Usage statistics, for every skill or one.
  status               One line: how many skills are ready, need setup, are not installed, disabled.

Options:
  -h --help  Show this help; after a command, that command's help.
  --version  Print the version.

Environment:
  NEXUS_HOME          The nexus root (default ~/nexus): workspace skills, config, state.
  NEXUS_CONFIG        The config file (default $NEXUS_HOME/nexus.toml).
  MANAGED_SKILLS_DIR  The managed skills folder (default ~/.nexus/skills).
  NO_COLOR            Plain output even on a terminal.
  NEXUS_DEBUG=1       Show tracebacks.

Exit status:
  0  success; `skill run` passes the tool's own exit code through
  1  the gateway refused: not found, not installed, not configured
  2  usage error or unreadable input

Each command is also a composable tool (nexus-discover, nexus-manifest, ...); see their --help.
"""

import sys

# One dispatch table: command words -> "module:function", each function taking its argv.
COMMANDS = {
    "skills list": "nexus.tools.nexus_list:skills_list",
    "skills refresh": "nexus.tools.nexus_list:skills_refresh",
    "skills path": "nexus.tools.nexus_list:skills_path",
    "skills verify": "nexus.tools.nexus_skill:skills_verify",
    "skills rotate": "nexus.tools.nexus_stats:skills_rotate",
    "skills check": "nexus.tools.nexus_check:skills_check",
    "skills cursor-rules": "nexus.tools.nexus_integrate:cursor_rules",
    "skills agents-md": "nexus.tools.nexus_integrate:agents_md",
    "skills prompt": "nexus.tools.nexus_integrate:prompt",
    "skills add": "nexus.tools.nexus_add:skills_add",
    "skills remove": "nexus.tools.nexus_add:skills_remove",
    "skills update": "nexus.tools.nexus_add:skills_update",
    "skills link": "nexus.tools.nexus_add:skills_link",
    "skill install": "nexus.tools.nexus_add:skill_install",
    "skill show": "nexus.tools.nexus_skill:skill_show",
    "skill verify": "nexus.tools.nexus_skill:skill_verify",
    "skill run": "nexus.tools.run:main",
    "skill stats": "nexus.tools.nexus_stats:skill_stats",
    "status": "nexus.tools.nexus_stats:status",
}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv == ["--list-skills"]:  # hidden: skill names for shell completion, read from the manifest alone
        from nexus.tools.nexus_integrate import print_skill_names

        return print_skill_names()
    for words in (2, 1):
        target = COMMANDS.get(" ".join(argv[:words])) if len(argv) >= words else None
        if target:
            module, function = target.split(":")
            return getattr(__import__(module, fromlist=[function]), function)(argv[words:])
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(__doc__.strip("\n") + "\n")
        return 0
    if argv == ["--version"]:
        from nexus import __version__

        print(f"nexus {__version__}")
        return 0
    unknown = " ".join(argv) if argv else "(no command)"
    print(f"nexus: unknown command: {unknown}", file=sys.stderr)
    print("Commands: " + ", ".join(COMMANDS) + ". See 'nexus --help'.", file=sys.stderr)
    return 2
