"""Per-skill state.json: every field checked when read, updated under the skill's lock, replaced atomically.

A field of the wrong type or range is reset, with a one-line warning. The file itself is never lost:
when nexus has to repair it (or cannot read it at all), the next write keeps the original beside
the new one as state.json.corrupt, so that its lifetime counters can be recovered by hand.
"""

import os

from .. import fileio, paths, schema
from ..errors import BadInput
from . import health

TEXT = ("configuredAt", "lastVerified", "lastUsed", "lastError", "type", "tool", "verify")
FLAGS = ("configured", "lastVerifyOk")
COUNTERS = ("totalInvocations", "successCount", "totalDurationMs", "policyRefusals")  # checked as one: they only make sense together
DERIVED = ("successRate", "avgDurationMs")


def _is_count(value):
    return type(value) is int and value >= 0


def checked(state, entry=None):
    """(state with every field nexus reads usable, the problems found); a field that is not is reset."""
    problems = []
    if not isinstance(state, dict):
        return schema.default_state(entry), [f"not a JSON object but {type(state).__name__}; starting from defaults"]
    version = state.get("version")
    if type(version) is int and version > schema.STATE_VERSION:
        return schema.default_state(entry), [f"written by a newer nexus (version {version}); starting from defaults"]
    state = dict(state)
    if version != schema.STATE_VERSION:
        problems.append(f"version {version!r} is not {schema.STATE_VERSION}; reset")
        state["version"] = schema.STATE_VERSION
    for key, wanted in [*((k, str) for k in TEXT), *((k, bool) for k in FLAGS), ("fingerprint", dict)]:
        if key in state and state[key] is not None and type(state[key]) is not wanted:
            problems.append(f"{key} {_shown(state.pop(key))} is not {'text' if wanted is str else wanted.__name__}; reset")
    if "logEntries" in state and not _is_count(state["logEntries"]):
        problems.append(f"logEntries {_shown(state.pop('logEntries'))} is not a count; reset")
    for key, usable in (("recent", _is_recent), ("recentDays", lambda v: isinstance(v, list) and all(
            isinstance(d, str) for d in v)), ("days", _is_days), ("verifications", _is_history),
                        ("drift", lambda v: isinstance(v, dict) and isinstance(v.get("since"), str))):
        if key in state and not usable(state[key]):
            problems.append(f"{key} {_shown(state.pop(key))} is not what nexus keeps there; reset")
    present = [k for k in COUNTERS if k in state]
    if present and (not all(_is_count(state.get(k, 0)) for k in COUNTERS)
                    or state.get("successCount", 0) + state.get("policyRefusals", 0) > state.get("totalInvocations", 0)):
        bad = ", ".join(f"{k} {_shown(state.get(k))}" for k in present)
        problems.append(f"lifetime counters unusable ({bad}); counting from 0")
        for key in COUNTERS + DERIVED:
            state.pop(key, None)
    return state, problems


def _is_recent(value):
    return isinstance(value, list) and all(v in (0, 1) and type(v) is int for v in value)


def _is_days(value):
    return isinstance(value, dict) and all(
        isinstance(d, str) and isinstance(v, list) and len(v) == 2 and all(_is_count(n) for n in v) for d, v in value.items())


def _is_history(value):
    return isinstance(value, list) and all(isinstance(v, dict) and isinstance(v.get("ts"), str) for v in value)


def _shown(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def load(name, entry=None):
    """(state, problems, whether the file exists): the state as read and checked."""
    path = paths.state_file(name)
    try:
        raw = fileio.read_json(path)
    except BadInput as e:
        return schema.default_state(entry), [f"{e}; starting from defaults"], True
    if raw is None:
        return schema.default_state(entry), [], False
    state, problems = checked(raw, entry)
    return state, [f"{path}: {p}" for p in problems], True


def read(name, entry=None, on_problem=None):
    """The skill's state, each problem found reported through on_problem."""
    state, problems, _ = load(name, entry)
    for problem in problems:
        if on_problem:
            on_problem(problem)
    return state


def of(entry, on_problem=None):
    """The state that matters for an entry's status: none for a prompt skill, which needs no verifying."""
    return {} if entry.get("type") == "prompt" else read(entry["name"], entry, on_problem)


class Update:
    """`with Update(name) as state:` holds the skill's lock, and writes `state` back atomically when the
    block ends without an exception; a file it had to repair is kept as state.json.corrupt first. The
    usage log is appended under the same lock, and cut back to where it was when the state cannot be
    written (a full disk): the log and the counters change together or not at all."""

    def __init__(self, name, entry=None, on_problem=None):
        self.name, self.entry, self.on_problem = name, entry, on_problem
        self.lock = fileio.Lock(paths.skill_lock(name))

    def __enter__(self):
        fileio.private_dirs(paths.skill_state_dir(self.name), paths.state_root())
        self.lock.__enter__()
        try:
            self.log = _stamp(paths.usage_log(self.name))
            self.state, self.problems, _ = load(self.name, self.entry)
        except BaseException:
            self.lock.__exit__(None, None, None)
            raise
        for problem in self.problems:
            if self.on_problem:
                self.on_problem(problem)
        return self.state

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                path = paths.state_file(self.name)
                if self.problems and os.path.exists(path):
                    os.replace(path, corrupt_name(path))
                try:
                    fileio.write_json(path, self.state)
                except OSError:
                    self._unlog()
                    raise
        finally:
            self.lock.__exit__(None, None, None)

    def _unlog(self):
        """Cut the usage log back to its size before this block, if it is still the same file and grew."""
        path = paths.usage_log(self.name)
        now = _stamp(path)
        if self.log and now and now[0] == self.log[0] and now[1] > self.log[1]:
            os.truncate(path, self.log[1])


def _stamp(path):
    """(inode, size) of a file, or None."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return info.st_ino, info.st_size


def corrupt_name(path):
    """Where a state file nexus could not use is kept: state.json.corrupt, or with the time when that is
    taken, and a number after it when that is taken too (three repairs in one second keep three copies)."""
    kept = path + ".corrupt"
    if not os.path.lexists(kept):
        return kept
    stamped = kept + "-" + schema.now_iso().replace(":", "").replace("-", "").split(".")[0]
    kept, n = stamped, 1
    while os.path.lexists(kept):
        n += 1
        kept = f"{stamped}.{n}"
    return kept


def count_call(state, ts, ok, ms, policy=False, person=False):
    """Lifetime counters, kept in state so they survive log rotation. A refusal for policy (`policy`)
    is a call, but no failure of the skill: it is left out of the success rate and of health. A person's
    successful run (`person`) brings a failing skill back (health.count)."""
    total = state.get("totalInvocations", 0) + 1
    refused = state.get("policyRefusals", 0) + (1 if policy else 0)
    successes = state.get("successCount", 0) + (1 if ok else 0)
    duration = state.get("totalDurationMs", 0) + ms
    judged = total - refused
    state.update(totalInvocations=total, successCount=successes, totalDurationMs=duration,
                 avgDurationMs=round(duration / total), lastUsed=ts)
    if judged:
        state["successRate"] = round(successes / judged, 4)
    if policy:
        state["policyRefusals"] = refused
        return
    health.count(state, ts, ok, person)
    if ok:
        state.pop("lastError", None)


def verified(state, ts, ok, fingerprint=None, error=None, recover=True):
    """Record a verification: configuredAt is the first success ever, lastError only what is wrong now,
    and the verification joins the history (see health.verified). Returns the drift it found, or None."""
    state.update(configured=ok, lastVerified=ts, lastVerifyOk=ok)
    if ok:
        state.setdefault("configuredAt", ts)
        state.pop("lastError", None)
        if fingerprint is not None:
            state["fingerprint"] = fingerprint
    else:
        state["lastError"] = error
    return health.verified(state, ts, ok, (fingerprint or {}).get("verifyOutputHash"), recover)


def populate(entries):
    """Create the state of tool and script skills that have none yet, so that a refresh sets them up."""
    root = paths.skills_state()  # once: a refresh passes thousands of entries
    for entry in entries:
        if unset(entry, root):
            with Update(entry["name"], entry):
                pass


def unset(entry, root=None):
    """Whether the entry is of a tool or script skill that has no state yet (populate makes it one). `root`:
    paths.skills_state(), when known."""
    return (entry.get("type") in ("tool", "script") and paths.is_valid_name(entry.get("name"))
            and not os.path.exists(os.path.join(root or paths.skills_state(), entry["name"], "state.json")))
