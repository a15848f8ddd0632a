"""`nexus mcp`: the ready skills served to MCP clients (the same server as `nexus-mcp`), and
`nexus mcp config`, which registers it with a client."""

import sys

from nexus.mcp import clients, command


def serve(ctx):
    return command.command(ctx)


serve.__doc__ = command.DESCRIPTION + "\n" + command.usage("nexus mcp")


def config(ctx):
    """Usage:
      nexus mcp config --client CLIENT [--write] [--dir DIR]
      nexus mcp config (-h | --help)

    Options:
      --client CLIENT  claude-code, cursor, vscode, codex or gemini.
      --write          Add the entry to the client's file in the project instead, and print the file's
                       path: every other server in it stays as it is.
      --dir DIR        The project folder [default: .].
      -h --help        Show this help.

    Prints the entry that registers nexus-mcp with the client, as the client's project file holds it:
    claude-code: .mcp.json (mcpServers); cursor: .cursor/mcp.json (mcpServers); vscode:
    .vscode/mcp.json (servers); codex: .codex/config.toml ([mcp_servers.nexus], read in trusted
    projects); gemini: .gemini/settings.json (mcpServers). The entry starts `nexus-mcp` from PATH, with
    NEXUS_HOME, NEXUS_CONFIG and MANAGED_SKILLS_DIR when they are set here, since a client may not
    start it from your shell. --write never writes through a symlink that leads out of the project
    (exit 1), and leaves a JSON file with comments, or a TOML file whose nexus entry is not a table
    of its own, for you to edit (exit 2).

    Examples:
      nexus mcp config --client claude-code --write
      nexus mcp config --client codex >> ~/.codex/config.toml   # every project, not just this one
    """
    args = ctx.args
    if args["--write"]:
        return clients.write(args["--client"], args["--dir"]) + "\n"
    text = clients.snippet(args["--client"])
    where = clients.CLIENTS[args["--client"]][0]
    print(f"{ctx.prog}: this goes in {where} in the project (or run with --write)", file=sys.stderr)
    return text
