"""The shapes of nexus's records, in one place: ManifestEntry (spec 5.2), SkillState (4.2), UsageLogEntry (4.3)."""

MANIFEST_VERSION = 1
STATE_VERSION = 1
SOURCES = ("nexus-extra", "nexus-bundled", "nexus-managed", "nexus-workspace")  # lowest precedence first
TYPES = ("tool", "script", "prompt")
STATUSES = ("ready", "needs-setup", "not-installed", "disabled", "unsupported", "invalid")
REQUIRE_KEYS = ("bins", "anyBins", "env", "config")

# Frontmatter keys the specs name; every other key is kept under `extra`.
FRONTMATTER_KEYS = ("name", "description", "homepage", "metadata")
META_FIELDS = ("emoji", "os", "primaryEnv", "skillKey", "bundled", "priority", "always")


def string_list(value):
    """A list of strings; OpenClaw skills often write lists as comma-separated strings."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [str(v) for v in value if v not in (None, "")]
    return []


def manifest_entry(skill, source, skill_dir, dir_mtime_ns, file_mtime_ns):
    """The ManifestEntry of a parsed, valid SkillFile."""
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
    return entry


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
