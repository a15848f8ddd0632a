"""Per-skill usage.log (JSON Lines, append-only) and its rotation.

Every append and every rotation of a skill's log holds that skill's lock (paths.skill_lock), and
an appender opens the log only after taking the lock, so a rotation never drops a line written
concurrently and lines from concurrent runs never interleave.
"""

import os

from .. import config as configlib, fastjson, fileio, paths, schema
from . import skill_state

MAX_ENTRIES = 5000
MAX_BYTES = 2 * 1024 * 1024
LOW_WATER = 0.9  # pruning on write keeps 90% of the limit, so a busy log is rewritten rarely


def limits(config):
    entries = configlib.get(config, "skills.log.maxEntries", MAX_ENTRIES)
    size = configlib.get(config, "skills.log.maxBytes", MAX_BYTES)
    valid = lambda n, default: n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else default
    return valid(entries, MAX_ENTRIES), valid(size, MAX_BYTES)


ARGS_BYTES = 8192  # the most a log entry's args take, JSON-encoded, in bytes; an argument past it is cut or left out


def _size(value):
    """The bytes `value` takes in a log line (fileio.encode of its JSON)."""
    return len(fileio.encode(fastjson.dumps(value)))


def bounded(entry):
    """The entry with its args and error cut to their limits, and "truncated": true when anything was
    cut, so that one call can never make a line the log cannot keep."""
    args, error = entry.get("args"), entry.get("error")
    cut = isinstance(error, str) and len(error) > schema.ERROR_CHARS
    if isinstance(args, list) and _size(args) > ARGS_BYTES:
        kept, used = [], 2  # the brackets
        for arg in args:
            room = ARGS_BYTES - used - 1  # and a comma
            size = _size(arg)
            if size > room:
                arg = arg[:max(0, room - 2)]  # each character takes at least one byte, a control one six
                while arg and _size(arg) > room:
                    arg = arg[:len(arg) // 2]
                if arg:
                    kept.append(arg)
                break
            kept.append(arg)
            used += size + 1
        args, cut = kept, True
    if not cut:
        return entry
    return {**entry, "args": args, "error": error[-schema.ERROR_CHARS:] if isinstance(error, str) else error,
            "truncated": True}


def encode(entry):
    return fileio.encode(fastjson.dumps(bounded(entry)) + "\n")


def append(name, state, entry, config):
    """Append one entry; call inside skill_state.Update(name). Prunes once the log passes its limits,
    and never drops the entry just appended."""
    max_entries, max_bytes = limits(config)
    size = fileio.append(paths.usage_log(name), encode(entry))
    state["logEntries"] = state.get("logEntries", 0) + 1
    state["logged"] = state.get("logged", 0) + 1  # the line's number, for ever: what `telemetry push` counts by
    if state["logEntries"] > max_entries or size > max_bytes:
        state["logEntries"] = prune(name, int(max_entries * LOW_WATER) or 1, int(max_bytes * LOW_WATER))


def prune(name, max_entries, max_bytes):
    """Keep the newest lines that fit both limits; call under the skill's lock. Returns the lines kept.

    The newest line is always kept; an older line too big for the limit on its own is skipped (it
    could never be kept), so that it cannot take the lines before it with it."""
    return prune_file(paths.usage_log(name), max_entries, max_bytes)


def prune_file(path, max_entries, max_bytes):
    """prune, for any log of JSON lines at `path` (nexus-mcp's auth.log too); call under its lock."""
    import collections  # only when a log is rotated, not on each append

    try:
        with open(path, "rb") as f:
            newest = collections.deque(f, maxlen=max_entries)
    except FileNotFoundError:
        return 0
    if newest and not newest[-1].endswith(b"\n"):
        newest[-1] += b"\n"  # a torn last line (a crash elsewhere) must not glue onto the next append
    kept, size = [], 0
    for line in reversed(newest):
        if kept and len(line) > max_bytes:
            continue
        if kept and size + len(line) > max_bytes:
            break
        kept.append(line)
        size += len(line)
    fileio.write_atomic(path, b"".join(reversed(kept)))
    return len(kept)


def rotate(name, config):
    """Prune one skill's log to its limits exactly (for `nexus skills rotate`). Returns lines kept."""
    max_entries, max_bytes = limits(config)
    with skill_state.Update(name) as state:
        state["logEntries"] = prune(name, max_entries, max_bytes)
    return state["logEntries"]


def logged_skills():
    """Names of the skills that have a usage log."""
    try:
        names = sorted(os.listdir(paths.skills_state()))
    except FileNotFoundError:
        return []
    return [n for n in names if paths.is_valid_name(n) and os.path.isfile(os.path.join(paths.skills_state(), n, "usage.log"))]
