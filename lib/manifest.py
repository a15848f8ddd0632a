"""manifest.json: the cache of discovered skills, rebuilt only when a source or skill folder changed."""

import datetime
import os

from . import __version__, discovery, fileio, paths, schema
from .errors import BadInput, NexusError


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def build(entries, invalid, stamps):
    return {
        "version": schema.MANIFEST_VERSION,
        "nexusVersion": __version__,
        "generatedAt": now_iso(),
        "sources": stamps,
        "skills": {e["name"]: e for e in entries},
        "invalid": list(invalid),
    }


def write(manifest):
    path = paths.manifest_file()
    fileio.private_dirs(os.path.dirname(path), paths.home())
    fileio.write_json(path, manifest)


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
    return (discovery.mtime(record["dir"]) == record.get("dirMtimeNs")
            and discovery.mtime(record["filePath"]) == record.get("fileMtimeNs"))


def is_fresh(manifest, source_list):
    try:
        return (
            manifest is not None
            and manifest.get("version") == schema.MANIFEST_VERSION
            and manifest.get("nexusVersion") == __version__
            and manifest.get("sources") == discovery.source_stamps(source_list)
            and all(_unchanged(e) for e in manifest["skills"].values())
            and all(_unchanged(e) for e in manifest.get("invalid", []))
        )
    except (KeyError, TypeError, AttributeError):
        return False


def refresh(source_list):
    """Scan the sources and write a new manifest; returns (manifest, scan)."""
    stamps = discovery.source_stamps(source_list)  # taken first, so a change during the scan makes it stale
    scan = discovery.scan(source_list)
    manifest = build(scan.entries.values(), scan.invalid, stamps)
    write(manifest)
    return manifest, scan


def current(source_list, on_diagnostic=None):
    """A fresh manifest: the cached one when nothing changed, else a new scan."""
    manifest = load()
    if is_fresh(manifest, source_list):
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
    import difflib

    close = difflib.get_close_matches(name, list(manifest["skills"]), n=3, cutoff=0.6)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise NexusError(f"Skill '{name}' not found.{hint}\nRun 'nexus skills list' to see available skills.")
