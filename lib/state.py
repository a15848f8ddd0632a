"""Per-skill state.json (spec 4.2): read tolerantly, updated under the skill's lock, replaced atomically."""

import os

from . import fileio, paths, schema
from .errors import BadInput


def path(name):
    return os.path.join(paths.skill_state_dir(name), "state.json")


def read(name, entry=None, on_problem=None):
    """The skill's state; defaults when there is none, and when it is corrupt (reported via on_problem)."""
    try:
        state = fileio.read_json(path(name))
    except BadInput as e:
        if on_problem:
            on_problem(f"{e}; starting from defaults")
        state = None
    if not isinstance(state, dict):
        return schema.default_state(entry)
    return state
