"""`nexus mcp config`, which registers the MCP server (`nexus mcp`, `nexus-mcp`) with a client, and `nexus mcp
token`, the bearer tokens of `nexus-mcp --http`."""

import json

from nexus import style
from nexus.catalog import scope
from nexus.errors import NexusError, UsageError
from nexus.mcp import clients, tokens


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

    With --url, the entry reaches nexus-mcp --http at that URL instead, in the client's own shape (claude-code,
    cursor, vscode, windsurf, gemini, codex, opencode); --token-env VAR has the client send the bearer token
    it reads from the variable VAR as it starts (${VAR}, ${env:VAR}, {env:VAR} or Codex's
    bearer_token_env_var): the token itself is never written in the file.

    Writing edits the file in place: only the nexus entry's bytes change, comments (JSONC), formatting
    and every other server stay as they are, and the old file is kept as FILE.bak. It refuses a
    read-only file, and a nexus entry that differs from the one it writes (--write and --remove keep it
    without --force) (exit 1), and leaves a file it cannot read, or whose entry it cannot change without
    changing more, for you to edit (exit 2). A file
    with several hard links is written through, so every link keeps showing it; one in the project is
    never written through a symlink that leads out of the project (exit 1).

    Examples:
      nexus mcp config --client claude-code --write
      nexus mcp config --client codex --scope user --write   # for every project
      nexus mcp config --client claude-desktop --write
      nexus mcp config --client codex --url https://box:8765/mcp --token-env TOKEN
      nexus mcp config --list-clients
    """
    args = ctx.args
    if args["--list-clients"]:
        rows = clients.listing()
        if args["--json"]:
            return json.dumps(rows, indent=2) + "\n"
        cells = [[r["client"], r["format"], r["project"] or "-", r["user"] or "-"] for r in rows]
        import sys  # a person's listing only: the terminal it is fitted to

        columns = style.Style(sys.stdout).columns
        return "\n".join(style.folded([["CLIENT", "FORMAT", "PROJECT FILE", "USER FILE"]] + cells, columns)) + "\n"
    chosen = clients.client(args["--client"])
    scope = clients.scope_of(chosen, args["--scope"])
    path = clients.where(chosen, scope, args["--dir"]) if args["--write"] or args["--remove"] else None
    try:  # the entry nexus would write: --remove takes out only that one, unless --force
        if args["--url"]:
            wanted = clients.http_entry(chosen, args["--url"], args["--token-env"], None if args["--remove"] else ctx.warn)
        else:
            wanted = clients.entry(chosen, scope, args["--command"], None if args["--remove"] else ctx.warn)
    except NexusError as e:
        if not args["--remove"] or isinstance(e, UsageError):
            raise
        wanted = {}  # nexus would write none here: whatever entry is there was written by someone else
    if args["--remove"]:
        return _changed(ctx, path, *clients.change(chosen, path, wanted, args["--force"], ctx.warn, remove=True))
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


def token(ctx):
    """add makes a token and prints it on stdout, the one time it is shown; nexus keeps only its SHA-256
    (in $NEXUS_HOME/state/nexus/mcp/tokens.json, 0600), so a token lost is revoked and made again. A client
    sends it with every request as `Authorization: Bearer TOKEN`. A running server takes a new token at once.

    list shows each token's name, profile, expiry and, for one with --max-calls, the calls it made of those
    it may make; never the token.

    revoke forgets a token: a running nexus-mcp --http refuses it from its next request (401), and within a
    second ends the sessions it opened, their calls in flight killed and logged as cancelled.

    Exit status:
      0  done
      1  add: a token of that name exists; revoke: there is no such token
      2  usage error, or a profile the config does not have

    Examples:
      nexus mcp token add ci --expires 30
      nexus mcp token add agent --profile PROFILE --max-calls 500
      nexus mcp token list
      nexus mcp token revoke ci
    """
    args = ctx.args
    if args["list"]:
        found = tokens.listing()
        return json.dumps(found, indent=2) + "\n" if args["--json"] else _tokens_table(found)
    if args["revoke"]:
        tokens.revoke(args["TOKEN"])
        ctx.warn(f"token {args['TOKEN']} revoked")
        return ""
    profile = args["--profile"]
    if profile:
        scope.chosen(ctx.config, profile)  # a profile the config lacks is a usage error
    made, record = tokens.add(args["TOKEN"], profile, args["--expires"], args["--max-calls"])
    if args["--json"]:
        return json.dumps({"name": record["name"], "token": made, "profile": profile, "expires": record["expires"],
                           "maxCalls": record["maxCalls"]}, indent=2) + "\n"
    ctx.warn(f"token {record['name']}" + (f" (profile {profile})" if profile else "")
             + (f", expires {record['expires']}" if record["expires"] else "")
             + ": shown this once; a client sends it as `Authorization: Bearer TOKEN`")
    return made + "\n"


def _tokens_table(found):
    if not found:
        return "No tokens: nexus-mcp --http lets nobody in. Make one with\n  nexus mcp token add NAME\n"
    rows = [[t["name"], t["profile"] or "-", (t["expires"] or "never") + (" (expired)" if t["expired"] else ""),
             f"{t['calls']}/{t['maxCalls']}" if t["maxCalls"] else "-", t["created"]] for t in found]
    return "\n".join(style.table([["NAME", "PROFILE", "EXPIRES", "CALLS", "CREATED"]] + rows, "")) + "\n"
