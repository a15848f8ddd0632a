"""The user's nexus.toml: read with tomllib, cached as JSON so the hot path never parses TOML."""

import os

from . import fileio, paths
from .errors import BadInput


def load():
    """The config as a dict: {} when there is no file; BadInput naming the file and line when malformed."""
    path = paths.config_file()
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise BadInput(f"cannot read config '{path}': {e.strerror}") from None
    key = [path, st.st_mtime_ns, st.st_size]
    cache_path = paths.config_cache()
    try:
        cached = fileio.read_json(cache_path)
    except BadInput:
        cached = None
    if isinstance(cached, dict) and cached.get("key") == key:
        return cached["config"]
    config = _parse(path)
    try:
        fileio.private_dirs(os.path.dirname(cache_path), paths.home())
        fileio.write_json(cache_path, {"key": key, "config": config})
    except (OSError, TypeError, ValueError):
        pass  # a cache we cannot write only costs speed
    return config


def _parse(path):
    import tomllib

    try:
        with open(path, "rb") as f:
            config = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"config {_where(path, str(e))}") from None
    except OSError as e:
        raise BadInput(f"cannot read config '{path}': {e.strerror}") from None
    return _jsonable(config)


def _where(path, message):
    """'path:LINE: problem' from tomllib's 'problem (at line L, column C)' or '(at end of document)'."""
    import re

    found = re.search(r" \(at (?:line (\d+), column \d+|end of document)\)$", message)
    if not found:
        return f"'{path}': {message}"
    line = found.group(1)
    if line is None:
        with open(path, "rb") as f:
            line = max(1, f.read().count(b"\n"))
    return f"'{path}', line {line}: {message[:found.start()]}"


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


def skill_entry(config, entry):
    """The [skills.entries.KEY] table of a skill (KEY is its skillKey, else its name)."""
    entries = get(config, "skills.entries", {})
    if not isinstance(entries, dict):
        return {}
    key = entry.get("skillKey")
    found = entries.get(key if isinstance(key, str) and key else entry["name"])
    return found if isinstance(found, dict) else {}


def folders(config, dotted):
    """The folders a config key lists (one string or a list of them), expanded and absolute."""
    value = get(config, dotted, [])
    value = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [os.path.abspath(os.path.expanduser(v)) for v in value if isinstance(v, str)]


def bin_path(config):
    """Folders from skills.binPath, searched before PATH and prepended to a tool's PATH."""
    return folders(config, "skills.binPath")


def sources(config):
    """The skill sources as (source, folder) pairs, lowest precedence first."""
    found = [("nexus-extra", folder) for folder in folders(config, "skills.load.extraDirs")]
    found.append(("nexus-bundled", paths.bundled_skills()))
    found.append(("nexus-managed", paths.managed_skills()))
    found.append(("nexus-workspace", paths.workspace_skills()))
    return found
