"""Trust binds to content: an added skill runs only while its files are those it was added, updated or
trusted with.

$NEXUS_HOME/state/nexus/skills/NAME/trust.json keeps, for each file of the skill, its SHA-256 and its stat
stamp (size, mtime, ctime, inode). The gateway stats every file on each run of an added skill and hashes
only a file whose stamp moved (ctime cannot be set back by hand); a file whose content is still the
same gets its new stamp saved, so it is not hashed again. What a skill's own runs leave behind
(__pycache__, *.pyc) is no change.

A foundation module, so that the gateway and every list that offers skills can ask it: it imports only
the foundation, and hashlib only to hash (this is on the gateway's hot path).
"""

import os

from . import fastjson, fileio, paths

VERSION = 1


def left_by_runs(name, is_dir):
    """A file or folder a skill's own runs leave behind (Python's bytecode cache): never part of it."""
    return name == "__pycache__" if is_dir else name.endswith((".pyc", ".pyo"))


def walk(skill_dir):
    """{relative path: os.stat_result} of a skill's files, links followed inside it, a loop read once."""
    found, seen = {}, set()

    def visit(folder, prefix):
        real = os.path.realpath(folder)
        if real in seen:
            return
        seen.add(real)
        with os.scandir(folder) as it:
            for entry in it:
                try:
                    is_dir = entry.is_dir()
                    if left_by_runs(entry.name, is_dir) or entry.name == ".git":
                        continue
                    if is_dir:
                        visit(entry.path, prefix + entry.name + "/")
                    elif entry.is_file():
                        found[prefix + entry.name] = entry.stat()
                except OSError:
                    found[prefix + entry.name] = None  # unreadable: it cannot be the file that was recorded

    visit(skill_dir, "")
    return found


def stamp(st):
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def file_digest(path):
    import hashlib  # only when a file is hashed

    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def combined(digests):
    """The SHA-256 of a whole skill from its files' ({relative path: hex digest}): the lockfile's `sha256`,
    each path and its digest in the order of a walk that reads each folder's entries by name."""
    import hashlib  # as in file_digest

    total = hashlib.sha256()
    for rel in sorted(digests, key=lambda r: r.split("/")):
        total.update(rel.encode() + b"\0" + bytes.fromhex(digests[rel]))
    return total.hexdigest()


def measure(skill_dir):
    """{relative path: {'sha256', 'stamp'}} of a skill's files as they are now."""
    files = {}
    for rel, st in walk(skill_dir).items():
        if st is not None:
            files[rel] = {"sha256": file_digest(os.path.join(skill_dir, rel)), "stamp": stamp(st)}
    return files


def record(name, skill_dir):
    """Bind the skill's trust to its files as they are now; their combined SHA-256."""
    files = measure(skill_dir)
    _write(name, files)
    return combined({rel: f["sha256"] for rel, f in files.items()})


def forget(name):
    try:
        os.unlink(paths.trust_file(name))
    except FileNotFoundError:
        pass


def recorded(name):
    """{relative path: {'sha256', 'stamp'}} as last recorded, or None when nothing is."""
    try:
        with open(paths.trust_file(name), "rb") as f:
            data = fastjson.loads(f.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # unreadable or torn: nothing matches it, so `nexus skill trust` is asked for
    files = data.get("files") if isinstance(data, dict) else None
    return files if isinstance(files, dict) else {}


def changes(name, skill_dir):
    """What changed in a skill's files since they were recorded: {'changed', 'added', 'removed'} (sorted
    lists, all empty when nothing did), or None when nothing is recorded."""
    before = recorded(name)
    if before is None:
        return None
    now = walk(skill_dir)
    found = {"changed": [], "added": sorted(set(now) - set(before)), "removed": sorted(set(before) - set(now))}
    restamped = {}
    for rel in sorted(set(now) & set(before)):
        st, old = now[rel], before[rel]
        if st is not None and isinstance(old, dict) and stamp(st) == old.get("stamp"):
            continue
        try:
            same = st is not None and isinstance(old, dict) and file_digest(os.path.join(skill_dir, rel)) == old.get("sha256")
        except OSError:
            same = False
        if same:
            restamped[rel] = {**old, "stamp": stamp(st)}
        else:
            found["changed"].append(rel)
    if restamped and not any(found.values()):
        try:  # touched, not changed: the next run need not hash them again
            _write(name, {**before, **restamped})
        except OSError:
            pass
    return found


def added_skills():
    """{name: lock entry} of the lockfile's skills; {} when there is none or it cannot be read."""
    try:
        with open(paths.managed_lockfile(), "rb") as f:
            skills = fastjson.loads(f.read())["skills"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return skills if isinstance(skills, dict) else {}


def bind_unbound(name, added):
    """Record the files of an added skill that has no trust.json (added before trust was bound to its
    content) when they are still those the lockfile's sha256 says were added; True when it did."""
    skill_dir = os.path.join(paths.managed_skills(), paths.checked_name(name))
    files = measure(skill_dir)
    if combined({rel: f["sha256"] for rel, f in files.items()}) != added.get("sha256"):
        return False
    _write(name, files)
    return True


def unbound(name):
    """changes() for an added skill with no trust.json: none once its files are recorded (the upgrade
    step `trust-digests` does it for all, and says so), else that they differ from the lockfile. None
    for a skill not in the lockfile (placed by hand: the user's own, not bound)."""
    added = added_skills().get(name)
    if not isinstance(added, dict):
        return None
    if bind_unbound(name, added):
        return {"changed": [], "added": [], "removed": []}
    return {"changed": ["its files differ from the sha256 the lockfile recorded when it was added"],
            "added": [], "removed": []}


def upgrade_step(config):
    """The upgrade step `trust-digests`: the files of every skill added before are recorded now."""
    bound, differ = [], []
    for name, added in sorted(added_skills().items()):
        if paths.is_valid_name(name) and isinstance(added, dict) and recorded(name) is None:
            (bound if bind_unbound(name, added) else differ).append(name)
    if not bound and not differ:
        return None
    lines = [f"An added skill now runs only while its files are those it was added with: the files of "
             f"{', '.join(bound) or 'none'} are recorded; a change made behind nexus's back is refused until "
             f"`nexus skill trust NAME` accepts it."]
    if differ:
        lines.append(f"Changed since they were added, so refused until trusted: {', '.join(differ)}.")
    return lines


def refusal(entry):
    """Why an added skill may not run now (its files changed since nexus placed or trusted them), or None.
    A skill not from the managed folder, or placed there by hand, is not bound."""
    if entry.get("source") != "nexus-managed":
        return None
    name = entry["name"]
    found = changes(name, entry["dir"])
    if found is None:
        found = unbound(name)
    if not found or not any(found.values()):
        return None
    return (f"Skill '{name}' changed since it was added, not through nexus: {describe(found)}. Review and accept "
            f"the change with `nexus skill trust {name}` (it shows the audit of the change first)")


def describe(found):
    """'scripts/run.sh changed, x.sh added' from changes(), at most a few names of each kind."""
    parts = []
    for kind in ("changed", "added", "removed"):
        names = found[kind]
        if names:
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            parts.append(f"{shown} {kind}")
    return "; ".join(parts)


def _write(name, files):
    fileio.private_dirs(paths.skill_state_dir(name), paths.home())
    fileio.write_atomic(paths.trust_file(name), fastjson.dumps({"version": VERSION, "files": files}).encode())
