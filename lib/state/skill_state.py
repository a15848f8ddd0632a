"""Per-skill state.json: read tolerantly, updated under the skill's lock, replaced atomically."""

import os

from .. import fileio, paths, schema
from ..errors import BadInput


def read(name, entry=None, on_problem=None):
    """The skill's state; defaults when there is none, and when it is corrupt (reported via on_problem)."""
    try:
        state = fileio.read_json(paths.state_file(name))
    except BadInput as e:
        if on_problem:
            on_problem(f"{e}; starting from defaults")
        state = None
    if not isinstance(state, dict):
        return schema.default_state(entry)
    return state


def of(entry, on_problem=None):
    """The state that matters for an entry's status: none for a prompt skill, which needs no verifying."""
    return {} if entry.get("type") == "prompt" else read(entry["name"], entry, on_problem)


class Update:
    """`with Update(name) as state:` holds the skill's lock, and writes `state` back atomically
    when the block ends without an exception. The usage log is appended under the same lock."""

    def __init__(self, name, entry=None, on_problem=None):
        self.name, self.entry, self.on_problem = name, entry, on_problem
        self.lock = fileio.Lock(paths.skill_lock(name))

    def __enter__(self):
        fileio.private_dirs(paths.skill_state_dir(self.name), paths.home())
        self.lock.__enter__()
        try:
            self.state = read(self.name, self.entry, self.on_problem)
        except BaseException:
            self.lock.__exit__(None, None, None)
            raise
        return self.state

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                fileio.write_json(paths.state_file(self.name), self.state)
        finally:
            self.lock.__exit__(None, None, None)


def count_call(state, ts, ok, ms):
    """Lifetime counters, kept in state so they survive log rotation."""
    total = state.get("totalInvocations", 0) + 1
    successes = state.get("successCount", 0) + (1 if ok else 0)
    duration = state.get("totalDurationMs", 0) + ms
    state.update(totalInvocations=total, successCount=successes, totalDurationMs=duration,
                 successRate=round(successes / total, 4), avgDurationMs=round(duration / total), lastUsed=ts)


def populate(entries):
    """Create the state of tool and script skills that have none yet, so that a refresh sets them up."""
    root = paths.skills_state()  # once: a refresh passes thousands of entries
    for entry in entries:
        if entry.get("type") in ("tool", "script") and paths.is_valid_name(entry.get("name")):
            if not os.path.exists(os.path.join(root, entry["name"], "state.json")):
                with Update(entry["name"], entry):
                    pass
