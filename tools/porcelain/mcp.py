"""`nexus mcp config`, which registers the MCP server (`nexus mcp`, `nexus-mcp`) with a client."""

import json

from nexus import style
from nexus.mcp import clients


def config(ctx):
    """
    Clients:
      claude-code     project .mcp.json; user ~/.claude.json
      claude-desktop  user Claude/claude_desktop_config.json in the app data
      cursor          project .cursor/mcp.json; user ~/.cursor/mcp.json
      vscode          project .vscode/mcp.json; user Code/User/mcp.json in the app data
      windsurf        user ~/.codeium/windsurf/mcp_config.json
      zed             user ~/.config/zed/settings.json
      codex           project .codex/config.toml; user ~/.codex/config.toml ($CODEX_HOME)
      gemini          project .gemini/settings.json; user ~/.gemini/settings.json
      goose           user ~/.config/goose/config.yaml
      cline           user cline_mcp_settings.json in VS Code's globalStorage
      roo-code        project .roo/mcp.json; user mcp_settings.json in VS Code's globalStorage
      kiro            project .kiro/settings/mcp.json; user ~/.kiro/settings/mcp.json
      copilot-cli     user ~/.copilot/mcp-config.json
      opencode        project opencode.json; user ~/.config/opencode/opencode.json
      continue        project .continue/mcpServers/nexus.yaml

    The app data is ~/Library/Application Support on macOS, %APPDATA% on Windows, ~/.config elsewhere
    ($XDG_CONFIG_HOME); --list-clients gives the paths on this machine.

    Prints the entry that registers nexus-mcp with the client, as the client's file holds it. The entry
    starts nexus-mcp by its absolute path, since a client started from a desktop has no PATH of your
    shell, with NEXUS_HOME, NEXUS_CONFIG and MANAGED_SKILLS_DIR when they are set here; a command in a
    folder that looks temporary is warned about. A project file carries nothing personal: a path in
    your home folder is written with the client's variable for it (${HOME} for claude-code and gemini,
    ${userHome} for cursor and vscode, {env:HOME} for opencode), and is refused for a client that has
    none (use --scope user).

    Writing edits the file in place: only the nexus entry's bytes change, comments (JSONC), formatting
    and every other server stay as they are, and the old file is kept as FILE.bak. It refuses a
    read-only file and a nexus entry that differs (without --force) (exit 1), and leaves a file it
    cannot read, or whose entry it cannot change without changing more, for you to edit (exit 2). A file
    with several hard links is written through, so every link keeps showing it; one in the project is
    never written through a symlink that leads out of the project (exit 1).

    Examples:
      nexus mcp config --client claude-code --write
      nexus mcp config --client codex --scope user --write   # for every project
      nexus mcp config --client claude-desktop --write
      nexus mcp config --list-clients
    """
    args = ctx.args
    if args["--list-clients"]:
        rows = clients.listing()
        if args["--json"]:
            return json.dumps(rows, indent=2) + "\n"
        cells = [[r["client"], r["format"], r["project"] or "-", r["user"] or "-"] for r in rows]
        return "\n".join(style.table([["CLIENT", "FORMAT", "PROJECT FILE", "USER FILE"]] + cells, "")) + "\n"
    chosen = clients.client(args["--client"])
    scope = clients.scope_of(chosen, args["--scope"])
    path = clients.where(chosen, scope, args["--dir"]) if args["--write"] or args["--remove"] else None
    if args["--remove"]:
        return _changed(ctx, path, *clients.change(chosen, path, None, warn=ctx.warn))
    wanted = clients.entry(chosen, scope, args["--command"], ctx.warn)
    if args["--write"]:
        return _changed(ctx, path, *clients.change(chosen, path, wanted, args["--force"], ctx.warn))
    where = chosen.project if scope == "project" else clients.tilde(chosen.user())
    ctx.warn(f"this goes in {where} (or run with --write)")
    return clients.snippet(chosen, wanted)


def _changed(ctx, path, outcome, backup):
    """The file's path on stdout; what happened to it on stderr."""
    ctx.warn(f"{path}: " + ("no nexus entry: unchanged" if outcome == "unchanged" and not ctx.args["--write"]
                            else f"nexus {outcome}") + (f" (the old file is kept as {backup})" if backup else ""))
    return path + "\n"
