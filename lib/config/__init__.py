"""The user's nexus.toml: read with tomllib and validated against the keys nexus knows (nexus.config.keys),
then cached as JSON, so that the hot path never parses TOML.

The cache holds the file's whole text and is used only while the file still has exactly that text: an
edit is noticed even when it keeps the file's size and mtime.
"""

import os

from .. import fileio, paths, schema
from ..errors import BadInput, NexusError

CACHE_FORMAT = 2  # the shape of the cache, and of the validation it stands for


class ConfigError(BadInput):
    """A config file nexus cannot use: its path, the line (or None) and the problem, said in one line."""

    def __init__(self, path, problem, line=None):
        super().__init__(f"config '{path}'{f', line {line}' if line else ''}: {problem}")
        self.path, self.problem, self.line = path, problem, line


def load():
    """The config as a dict: {} when there is no file; ConfigError when it cannot be read, is not UTF-8
    or not TOML, or holds an unknown key or a value of the wrong type in nexus's own tables."""
    path = paths.config_file()
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        if os.environ.get("NEXUS_CONFIG"):
            raise ConfigError(path, "no such file (NEXUS_CONFIG names it)") from None
        if os.path.lexists(path):
            raise ConfigError(path, "a symlink to nothing") from None
        return {}
    except OSError as e:
        raise ConfigError(path, e.strerror) from None
    cache_path = paths.config_cache()
    try:
        cached = fileio.read_json(cache_path)
    except BadInput:
        cached = None
    try:
        source = [CACHE_FORMAT, path, data.decode()]
    except UnicodeDecodeError:
        source = None  # read() says why
    if isinstance(cached, dict) and cached.get("source") == source:
        return cached["config"]
    config = read(data, path)
    try:
        fileio.private_dirs(os.path.dirname(cache_path), paths.home())
        fileio.write_json(cache_path, {"source": source, "config": config})
    except (OSError, TypeError, ValueError):
        pass  # a cache we cannot write only costs speed
    return config


def read(data, path):
    """The config in `data` (the bytes of the file `path`), parsed and validated."""
    from . import keys  # only when the file changed since its JSON cache, which the gateway reads

    config = parse(data, path)
    try:
        keys.validate(config)
    except keys.Invalid as e:
        from .statements import line_of  # only for the error: it reads the text statement by statement

        raise ConfigError(path, str(e), line_of(data.decode(), e.parts)) from None
    return _jsonable(config)


def parse(data, path):
    """The TOML document in `data`, not yet validated; ConfigError when it is not UTF-8 or not TOML."""
    import tomllib  # 15-35 ms: only when the file changed since its JSON cache

    try:
        text = data.decode()
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ConfigError(path, f"not UTF-8 (byte 0x{data[e.start]:02x})", line) from None
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(path, *_where(text, str(e))) from None
    except RecursionError:  # tomllib reads arrays and inline tables by recursion
        parsed = None
    if parsed is None or schema.too_deep(parsed):
        raise ConfigError(path, f"nested more than {schema.MAX_DEPTH} deep")
    return parsed


def _where(text, message):
    """(problem, line) from tomllib's 'problem (at line L, column C)' or '(at end of document)'."""
    import re  # a TOML error's message only

    found = re.search(r" \(at (?:line (\d+), column \d+|end of document)\)$", message)
    if not found:
        return message, None
    return message[:found.start()], int(found.group(1) or max(1, text.count("\n")))


def _jsonable(value):
    """TOML dates and times become ISO strings so the config round-trips through the JSON cache."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def get(config, dotted, default=None):
    """The value at a dotted path such as 'skills.load.extraDirs'."""
    node = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def skill_key(entry):
    """The KEY of a skill's [skills.entries.KEY] table: its skillKey, else its name; None for an added skill
    whose name another skill takes as its skillKey (catalog.manifest.name_claims): that table is the other's."""
    key = entry.get("skillKey")
    if entry.get("keyClaimed"):
        return None
    return key if isinstance(key, str) and key else entry["name"]


def own_key(entry):
    """skill_key(entry), to change the skill's table: NexusError for a skill that has none."""
    key = skill_key(entry)
    if key is None:
        raise NexusError(f"skill '{entry['name']}' was added from elsewhere, and another skill takes its name as its "
                         f"skillKey: [skills.entries.{entry['name']}] is that skill's config, and this one gets nothing "
                         f"of it (nexus skills check says so); remove or rename one of them")
    return key


def skill_entry(config, entry):
    """The [skills.entries.KEY] table of a skill ({} for one without: skill_key)."""
    key = skill_key(entry)
    return get(config, "skills.entries", {}).get(key, {}) if key else {}


def folders(config, dotted):
    """The folders a config key lists, expanded and absolute (validation made each absolute or ~)."""
    return [os.path.abspath(os.path.expanduser(v)) for v in get(config, dotted, [])]


def bin_path(config):
    """Folders from skills.binPath, searched before PATH and prepended to a tool's PATH."""
    return folders(config, "skills.binPath")


def sources(config):
    """The skill sources as (source, folder) pairs, lowest precedence first: inside a project (paths.project_root),
    its .nexus/skills last, above the workspace (what the project declares is what its agents use)."""
    found = [("nexus-extra", folder) for folder in folders(config, "skills.load.extraDirs")]
    found.append(("nexus-bundled", paths.bundled_skills()))
    found.append(("nexus-managed", paths.managed_skills()))
    found.append(("nexus-workspace", paths.workspace_skills()))
    project = paths.project_root()
    if project is not None:
        found.append(("nexus-project", paths.project_skills(project)))
    return found
