"""`nexus mcp config`: the MCP clients nexus registers with, the entry each one reads, and that entry
written into the client's own file, in the project or for the user, as an editor would: only the nexus
entry's bytes change, a customised entry is kept unless forced, and the old file is kept as FILE.bak.

Each client's file, key and entry are as its documentation gives them (the README lists them).
"""

import difflib
import os
import sys
import tempfile

from .. import fileio, schema, urls
from ..errors import BadInput, NexusError, UsageError
from .formats import Json, Toml, Yaml

SERVER = "nexus"  # the name nexus has among a client's servers
CARRIED_ENV = ("NEXUS_HOME", "NEXUS_CONFIG", "MANAGED_SKILLS_DIR")  # a client may not start it from your shell
CODEX_TIMEOUTS = {"startup_timeout_sec": 30, "tool_timeout_sec": 600}  # its defaults: 10 s, 60 s
GOOSE_TIMEOUT = 600
SCOPES = ("project", "user")


class Client:
    """One client: its format, the key its servers are under, its project file (relative to the project)
    and user file (a function of the platform), how it writes the entry, and how a project file names
    the home folder (None: it has no documented way, and a path in the home folder is refused there).
    `also`: another name the client reads its file by (opencode.jsonc), used when only that one exists."""

    def __init__(self, name, fmt, key, project, user, shape, home=None, whole=False, also=None):
        self.name, self.format, self.key, self.project, self.user = name, fmt, key, project, user
        self.shape, self.home, self.whole, self.also = shape, home, whole, also

    def scopes(self):
        return [scope for scope, where in zip(SCOPES, (self.project, self.user)) if where]


def _home(*parts):
    return os.path.join(os.path.expanduser("~"), *parts)


def _config(*parts):
    """The folder of per-user settings that editors and agents use on this platform."""
    if sys.platform == "darwin":
        return _home("Library", "Application Support", *parts)
    if sys.platform == "win32":
        return os.path.join(os.environ.get("APPDATA") or _home("AppData", "Roaming"), *parts)
    return os.path.join(os.environ.get("XDG_CONFIG_HOME") or _home(".config"), *parts)


def _xdg(*parts):
    """~/.config/... on macOS too, as Zed, Goose and opencode keep it there."""
    if sys.platform == "win32":
        return _config(*parts)
    return os.path.join(os.environ.get("XDG_CONFIG_HOME") or _home(".config"), *parts)


def _stdio(command, args, env, **extra):
    return {**extra, "command": command, "args": args, **({"env": env} if env else {})}


def _plain(command, args, env):
    return _stdio(command, args, env)


def _typed(command, args, env):
    return _stdio(command, args, env, type="stdio")


CLIENTS = {client.name: client for client in (
    Client("claude-code", Json, "mcpServers", ".mcp.json", lambda: _home(".claude.json"), _typed, "${HOME}"),
    Client("claude-desktop", Json, "mcpServers", None,
           lambda: _config("Claude", "claude_desktop_config.json"), _plain),
    Client("cursor", Json, "mcpServers", ".cursor/mcp.json", lambda: _home(".cursor", "mcp.json"), _plain,
           "${userHome}"),
    Client("vscode", Json, "servers", ".vscode/mcp.json", lambda: _config("Code", "User", "mcp.json"), _typed,
           "${userHome}"),
    Client("windsurf", Json, "mcpServers", None, lambda: _home(".codeium", "windsurf", "mcp_config.json"), _plain),
    Client("zed", Json, "context_servers", None, lambda: _xdg("zed", "settings.json"), _plain),
    Client("codex", Toml, "mcp_servers", ".codex/config.toml",
           lambda: os.path.join(os.environ.get("CODEX_HOME") or _home(".codex"), "config.toml"),
           lambda command, args, env: {**_stdio(command, args, env), **CODEX_TIMEOUTS}),
    Client("gemini", Json, "mcpServers", ".gemini/settings.json", lambda: _home(".gemini", "settings.json"), _plain,
           "${HOME}"),
    Client("goose", Yaml, "extensions", None, lambda: _xdg("goose", "config.yaml"),
           lambda command, args, env: {"name": SERVER, "type": "stdio", "cmd": command, "args": args,
                                       **({"envs": env} if env else {}), "enabled": True,
                                       "timeout": GOOSE_TIMEOUT}),
    Client("cline", Json, "mcpServers", None,
           lambda: _config("Code", "User", "globalStorage", "saoudrizwan.claude-dev", "settings",
                           "cline_mcp_settings.json"), _plain),
    Client("roo-code", Json, "mcpServers", ".roo/mcp.json",
           lambda: _config("Code", "User", "globalStorage", "rooveterinaryinc.roo-cline", "settings",
                           "mcp_settings.json"), _plain),
    Client("kiro", Json, "mcpServers", ".kiro/settings/mcp.json", lambda: _home(".kiro", "settings", "mcp.json"),
           _plain),
    Client("copilot-cli", Json, "mcpServers", None, lambda: _home(".copilot", "mcp-config.json"),
           lambda command, args, env: {**_stdio(command, args, env, type="local"), "tools": ["*"]}),
    Client("opencode", Json, "mcp", "opencode.json", lambda: _xdg("opencode", "opencode.json"),
           lambda command, args, env: {"type": "local", "command": [command, *args],
                                       **({"environment": env} if env else {}), "enabled": True},
           "{env:HOME}", also=lambda path: path + "c"),
    Client("continue", Yaml, None, ".continue/mcpServers/nexus.yaml", None,
           lambda command, args, env: {"name": SERVER, "version": "0.0.1", "schema": "v1",
                                       "mcpServers": [{"name": SERVER, **_stdio(command, args, env)}]},
           whole=True),
)}


def client(name):
    if name not in CLIENTS:
        raise UsageError(f"unknown client '{name}': use one of {', '.join(CLIENTS)}")
    return CLIENTS[name]


def scope_of(chosen, scope):
    """The scope asked for, else the project where the client has a project file."""
    if scope is None:
        return chosen.scopes()[0]
    if scope not in SCOPES:
        raise UsageError(f"unknown scope '{scope}': use {' or '.join(SCOPES)}")
    if scope not in chosen.scopes():
        raise UsageError(f"{chosen.name} has no {scope} file: use --scope {chosen.scopes()[0]}")
    return scope


def listing():
    """Every client with its format and files, for --list-clients."""
    return [{"client": c.name, "format": c.format.name, "project": c.project,
             "user": tilde(c.user()) if c.user else None} for c in CLIENTS.values()]


def tilde(path):
    home = os.path.expanduser("~")
    return "~" + path[len(home):] if path.startswith(home + os.sep) else path


# -- the entry ----------------------------------------------------------------------------------


def running_command():
    """The absolute path of the nexus-mcp installed with the nexus that runs: next to the running
    script, else next to this Python, else the first on PATH; "nexus-mcp" when there is none."""
    import shutil  # only to make an entry: the server itself never needs it

    for folder in (os.path.dirname(sys.argv[0]), os.path.dirname(sys.executable)):
        path = os.path.join(os.path.abspath(folder or "."), "nexus-mcp")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which("nexus-mcp")
    return os.path.abspath(found) if found else "nexus-mcp"


TEMPORARY = ("/tmp/", "/var/tmp/", "/private/var/folders/", "/.cache/", "/cache/", "/archive-v0/", "/pip-build")


def looks_temporary(path):
    """Whether `path` lies where files do not last: a temporary folder, a cache (uvx's environments)."""
    path = os.path.abspath(path)
    return any(marker in path for marker in TEMPORARY) or path.startswith(tempfile.gettempdir() + os.sep)


def entry(chosen, scope, command=None, warn=None):
    """nexus's entry for the client: the command (the running nexus-mcp's absolute path unless given)
    and the nexus variables set here. In a project file a path in the home folder is written with the
    client's home variable, or refused (exit 1) when the client has none: project files are shared."""
    hint = "" if command else " (--command names another)"
    command = command or running_command()
    if warn and os.path.isabs(command) and looks_temporary(command):
        warn(f"{command} looks temporary: the client cannot start it once it is gone{hint}")
    env = {name: os.environ[name] for name in CARRIED_ENV if os.environ.get(name)}
    if scope == "project":
        command = _portable(chosen, command, "the command")
        env = {name: _portable(chosen, value, name) for name, value in env.items()}
    return chosen.shape(command, [], env)


# The clients that take an HTTP entry whose token comes from an environment variable, each in its own shape:
# (url, the Authorization header's value with the variable as the client writes one, or None, the variable).
# The others (claude-desktop: connectors alone; zed, goose, cline, kiro, copilot-cli, continue) document no
# way to read a header's value from the environment, and a token must never be written in the file.
HTTP_CLIENTS = {
    "claude-code": ("${{{}}}", lambda url, header, var: {"type": "http", "url": url, **_headers(header)}),
    "cursor": ("${{env:{}}}", lambda url, header, var: {"url": url, **_headers(header)}),
    "vscode": ("${{env:{}}}", lambda url, header, var: {"type": "http", "url": url, **_headers(header)}),
    "windsurf": ("${{env:{}}}", lambda url, header, var: {"serverUrl": url, **_headers(header)}),
    "gemini": ("${{{}}}", lambda url, header, var: {"httpUrl": url, **_headers(header)}),
    "codex": ("{}", lambda url, header, var: {"url": url, **({"bearer_token_env_var": var} if var else {}),
                                              **CODEX_TIMEOUTS}),
    "opencode": ("{{env:{}}}", lambda url, header, var: {"type": "remote", "url": url, **_headers(header),
                                                         "enabled": True}),
}


def _headers(header):
    return {"headers": {"Authorization": header}} if header else {}


def http_entry(chosen, url, token_env=None, warn=None):
    """nexus's entry for a client that reaches nexus-mcp --http at `url`, the bearer token read from the
    variable `token_env` when the client starts (never written in the file); UsageError for a client that
    takes no such entry, a URL that is not http(s), or a name that is no variable's."""
    from urllib.parse import urlsplit  # only for an HTTP entry: urllib brings `re`

    if chosen.name not in HTTP_CLIENTS:
        raise UsageError(f"{chosen.name} takes no HTTP entry with its token from the environment: --url is for "
                         f"{', '.join(HTTP_CLIENTS)}")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        raise UsageError(f"--url needs the http(s) URL nexus-mcp --http serves, such as https://HOST:8765/mcp, "
                         f"not '{urls.shown(url)}' (and no user or password in it: use --token-env)")
    if token_env is not None and not (token_env.isascii() and token_env.replace("_", "a").isalnum()
                                      and not token_env[0].isdigit()):
        raise UsageError(f"--token-env needs the name of an environment variable, such as NEXUS_TOKEN, not {token_env!r}")
    if warn and token_env and parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        warn(f"{url} is plain HTTP: the token crosses the network in the clear (serve https with --certfile)")
    if warn and token_env and not os.environ.get(token_env):
        warn(f"{token_env} is not set here: the client needs it set where it starts")
    written, shape = HTTP_CLIENTS[chosen.name]
    header = "Bearer " + written.format(token_env) if token_env else None
    return shape(url, header, token_env)


def _portable(chosen, value, what):
    home = os.path.expanduser("~").rstrip(os.sep)
    if not home or not (value == home or value.startswith(home + os.sep)):
        return value
    if chosen.home is None:
        raise NexusError(f"{what} ({value}) lies in your home folder, and {chosen.name} has no variable for it "
                         f"in a shared project file: use --scope user" +
                         (", or --command a path outside it" if what == "the command" else ""))
    return chosen.home + value[len(home):]


def snippet(chosen, wanted):
    """The smallest file of the client that registers nexus."""
    return chosen.format.dump(wanted if chosen.whole else {chosen.key: {SERVER: wanted}})


# -- the file -----------------------------------------------------------------------------------


def where(chosen, scope, project):
    """The client's file for the scope: in the project (its links followed, never out of it), or the
    user's (its links followed: a dotfiles link stays a link)."""
    if scope == "user":
        return os.path.realpath(_named(chosen, chosen.user()))
    if not os.path.isdir(project):
        raise UsageError(f"'{project}' is not a folder")
    return fileio.inside(_named(chosen, os.path.join(project, chosen.project)), os.path.realpath(project))


def _named(chosen, path):
    """`path`, or the other name the client reads when only a file of that name exists."""
    other = chosen.also(path) if chosen.also else None
    return other if other and os.path.lexists(other) and not os.path.lexists(path) else path


def _read(path):
    """The text of a client's file, None when there is none; BadInput when it is not UTF-8."""
    data = fileio.read_bytes(path)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"cannot read '{path}': not UTF-8 text") from None


def _load(chosen, text, path):
    try:
        document = chosen.format.load(text)
    except ValueError as e:
        raise BadInput(f"'{path}' is not {chosen.format.name}: {e}; it is left as it is") from None
    except RecursionError:  # a hostile file: tomllib and PyYAML read nesting by recursion
        document = None
    if document is None or schema.too_deep(document):  # an edit copies and compares it by recursion
        raise BadInput(f"'{path}' is nested more than {schema.MAX_DEPTH} deep; it is left as it is")
    return document


def _kind(value):
    return {list: "an array", str: "a string", bool: "a boolean"}.get(type(value), "a number" if isinstance(
        value, (int, float)) else type(value).__name__)


def current(chosen, document):
    """The nexus entry a client's document holds, None when it has none."""
    if chosen.whole:
        return document or None
    servers = document.get(chosen.key) if isinstance(document, dict) else None
    return servers.get(SERVER) if isinstance(servers, dict) else None


def difference(old, new):
    """The lines that differ between two entries, as a unified diff of their JSON."""
    import json  # indented output only (fastjson writes compact JSON); only when entries differ

    def lines(entry):
        return json.dumps(entry, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

    return [line for line in difflib.unified_diff(lines(old), lines(new), "in the file", "nexus's", lineterm="")]


def change(chosen, path, wanted, force=False, warn=None, remove=False):
    """Put `wanted` into the client's file at `path` (`remove`: take nexus's entry out, when it is
    `wanted`), changing only the entry. Returns what happened ('added', 'replaced', 'removed' or
    'unchanged') and the copy of the old file kept (FILE.bak, None when there was none). A customised
    entry is kept, replaced or removed alike, unless `force` (NexusError, its difference given to `warn`);
    a read-only file is refused; the edit is re-read and must be the intended document before anything
    is written."""
    old = _read(path)
    document = _load(chosen, old, path) if old is not None else {}
    if chosen.key and not isinstance(document, dict):
        raise BadInput(f"'{path}' holds no {chosen.format.name} mapping; it is left as it is")
    servers = document.get(chosen.key) if chosen.key else None
    if servers is not None and not isinstance(servers, dict):  # an array of tables, a string: not for nexus to fix
        raise BadInput(f"'{path}': '{chosen.key}' is {_kind(servers)}, not a table of servers; it is left as it is")
    present = current(chosen, document)
    if present is not None and wanted is not None and present != wanted and not force:
        for line in difference(present, wanted):
            warn and warn(line)
        raise NexusError(f"'{path}' has a nexus entry that differs from this one: kept (--force "
                         f"{'removes' if remove else 'replaces'} it)")
    wanted = None if remove else wanted
    if present == wanted:  # None and None too: nothing to take out
        return "unchanged", None
    if old is not None and not os.stat(path).st_mode & 0o200:  # by its mode: root may write it all the same
        raise NexusError(f"'{path}' is read-only: nexus does not change it")
    new = _edited(chosen, old or "", wanted, path)
    if chosen.whole and wanted is None:
        _backup(path, old)
        os.unlink(path)
        return "removed", path + ".bak"
    intended = _intended(chosen, document, wanted)
    if _load(chosen, new, path) != intended:
        raise BadInput(f"'{path}': the nexus entry could not be changed in place without changing more; "
                       "edit it by hand (nexus mcp config prints the entry)")
    _write(path, old, new)
    outcome = "removed" if wanted is None else "replaced" if present is not None else "added"
    return outcome, None if old is None else path + ".bak"


def _edited(chosen, text, wanted, path):
    if chosen.whole:  # a new file, with the old one's line endings
        return chosen.format.dump(wanted).replace("\n", "\r\n" if "\r\n" in text else "\n") if wanted is not None \
            else text
    try:
        if wanted is None:
            return chosen.format.drop(text, chosen.key, SERVER)
        return chosen.format.put(text, chosen.key, SERVER, wanted)
    except ValueError as e:
        raise BadInput(f"'{path}': cannot change the nexus entry in place ({e}); edit it by hand "
                       "(nexus mcp config prints the entry)") from None


def _intended(chosen, document, wanted):
    """The document with nexus's entry set to `wanted`, or taken out (None)."""
    if chosen.whole:
        return wanted
    intended = dict(document)  # a copy of the two levels it changes: the rest is only compared, never changed
    servers = intended.get(chosen.key)
    servers = intended[chosen.key] = dict(servers) if isinstance(servers, dict) else {}  # none yet, or `extensions:`
    if wanted is None:
        servers.pop(SERVER, None)
    else:
        servers[SERVER] = wanted
    return intended


def _backup(path, old):
    """The file as it was, kept as FILE.bak with the file's own permissions."""
    mode = os.stat(path).st_mode & 0o777
    try:
        fileio.write_atomic(path + ".bak", old.encode(), mode)
        os.chmod(path + ".bak", mode)
    except OSError as e:
        raise BadInput(f"cannot keep a copy of '{path}' as '{path}.bak': {e.strerror}; nothing changed") from None


def _write(path, old, new):
    """Write `new` over the file: by rename when it has one name, through its own inode when it has
    several (a hard link stays a link to the same file); a new file private to the user."""
    try:
        if old is None:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fileio.write_atomic(path, new.encode(), 0o600)
            return
        _backup(path, old)
        info = os.stat(path)
        if info.st_nlink > 1:
            with open(path, "r+b") as f:
                f.write(new.encode())
                f.truncate()
        else:
            fileio.write_atomic(path, new.encode(), info.st_mode & 0o777)
            os.chmod(path, info.st_mode & 0o777)
    except OSError as e:
        raise BadInput(f"cannot write '{path}': {e.strerror}") from None
