"""The shapes of nexus's records, in one place: the manifest entry, a skill's state, a usage log entry."""

import time

MANIFEST_VERSION = 2  # 2: one record per line, with the stamps of every record (catalog.manifest)
STATE_VERSION = 1
TYPES = ("tool", "script", "prompt")
REQUIRE_KEYS = ("bins", "anyBins", "env", "config")

# The frontmatter keys of a skill's own; every other key is kept under `extra`.
FRONTMATTER_KEYS = ("name", "description", "homepage", "metadata")
META_FIELDS = ("emoji", "os", "primaryEnv", "skillKey", "bundled", "priority", "always")
TEXT_FIELDS = ("emoji", "primaryEnv", "skillKey", "priority", "tool", "verify", "runner", "script")
FLAG_FIELDS = ("bundled", "always", "requiresAuth")


def now_iso(t=None):
    """A time as ISO 8601 UTC with milliseconds (time, not datetime: it is cheaper to import)."""
    t = time.time() if t is None else t
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def parse_iso(ts):
    """An ISO 8601 timestamp as an aware UTC datetime, or None."""
    import datetime  # not on the gateway's way: it costs more than all of this module

    try:
        value = datetime.datetime.fromisoformat(ts)  # since 3.11 it reads the "Z" of UTC too
    except (TypeError, ValueError):
        return None
    return value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)


def string_list(value):
    """A list of strings; OpenClaw skills often write lists as comma-separated strings."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [str(v) for v in value if v not in (None, "")]
    return []


def default_state(entry=None):
    """A SkillState before any verification, with the execution metadata of its manifest entry."""
    state = {"version": STATE_VERSION, "configured": False}
    if entry:
        for key in ("type", "tool", "verify"):
            if entry.get(key):
                state[key] = entry[key]
    return state


def usage_entry(ts, skill, type_, ms, args=None, exit=None, error=None, tool=None, session=None):
    """One UsageLogEntry, with only the keys that apply."""
    entry = {"ts": ts, "skill": skill, "type": type_, "ms": ms}
    optional = {"args": args, "exit": exit, "error": error, "tool": tool, "session": session}
    entry.update((k, v) for k, v in optional.items() if v is not None)
    return entry
