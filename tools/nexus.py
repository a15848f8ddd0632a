"""nexus: the skill gateway for AI agents.

Finds the skills an agent can use right now, runs them, and records every run.

Usage:
  nexus skills list [--ready | --locked | --all] [--json]
  nexus skills refresh
  nexus skills path
  nexus COMMAND... --help
  nexus (-h | --help | --version)

Commands:
  skills list     List skills grouped by status: ready, needs setup, not installed, disabled.
  skills refresh  Rescan every skill source and rewrite the manifest.
  skills path     Print every skill source folder, lowest precedence first.

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
}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    for words in (2, 1):
        target = COMMANDS.get(" ".join(argv[:words])) if len(argv) >= words else None
        if target:
            import importlib

            module, function = target.split(":")
            return getattr(importlib.import_module(module), function)(argv[words:])
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
