"""manifest.json: the cache of discovered skills, rebuilt only when a source or skill folder changed."""

import os

from . import __version__, fileio, paths, schema
from .errors import BadInput, NexusError


def build(entries, invalid, stamps, folders=()):
    return {
        "version": schema.MANIFEST_VERSION,
        "nexusVersion": __version__,
        "generatedAt": schema.now_iso(),
        "sources": stamps,
        "skills": {e["name"]: e for e in entries},
        "invalid": list(invalid),
        "folders": list(folders),
    }


def write(manifest):
    """Replace manifest.json, and give each new tool or script skill its initial state."""
    from . import state

    path = paths.manifest_file()
    fileio.private_dirs(os.path.dirname(path), paths.home())
    fileio.write_json(path, manifest)
    state.populate(manifest["skills"].values())


def load():
    """The manifest, or None when it is missing or unreadable (a stale cache, not an error)."""
    try:
        manifest = fileio.read_json(paths.manifest_file())
    except BadInput:
        return None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("skills"), dict):
        return None
    return manifest


def _unchanged(record):
    return (paths.mtime(record["dir"]) == record.get("dirMtimeNs")
            and ("filePath" not in record or paths.mtime(record["filePath"]) == record.get("fileMtimeNs")))


def is_fresh(manifest, source_list, name=None):
    """True when no source or skill folder changed since the manifest was written.

    With `name`, only the sources and that one skill are checked: enough to run it. A name the
    manifest does not know gets the full check, since its SKILL.md may have just been written.
    """
    try:
        if (manifest is None or manifest.get("version") != schema.MANIFEST_VERSION
                or manifest.get("nexusVersion") != __version__
                or manifest.get("sources") != paths.source_stamps(source_list)):
            return False
        records = list(manifest["skills"].values()) + manifest.get("invalid", [])
        named = [r for r in records if r["name"] == name]
        if not named:
            records += manifest.get("folders", [])
        return all(_unchanged(r) for r in named or records)
    except (KeyError, TypeError, AttributeError):
        return False


def refresh(source_list):
    """Scan the sources and write a new manifest; returns (manifest, scan)."""
    stamps = paths.source_stamps(source_list)  # taken first, so a change during the scan makes it stale
    from . import discovery

    scan = discovery.scan(source_list)
    manifest = build(scan.entries.values(), scan.invalid, stamps, scan.folders)
    write(manifest)
    return manifest, scan


def current(source_list, on_diagnostic=None, name=None):
    """A fresh manifest: the cached one when nothing changed (for `name` alone, when given), else a new scan."""
    manifest = load()
    if is_fresh(manifest, source_list, name):
        return manifest
    manifest, scan = refresh(source_list)
    if on_diagnostic:
        for line in scan.diagnostics:
            on_diagnostic(line)
    return manifest


def find(manifest, name):
    """The entry of skill `name`; NexusError with suggestions when there is none."""
    entry = manifest["skills"].get(name)
    if entry is not None:
        return entry
    for broken in manifest.get("invalid", []):
        if broken["name"] == name:
            where = f"{broken['filePath']}:{broken['line']}" if broken.get("line") else broken["filePath"]
            raise NexusError(f"Skill '{name}' is invalid: {where}: {broken['error']}")
    import difflib

    close = difflib.get_close_matches(name, list(manifest["skills"]), n=3, cutoff=0.6)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise NexusError(f"Skill '{name}' not found.{hint}\nRun 'nexus skills list' to see available skills.")
