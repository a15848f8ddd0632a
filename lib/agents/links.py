"""Agent folders: each ready skill symlinked where an agent or editor reads skill folders.

The links made are recorded in $NEXUS_HOME/state/nexus/links.json, keyed by agent folder, so nexus
only ever touches its own links: a name the folder already has from elsewhere is left alone.
"""

import os

from .. import fileio, paths
from ..errors import BadInput, UsageError
from ..paths import AGENT_FOLDERS


def agent_folder(agent, project=None):
    """PROJECT/.cursor/skills and the like; the project folder defaults to the current one."""
    if agent not in AGENT_FOLDERS:
        raise UsageError(f"unknown agent '{agent}': use one of {', '.join(AGENT_FOLDERS)}")
    project = os.path.realpath(project or ".")
    if not os.path.isdir(project):
        raise UsageError(f"'{project}' is not a folder")
    folder = os.path.join(project, AGENT_FOLDERS[agent])
    fileio.inside(folder, project)  # .cursor may be a link out of the project: its skills are not ours to touch
    return folder


def read_links():
    """links.json as {'version', 'folders': {FOLDER: {NAME: TARGET}}}; BadInput naming the file when it is
    anything else, so a damaged record is never written over."""
    path = paths.links_file()
    data = fileio.read_json(path)  # BadInput names the file when it is not JSON
    if data is None:
        return {"version": 1, "folders": {}}
    if not _well_formed(data):
        raise BadInput(f"'{path}' is corrupt: expected {{\"folders\": {{FOLDER: {{NAME: TARGET}}}}}}; "
                       "fix it or remove it (nexus then forgets which links it made)")
    return data


def _well_formed(data):
    folders = data.get("folders") if isinstance(data, dict) else None
    created = data.get("created", {}) if isinstance(data, dict) else None
    return (isinstance(folders, dict) and all(
        isinstance(links, dict) and all(paths.is_valid_name(n) and isinstance(t, str) for n, t in links.items())
        for links in folders.values())
        and isinstance(created, dict) and all(isinstance(made, list) and all(isinstance(p, str) for p in made)
                                              for made in created.values()))


def _ours(link, target):
    return os.path.islink(link) and os.readlink(link) == target


def sync(folder, ready, on_skip):
    """Link each ready skill (name -> its folder) into `folder`, and drop our links to skills no longer ready."""
    report = {"folder": folder, "linked": [], "unchanged": [], "skipped": [], "unlinked": []}
    for name in ready:
        paths.checked_name(name)  # every name, before one becomes a path and before anything changes
    with fileio.Locked(paths.links_file(), read_links, paths.home()) as records:
        owned = records["folders"].setdefault(folder, {})
        if ready and not os.path.isdir(folder):  # the folders nexus makes are nexus's to remove when empty
            records.setdefault("created", {})[folder] = _missing_folders(folder)
            os.makedirs(folder)
        for name, target in sorted(ready.items()):
            link = os.path.join(folder, name)
            if name in owned and not _ours(link, owned[name]):
                del owned[name]  # replaced by someone else since: no longer ours
            if owned.get(name) == target:
                report["unchanged"].append(name)
            elif os.path.lexists(link) and name not in owned:
                on_skip(f"{link}: skipped: already there, and not linked by nexus")
                report["skipped"].append(name)
            else:
                _symlink(target, link)
                owned[name] = target
                report["linked"].append(name)
        for name in sorted(set(owned) - set(ready)):
            report["unlinked"] += _unlink(folder, name, owned.pop(name), on_skip)
        if not owned:
            del records["folders"][folder]
            _remove_created(records, folder)
    return report


def unlink(folder, on_skip):
    """Remove every link nexus made in `folder`, and the folders it made for them once they are empty;
    a link changed since is left alone."""
    report = {"folder": folder, "unlinked": []}
    with fileio.Locked(paths.links_file(), read_links, paths.home()) as records:
        for name, target in sorted(records["folders"].pop(folder, {}).items()):
            report["unlinked"] += _unlink(folder, name, target, on_skip)
        _remove_created(records, folder)
    return report


def _missing_folders(folder):
    """`folder` and those of its parents that do not exist yet, deepest first."""
    missing = []
    while not os.path.isdir(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    return missing


def _remove_created(records, folder):
    """Remove the folders nexus made for `folder`'s links, deepest first, as far as they are empty."""
    for made in records.get("created", {}).pop(folder, []):
        try:
            os.rmdir(made)
        except OSError:
            break  # not empty: someone else put something there
    if not records.get("created"):
        records.pop("created", None)


def _unlink(folder, name, target, on_skip):
    link = os.path.join(folder, name)
    if not _ours(link, target):
        if os.path.lexists(link):
            on_skip(f"{link}: left alone: changed since nexus linked it")
        return []
    os.unlink(link)
    return [name]


def _symlink(target, link):
    """Make or replace `link` in one rename, so an agent never sees it missing."""
    os.makedirs(os.path.dirname(link), exist_ok=True)
    staging = os.path.join(os.path.dirname(link), f".{os.path.basename(link)}.{os.getpid()}.new")
    if os.path.lexists(staging):
        os.unlink(staging)
    os.symlink(target, staging)
    os.replace(staging, link)
