"""The shapes of nexus's records, in one place: ManifestEntry (spec 5.2), SkillState (4.2), UsageLogEntry (4.3)."""

MANIFEST_VERSION = 1
STATE_VERSION = 1
TYPES = ("tool", "script", "prompt")
REQUIRE_KEYS = ("bins", "anyBins", "env", "config")

# Frontmatter keys the specs name; every other key is kept under `extra`.
FRONTMATTER_KEYS = ("name", "description", "homepage", "metadata")
META_FIELDS = ("emoji", "os", "primaryEnv", "skillKey", "bundled", "priority", "always")
TEXT_FIELDS = ("emoji", "primaryEnv", "skillKey", "priority", "tool", "verify", "runner", "script")
FLAG_FIELDS = ("bundled", "always", "requiresAuth")


def now_iso(t=None):
    """A time as ISO 8601 UTC with milliseconds (time, not datetime: it is cheaper to import)."""
    import time

    t = time.time() if t is None else t
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def string_list(value):
    """A list of strings; OpenClaw skills often write lists as comma-separated strings."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [str(v) for v in value if v not in (None, "")]
    return []


def manifest_entry(skill, source, skill_dir, dir_mtime_ns, file_mtime_ns):
    """(ManifestEntry, warnings) of a parsed, valid SkillFile."""
    meta = skill.meta
    fm = skill.frontmatter
    entry = {
        "name": skill.name,
        "description": fm["description"].strip(),
        "source": source,
        "filePath": skill.path,
        "dir": skill_dir,
        "sha256": skill.sha256,
    }
    if fm.get("homepage"):
        entry["homepage"] = fm["homepage"]
    for key in META_FIELDS:
        if meta.get(key) not in (None, "", []):
            entry[key] = meta[key]
    if "os" in entry:
        entry["os"] = string_list(entry["os"])
    requires = meta.get("requires") if isinstance(meta.get("requires"), dict) else {}
    entry["requires"] = {k: string_list(requires.get(k)) for k in REQUIRE_KEYS}
    from . import known

    execution = known.execution(skill.name, meta)
    if "requiredEnv" in execution:
        execution["requiredEnv"] = string_list(execution["requiredEnv"])
    entry.update(execution)
    install = meta.get("install")
    entry["install"] = [spec for spec in install if isinstance(spec, dict)] if isinstance(install, list) else []
    entry["hasInstall"] = bool(entry["install"])
    extra = {k: v for k, v in fm.items() if k not in FRONTMATTER_KEYS}
    if extra:
        entry["extra"] = extra
    entry["dirMtimeNs"] = dir_mtime_ns
    entry["fileMtimeNs"] = file_mtime_ns
    return entry, _sanitize(entry, meta)


def _sanitize(entry, meta):
    """Drop the metadata values nexus cannot use, so one bad value never breaks listing or running.

    Loading is lenient (`nexus skills check` is strict): each dropped value is a warning, and a
    tool or script skill that names nothing to run is read as a prompt skill.
    """
    warnings = []
    for key in TEXT_FIELDS + FLAG_FIELDS:
        wanted = str if key in TEXT_FIELDS else bool
        if key in entry and not isinstance(entry[key], wanted):
            warnings.append(f"{key} must be {'text' if wanted is str else 'true or false'}, "
                            f"not {entry.pop(key)!r}; ignored")
    if meta.get("requires") is not None and not isinstance(meta["requires"], dict):
        warnings.append("requires must be a mapping of bins, anyBins, env and config; ignored")
    runnable = {"tool": bool(entry.get("tool")), "script": bool(entry.get("runner") and entry.get("script")),
                "prompt": True}
    if not runnable.get(entry["type"]):
        fallback = "script" if runnable["script"] else "tool" if runnable["tool"] else "prompt"
        problem = "is not tool, script or prompt" if entry["type"] not in TYPES else "names nothing to run"
        warnings.append(f"type {entry['type']!r} {problem}; read as {fallback}")
        entry["type"] = fallback
    return warnings


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
