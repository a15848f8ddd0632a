"""`nexus mcp config`: the entry that registers nexus-mcp with an MCP client, and that entry written into
the client's project file, leaving every other server (and, in TOML, every other line) as it was."""

import json
import os

from .. import fileio
from ..agents import instructions
from ..errors import BadInput, UsageError

SERVER = "nexus"  # the name nexus has among a client's servers
CARRIED_ENV = ("NEXUS_HOME", "NEXUS_CONFIG", "MANAGED_SKILLS_DIR")  # a client may not start it from your shell

# client -> (its project file, under which key it lists servers, extra fields of an entry)
CLIENTS = {
    "claude-code": (".mcp.json", "mcpServers", {"type": "stdio"}),
    "cursor": (".cursor/mcp.json", "mcpServers", {}),
    "vscode": (".vscode/mcp.json", "servers", {"type": "stdio"}),
    "codex": (".codex/config.toml", "mcp_servers", {}),
    "gemini": (".gemini/settings.json", "mcpServers", {}),
}


def check(client):
    if client not in CLIENTS:
        raise UsageError(f"unknown client '{client}': use one of {', '.join(CLIENTS)}")
    return CLIENTS[client]


def entry(client):
    """nexus's entry among the client's servers: the command, and the nexus variables set here."""
    _, _, extra = check(client)
    env = {name: os.environ[name] for name in CARRIED_ENV if os.environ.get(name)}
    return {**extra, "command": "nexus-mcp", "args": [], **({"env": env} if env else {})}


def snippet(client):
    """The smallest project file for `client` that registers nexus."""
    path, key, _ = check(client)
    document = {key: {SERVER: entry(client)}}
    return toml_text(document) if path.endswith(".toml") else json_text(document)


def json_text(document):
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def toml_text(document):
    import tomli_w  # only for a client whose file is TOML (codex)

    return tomli_w.dumps(document)


def project_file(client, project):
    """The client's file in `project`, its symlinks followed; NexusError when it, or a folder on the way,
    leads out of the project."""
    relative, _, _ = check(client)
    if not os.path.isdir(project):
        raise UsageError(f"'{project}' is not a folder")
    return fileio.inside(os.path.join(project, relative), project)


def write(client, project):
    """Add nexus to the client's project file (made if need be); its path."""
    path = project_file(client, project)
    _, key, _ = check(client)
    wanted = entry(client)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as e:
        raise BadInput(f"cannot create '{os.path.dirname(path)}': {e.strerror}") from None
    old, _ = instructions.read_text(path)
    change = with_toml_entry if path.endswith(".toml") else with_json_entry
    new = change(old, key, wanted, path)
    return path if new == old else instructions.rewrite(path, lambda _: new, project)


def with_json_entry(old, key, wanted, path):
    """The JSON document `old` with servers[nexus] = wanted; unchanged when it is so already."""
    try:
        document = json.loads(old) if old.strip() else {}
    except ValueError as e:
        raise BadInput(f"'{path}' is not JSON ({e}); add the entry that `nexus mcp config` prints by hand") from None
    servers = document.setdefault(key, {}) if isinstance(document, dict) else None
    if not isinstance(servers, dict):
        raise BadInput(f"'{path}': expected an object with an object '{key}'")
    if servers.get(SERVER) == wanted:
        return old
    servers[SERVER] = wanted
    return json_text(document)


def with_toml_entry(old, key, wanted, path):
    """The TOML text `old` with [key.nexus] = wanted: appended, or its own lines replaced; every other
    line kept as it is, and the outcome read back to make sure of it."""
    import tomllib  # only for a client whose file is TOML (codex)

    try:
        before = tomllib.loads(old)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise BadInput(f"'{path}' is not TOML: {e}") from None
    servers = before.get(key, {})
    if servers.get(SERVER) == wanted:
        return old
    block = toml_text({key: {SERVER: wanted}})
    if SERVER in servers:
        new = _replace_tables(old, f"{key}.{SERVER}", block, path)
    else:
        new = old + ("\n" if old and not old.endswith("\n") else "") + ("\n" if old.strip() else "") + block
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        after = {}
    if after.get(key, {}).get(SERVER) != wanted or _without_ours(after, key) != _without_ours(before, key):
        raise BadInput(f"'{path}': could not put [{key}.{SERVER}] in its place; edit it by hand")
    return new


def _without_ours(document, key):
    return {**document, key: {name: server for name, server in document.get(key, {}).items() if name != SERVER}}


def _replace_tables(text, table, block, path):
    """`text` with the tables [table] and [table.*] (their header and lines) replaced by `block`."""
    lines, kept, ours, placed = text.splitlines(keepends=True), [], False, False
    for line in lines:
        header = line.strip()
        if header.startswith("["):
            name = header.split("#")[0].strip().strip("[]").replace(" ", "")
            ours = name == table or name.startswith(table + ".")
            if ours and not placed:
                kept.append(block)
                placed = True
        if not ours:
            kept.append(line)
    if not placed:
        raise BadInput(f"'{path}': [{table}] is not a table of its own; edit it by hand")
    return "".join(kept)
