"""Every skill with its status, or one skill's entry: the manifest kept fresh, read with state and config.

Statuses are kept in status-cache.json with exactly what they were computed from: the manifest (its
size and CRC), the config, the platform, which of the binaries and env vars the skills name are
there (looked up again each time), and for each tool or script skill the stamp (inode, size, mtime)
of its state.json. A listing recomputes what changed: every status when the manifest, config or
environment did, one skill's when its state.json did, and reads a state.json only then, and only
where it matters (`nexus status` needs none of a skill that is not installed). `nexus skills list
--json` splices each status into the manifest's own line of the entry, which is never parsed.
"""

import os
import time
import zlib

from .. import config as configlib, fastjson, fileio, paths
from ..errors import BadInput
from ..skill.entry import binaries, env_names, required
from ..state import skill_state
from . import manifest as manifestlib, status

STATUS_KEYS = {"ready": "ready", "needs-setup": "needsSetup", "not-installed": "notInstalled",
               "disabled": "disabled", "invalid": "invalid", "unsupported": "unsupported"}
RACY_NS = 2 * 10**9  # a state.json this recent may change again within the tick of its mtime: never trusted
STATUS, MISSING, REASON, VERIFIED, STAMP, BASE = range(6)  # a row of the cache, one per skill
NO_STATE = 0  # the stamp of a prompt skill, whose state never matters


def current_manifest(config, warn):
    return manifestlib.current(configlib.sources(config), on_diagnostic=warn)


def entry(config, name, warn):
    """The manifest entry of one skill; rescans only when a source or that skill changed."""
    return manifestlib.entry(configlib.sources(config), name, warn)


class Listing:
    """The records of a fresh manifest, skills by name and then the broken ones, with their statuses."""

    def __init__(self, manifest, rows):
        self.manifest, self.rows = manifest, rows

    def statuses(self):
        return [row[STATUS] for row in self.rows] + ["invalid"] * len(self.manifest.lines()[1])

    def texts(self, keep=lambda status: True):
        """The JSON text of each record kept by keep(status): the entry merged with status, missing,
        verified and disabledReason, as evaluate() gives them."""
        skill_lines, invalid_lines = self.manifest.lines()[:2]
        found = []
        for line, row in zip(skill_lines, self.rows):
            if keep(row[STATUS]):
                text = line.rstrip(b",").partition(b":")[2]
                extra = (f'"status":"{row[STATUS]}","missing":{row[MISSING]},'
                         f'"verified":{"true" if row[VERIFIED] else "false"}')
                if row[REASON]:
                    extra += ',"disabledReason":' + fastjson.dumps(row[REASON])
                if any(key in text for key in (b'"status":', b'"missing":', b'"verified":', b'"disabledReason":')):
                    merged = {**fastjson.loads(text), **fastjson.loads("{" + extra + "}")}  # keys it has keep their place
                    found.append(fastjson.dumps(merged).encode())
                else:
                    found.append(text[:-1] + b"," + extra.encode() + b"}")
        if keep("invalid"):
            found += [line.rstrip(b",") for line in invalid_lines]
        return found

    def json(self, keep=lambda status: True):
        """The JSON array of the records kept, as bytes."""
        return b"[" + b",".join(self.texts(keep)) + b"]"

    def records(self, keep=lambda status: True):
        return [fastjson.loads(text) for text in self.texts(keep)]


def listed(config, warn, states=True):
    """The Listing of every skill. With states=False only the statuses are sure (as `nexus status`
    needs them): `verified` may be stale where the status does not depend on the state."""
    manifest = current_manifest(config, warn)
    return Listing(manifest, _rows(manifest, config, warn, states))


def _rows(manifest, config, warn, states):
    identity = [len(manifest.data), zlib.crc32(manifest.data)]
    cache, names, entries = _read_cache(), manifest.names(), {}

    def entry_of(i):  # parsed only for a skill whose status is computed again
        if i not in entries:
            entries[i] = manifest.records()[i].entry()
        return entries[i]

    same = cache is not None and cache["manifest"] == identity and len(cache["rows"]) == len(names)
    needs = cache["needs"] if same else _needs(entry_of(i) for i in range(len(names)))
    world = _world(config, needs)
    rows = cache["rows"] if same and cache.get("world") == world else [None] * len(names)
    checker, now, changed = status.Checker(config), time.time_ns(), False
    root = paths.skills_state()
    state_file = lambda name: os.path.join(root, paths.checked_name(name), "state.json")  # noqa: E731 - paths.state_file, its root found once
    for i, row in enumerate(rows):
        if row is not None:
            if row[STAMP] == NO_STATE or not (states or row[BASE] == "ready"):
                continue
            if row[STAMP] is not None and row[STAMP] == _stamp(state_file(names[i])):
                continue
        skill, changed = entry_of(i), True
        base, missing, reason = ((row[BASE], row[MISSING], row[REASON]) if row is not None
                                 else _without_state(checker, skill))
        if skill.get("type") == "prompt":
            rows[i] = [base, missing, reason, True, NO_STATE, base]
        elif not states and base != "ready":  # its state changes nothing here: left unread, and unknown
            rows[i] = [base, missing, reason, False, None, base]
        else:
            stamp = _stamp(state_file(skill["name"]), now)
            state = skill_state.of(skill, warn)  # read after its stamp: a change meanwhile is seen next time
            rows[i] = [status.with_state(base, state), missing, reason, status.is_verified(skill, state), stamp, base]
    if changed:
        _write_cache({"manifest": identity, "needs": needs, "world": world, "rows": rows})
    return rows


def _without_state(checker, skill):
    base, missing, reason = checker.without_state(skill)
    return base, fastjson.dumps(missing), reason


def _needs(entries):
    """Every binary and env var any skill names: what the statuses depend on in the environment."""
    bins, env = set(), set()
    for skill in entries:
        bins.update(binaries(skill), required(skill, "anyBins"))
        env.update(env_names(skill))
    return [sorted(bins), sorted(env)]


def _world(config, needs):
    """What the statuses depend on beside the skills and their state: the config, the platform, and
    which of the binaries and env vars named are there now."""
    checker = status.Checker(config)
    bins, env = needs
    return [config, checker.platform, [b for b in bins if checker.has_binary(b)], [n for n in env if os.environ.get(n)]]


def _stamp(path, now=None):
    """[inode, size, mtime] of a state.json ([] when there is none); with `now`, None when it is too
    recent to be trusted later (it may change again within its mtime's tick)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return []
    except OSError:
        return None
    if now is not None and info.st_mtime_ns > now - RACY_NS:
        return None
    return [info.st_ino, info.st_size, info.st_mtime_ns]


def _read_cache():
    """The cache, when it has the shape this nexus writes; None otherwise (it is only slower)."""
    try:
        cache = fileio.read_json(paths.status_cache())
        rows, (bins, env) = cache["rows"], cache["needs"]
        if (isinstance(cache["manifest"], list) and isinstance(bins, list) and isinstance(env, list)
                and isinstance(rows, list) and all(isinstance(row, list) and len(row) == 6 for row in rows)):
            return cache
    except (BadInput, TypeError, KeyError, ValueError):
        pass
    return None


def _write_cache(cache):
    try:
        fileio.write_json(paths.status_cache(), cache)
    except OSError:
        pass  # a cache that cannot be written is only slower


def records(config, warn):
    """Every skill with its status, for the commands that show them all."""
    return listed(config, warn).records()


def ready(config, warn):
    """The ready skills, `priority: high` first, then by name: what agents are shown."""
    found = listed(config, warn).records(lambda status: status == "ready")
    return sorted(found, key=lambda r: (r.get("priority") != "high", r["name"]))


def summary(statuses):
    """How many skills have each status: {"ready": N, "needsSetup": N, ...}."""
    counts = dict.fromkeys(STATUS_KEYS.values(), 0)
    for found in statuses:
        counts[STATUS_KEYS[found]] += 1
    return counts
