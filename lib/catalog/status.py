"""A skill's status (ready, needs setup, not installed, disabled, unsupported) from its entry, its state,
the config and the environment.

Architecture invariant: status is a pure function of those: nothing here runs a command.
"""

import os
import sys

from .. import config as configlib, schema
from ..state import health
from ..skill.entry import binaries, env_names, os_fits, primary_env, required


def search_dirs(config, environ=None):
    """Where binaries are looked up: skills.binPath, then PATH."""
    environ = os.environ if environ is None else environ
    return configlib.bin_path(config) + [d for d in environ.get("PATH", "").split(os.pathsep) if d]


def which(name, dirs):
    """The executable `name` in `dirs` (or the path itself when it is absolute), else None: a relative
    path would name whatever the caller's folder holds."""
    if "/" in name and not os.path.isabs(name):
        return None
    candidates = [name] if "/" in name else [os.path.join(d, name) for d in dirs]
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def injected_env(entry, config):
    """Env vars the gateway adds for this skill: skills.entries.KEY.env, and apiKey as its primary env."""
    skill_config = configlib.skill_entry(config, entry)
    env = {}
    extra = skill_config.get("env")
    if isinstance(extra, dict):
        env.update((str(k), str(v)) for k, v in extra.items())
    key, name = skill_config.get("apiKey"), primary_env(entry)
    if key and name:
        env[name] = str(key)
    return env


FILE_MARK = "file:"  # a name Checker.has_binary looks up as a file: a script skill's script


def script_file(entry):
    """FILE_MARK + the path of a script skill's script (None for another skill): installed only while it is a
    file. A script outside the skill's folder is never a file of it."""
    if entry.get("type") != "script" or not entry.get("dir"):
        return None
    folder = os.path.realpath(entry["dir"])
    path = os.path.realpath(os.path.join(folder, str(entry.get("script") or "")))
    return FILE_MARK + (path if path.startswith(folder + os.sep) else "")


def is_set(value):
    """An env var's value counts when it holds something other than blanks, as OpenClaw trims it."""
    return isinstance(value, str) and bool(value.strip())


class Checker:
    """Evaluates entries against one config and environment, caching binary lookups."""

    def __init__(self, config, environ=None, platform=None):
        self.config = config
        self.environ = os.environ if environ is None else environ
        self.platform = platform or sys.platform
        self.dirs = search_dirs(config, self.environ)
        self._found = {}

    def has_binary(self, name):
        """True when the binary is found; for FILE_MARK + path (a script skill's script), when that is a file."""
        if name not in self._found:
            self._found[name] = (os.path.isfile(name[len(FILE_MARK):]) if name.startswith(FILE_MARK)
                                 else which(name, self.dirs) is not None)
        return self._found[name]

    def disabled_reason(self, entry):
        if configlib.skill_entry(self.config, entry).get("enabled") is False:
            return "disabled in config"
        allow = configlib.get(self.config, "skills.allowBundled")
        if entry.get("source") == "nexus-bundled" and isinstance(allow, list) and entry["name"] not in allow:
            return "not in skills.allowBundled"
        return None

    def supported(self, entry):
        return os_fits(entry.get("os"), self.platform)

    def missing(self, entry):
        """What the skill lacks: {'bins', 'anyBins', 'env', 'config'}, each a list."""
        missing = {key: [] for key in schema.REQUIRE_KEYS}
        if entry.get("always") is True:
            return missing
        missing["bins"] = [b for b in binaries(entry) if not self.has_binary(b)]
        any_bins = required(entry, "anyBins")
        if any_bins and not any(self.has_binary(b) for b in any_bins):
            missing["anyBins"] = any_bins
        injected = injected_env(entry, self.config)
        missing["env"] = [n for n in env_names(entry) if not is_set(self.environ.get(n)) and not is_set(injected.get(n))]
        missing["config"] = [p for p in required(entry, "config") if not configlib.get(self.config, p)]
        script = script_file(entry)
        if script and not self.has_binary(script):
            missing["script"] = [entry.get("script")]  # only where it lacks: the other keys are in every entry
        return missing

    def without_state(self, entry):
        """(status, missing, disabled reason) of an entry as far as its state does not matter."""
        missing = self.missing(entry)
        reason = self.disabled_reason(entry)
        if reason:
            status = "disabled"
        elif not self.supported(entry):
            status = "unsupported"
        elif missing["bins"] or missing["anyBins"] or missing.get("script"):
            status = "not-installed"
        elif missing["env"] or missing["config"]:
            status = "needs-setup"
        else:
            status = "ready"
        return status, missing, reason

    def evaluate(self, entry, state=None):
        """{'status', 'missing', 'disabledReason', 'verified', ...} for a manifest entry and its SkillState:
        the status, then what the state adds to it."""
        base, missing, reason = self.without_state(entry)
        status, added = self.with_state(entry, base, state or {})
        return {"status": status, "missing": missing, **({"disabledReason": reason} if reason else {}), **added}

    def with_state(self, entry, base, state):
        """(status, {'verified', 'verifiesAgain', 'degraded', 'drifted', their reasons, 'reason'}): what a
        skill's state makes of `base`, its status as far as its state does not matter. A skill that would
        be ready needs setup after all when its last verification failed; health flags are judged only
        for a skill that is installed and configured (a skill that is not has no health to lose)."""
        verified = is_verified(entry, state)
        added = {"verified": verified}
        if not verified and entry.get("type") != "prompt" and state.get("configuredAt"):
            added["verifiesAgain"] = True  # it was verified once; a failure since means the next run verifies
        for flag, judge in (("degraded", health.degraded), ("drifted", health.drifted)):
            why = judge(state) if base == "ready" else None
            added[flag] = bool(why)  # flags on the status, never a status of their own
            if why:
                added[flag + "Reason"] = why
        if base == "unsupported":
            added["reason"] = f"needs {', '.join(entry.get('os') or [])} (this is {self.platform})"
        return ("needs-setup" if base == "ready" and state.get("lastVerifyOk") is False else base), added


WORDS = {"ready": "ready", "needs-setup": "needs setup", "not-installed": "not installed", "disabled": "disabled",
         "unsupported": "not for this platform", "invalid": "invalid"}


def failing(record):
    """True for a skill that would be ready but whose recent calls mostly fail (state.health.degraded): it
    is shown apart from the ready ones, and never offered to a model."""
    return record.get("status") == "ready" and bool(record.get("degraded"))


def state_words(record):
    """The words for a skill's state, the same in every command: its status, then for a ready skill
    whether it is verified yet and its health flags. ['ready', 'not verified yet'], ['needs setup'],
    ['failing 8 of the last 10 calls']."""
    if failing(record):
        return [record.get("degradedReason") or "failing"] + (["drifted"] if record.get("drifted") else [])
    words = [WORDS[record["status"]]]
    if record["status"] == "ready":
        if not record.get("verified"):
            words.append("verifies again on its next run" if record.get("verifiesAgain") else "not verified yet")
        words += [flag for flag in ("degraded", "drifted") if record.get(flag)]
    return words


def is_verified(entry, state):
    """Prompt skills need no verification; others passed it for the SKILL.md they have now."""
    if entry.get("type") == "prompt":
        return True
    fingerprint = state.get("fingerprint")
    return (state.get("configured") is True and isinstance(fingerprint, dict)
            and fingerprint.get("skillSha256") == entry.get("sha256"))
