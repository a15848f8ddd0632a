"""manifest.json: the cache of discovered skills, rebuilt only when a source or skill folder changed.

Architecture invariant: one builder, build(), makes every manifest, whether from a scan
(`nexus skills refresh`, or any command that finds the manifest stale) or from records on stdin
(`nexus-discover | nexus-manifest write`): given the same skills, both are the same bytes.
"""

import os

from .. import __version__, fileio, paths, schema
from ..errors import BadInput, NexusError
from ..state import skill_state


def build(records, source_list, stamps=None):
    """The manifest of discovered records: skills, and broken ones ("status": "invalid"); shadowed ones
    (with "shadowedBy") are left out. `stamps` of the sources, when taken before the records were read."""
    skills, invalid, dirs = {}, [], set()
    for record in records:
        if record.get("shadowedBy"):
            dirs.add(record.get("dir"))
        elif record.get("status") == "invalid":
            invalid.append(record)
            dirs.add(record.get("dir"))
        else:
            skills[record["name"]] = record
            dirs.add(record.get("dir"))
    from . import discovery

    return {
        "version": schema.MANIFEST_VERSION,
        "nexusVersion": __version__,
        "generatedAt": generated_at(),
        "sources": paths.source_stamps(source_list) if stamps is None else stamps,
        "skills": dict(sorted(skills.items())),
        "invalid": invalid,
        "folders": discovery.folders_without_skill(source_list, dirs),
    }


def generated_at():
    """Now, or SOURCE_DATE_EPOCH when set, so that a manifest can be reproduced byte for byte."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    return schema.now_iso(int(epoch) if epoch and epoch.isdigit() else None)


def write(manifest):
    """Replace manifest.json, and give each new tool or script skill its initial state."""
    path = paths.manifest_file()
    fileio.private_dirs(os.path.dirname(path), paths.home())
    fileio.write_json(path, manifest)
    skill_state.populate(manifest["skills"].values())


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


def refresh(source_list, must_write=True):
    """Scan the sources and write a new manifest; returns (manifest, scan). Without `must_write`, a
    manifest that cannot be written (a read-only or full disk) is still returned, and scan.diagnostics
    says why it was not written."""
    stamps = paths.source_stamps(source_list)  # taken first, so a change during the scan makes it stale
    from . import discovery

    scan = discovery.scan(source_list)
    manifest = build(scan.records(), source_list, stamps)
    try:
        write(manifest)
    except OSError as e:
        if must_write:
            raise
        scan.diagnostics.append(f"cannot keep the manifest: {e.filename}: {e.strerror}; the next command scans again")
    return manifest, scan


def current(source_list, on_diagnostic=None, name=None):
    """A fresh manifest: the cached one when nothing changed (for `name` alone, when given), else a new scan."""
    manifest = load()
    if is_fresh(manifest, source_list, name):
        return manifest
    manifest, scan = refresh(source_list, must_write=False)
    if on_diagnostic:
        for line in scan.diagnostics:
            on_diagnostic(line)
    return manifest


def entry(source_list, name, warn=None):
    """The entry of one skill, from a manifest kept fresh for it alone; NexusError when there is none."""
    return find(current(source_list, on_diagnostic=warn, name=paths.checked_name(name)), name)


def find(manifest, name):
    """The entry of skill `name`; UsageError for a name no skill can have, NexusError with suggestions when
    there is none."""
    entry = manifest["skills"].get(paths.checked_name(name))
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
