"""Every path nexus reads or writes; NEXUS_HOME moves all of them."""

import os

from .errors import UsageError

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def is_valid_name(name):
    """Lowercase letters, digits and single hyphens, 1 to 64 characters."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= 64
        and set(name) <= _NAME_CHARS
        and not name.startswith("-")
        and not name.endswith("-")
        and "--" not in name
    )


def _expand(path):
    return os.path.abspath(os.path.expanduser(path))


def home():
    return _expand(os.environ.get("NEXUS_HOME") or "~/nexus")


def workspace_skills():
    return os.path.join(home(), "skills")


def managed_skills():
    return _expand(os.environ.get("MANAGED_SKILLS_DIR") or "~/.nexus/skills")


def bundled_skills():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "skills")


def config_file():
    return _expand(os.environ.get("NEXUS_CONFIG") or os.path.join(home(), "nexus.toml"))


def state_root():
    return os.path.join(home(), "state")


def skills_state():
    return os.path.join(state_root(), "nexus", "skills")


def manifest_file():
    return os.path.join(skills_state(), "manifest.json")


def config_cache():
    return os.path.join(state_root(), "nexus", "config-cache.json")


def checked_name(name):
    """`name` when it is a valid skill name; UsageError otherwise. Call before a name becomes a path."""
    if not is_valid_name(name):
        raise UsageError(f"invalid skill name {name!r}: use lowercase letters, digits and single hyphens")
    return name


def skill_state_dir(name):
    """The state folder of one skill; the name is validated before it becomes a path."""
    return os.path.join(skills_state(), checked_name(name))


def folder_sources(folders):
    """Folders named on a command line, as sources (the last one wins a name)."""
    return [("nexus-extra", os.path.abspath(f)) for f in folders]


def mtime(path):
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def source_stamps(source_list):
    """What the manifest records of each source, to tell when one changed."""
    return [{"source": s, "path": p, "mtimeNs": mtime(p)} for s, p in source_list]
