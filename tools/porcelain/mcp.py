"""`nexus mcp config`, which registers the MCP server (`nexus mcp`, `nexus-mcp`) with a client."""

from nexus.mcp import clients


def config(ctx):
    """Prints the entry that registers nexus-mcp with the client, as the client's project file holds it:
    claude-code: .mcp.json (mcpServers); cursor: .cursor/mcp.json (mcpServers); vscode:
    .vscode/mcp.json (servers); codex: .codex/config.toml ([mcp_servers.nexus], read in trusted
    projects); gemini: .gemini/settings.json (mcpServers). The entry starts `nexus-mcp` from PATH, with
    NEXUS_HOME, NEXUS_CONFIG and MANAGED_SKILLS_DIR when they are set here, since a client may not
    start it from your shell. --write never writes through a symlink that leads out of the project
    (exit 1), and leaves a JSON file with comments, or a TOML file whose nexus entry is not a table
    of its own, for you to edit (exit 2).

    Examples:
      nexus mcp config --client claude-code --write
      nexus mcp config --client codex >> ~/.codex/config.toml   # for every project
    """
    args = ctx.args
    if args["--write"]:
        return clients.write(args["--client"], args["--dir"]) + "\n"
    text = clients.snippet(args["--client"])
    where = clients.CLIENTS[args["--client"]][0]
    ctx.warn(f"this goes in {where} in the project (or run with --write)")
    return text
