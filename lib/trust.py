"""Trust binds to content: an added skill runs only while its files are those it was added, updated or
trusted with.

$NEXUS_HOME/state/nexus/skills/NAME/trust.json keeps, for each file of the skill, its SHA-256 and its stat
stamp (size, mtime, ctime, inode). The gateway stats every file on each run of an added skill and hashes
only a file whose stamp moved (ctime cannot be set back by hand); a file whose content is still the
same gets its new stamp saved, so it is not hashed again. Python's bytecode cache is part of what is
bound (Python loads a .pyc there whose recorded mtime and size match its source), so the gateway runs
an added skill with PYTHONDONTWRITEBYTECODE (gateway.plan.environment): its runs leave nothing behind.

A foundation module, so that the gateway and every list that offers skills can ask it: it imports only
the foundation, and hashlib only to hash (this is on the gateway's hot path).
"""

import os

from . import fastjson, fileio, paths
from .errors import NexusError

VERSION = 2  # 2: __pycache__ counts (a version-1 record left it out)


CACHE = "__pycache__"  # Python's bytecode cache: Python loads what is in it, so trust counts it


def walk(skill_dir, root=None, caches=True, gits=False):
    """{relative path: os.stat_result, or None when unreadable} of a skill's files, in the order of a walk
    that reads each folder's entries by name; links inside are followed, a loop is read once.

    The one walk of a skill's files (trust here, what `skills add` copies and the lockfile's sha256 in
    distribute.sources). `.git`, folder or file (a clone's, a worktree's or a submodule's), is never a
    skill's file. `caches`: whether __pycache__ folders count. Trust counts them, for Python runs a .pyc
    there whose recorded mtime and size match its source (the gateway runs an added skill with
    PYTHONDONTWRITEBYTECODE, so its runs leave none); what is copied and its sha256 leave them out, as a
    cache is not part of a skill. `root`: a symlink that leads out of it is a NexusError. `gits`: a `.git` is
    listed (with no stat: it is never a file that was recorded), for a linked skill's folder may hold one
    whose contents nexus cannot bind, and its hooks and config run whenever git works there.
    """
    found, seen = {}, set()

    def visit(folder, prefix):
        real = os.path.realpath(folder)
        if real in seen:
            return
        seen.add(real)
        with os.scandir(folder) as it:
            for entry in sorted(it, key=lambda e: e.name):
                rel = prefix + entry.name
                if entry.name == ".git":
                    if gits:
                        found[rel] = None
                    continue
                if root is not None and entry.is_symlink() and not paths.contains(root, entry.path):
                    raise NexusError(f"'{rel}' is a symlink that points outside the source")
                try:
                    if entry.is_dir():
                        if caches or entry.name != CACHE:
                            visit(entry.path, rel + "/")
                    elif entry.is_file():
                        found[rel] = entry.stat()
                except OSError:
                    found[rel] = None  # unreadable: it cannot be the file that was recorded

    visit(skill_dir, "")
    return found


def gits(skill_dir):
    """The `.git` files or folders inside a skill's folder (relative paths)."""
    return [rel for rel in walk(skill_dir, gits=True) if rel.rsplit("/", 1)[-1] == ".git"]


def in_cache(rel):
    """True for a file of a __pycache__ folder (which walk(caches=False) leaves out)."""
    return CACHE in rel.split("/")[:-1]


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


def record(name, skill_dir, project=None, seen=None):
    """Bind the skill's trust to its files as they are now (`project`: the root of a project skill's project).
    `seen`: measure() from before they were audited and a person asked about them; when the files are no longer
    those, nothing is bound (a NexusError): a yes covers only what was shown."""
    files = measure(skill_dir)
    if seen is not None and {r: f["sha256"] for r, f in files.items()} != {r: f["sha256"] for r, f in seen.items()}:
        raise NexusError(f"'{name}' changed again while it was audited and asked about: nothing trusted (run it again)")
    _write(name, files, project)


def forget(name, project=None):
    try:
        os.unlink(paths.trust_file(name, project))
    except FileNotFoundError:
        pass


def recorded(name, project=None):
    """{relative path: {'sha256', 'stamp'}} as last recorded, or None when nothing is."""
    found = _read(name, project)
    return found if found is None else found[1]


def _read(name, project=None):
    """(version, files) of the skill's trust.json, or None when there is none."""
    try:
        with open(paths.trust_file(name, project), "rb") as f:
            data = fastjson.loads(f.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return VERSION, {}  # unreadable or torn: nothing matches it, so `nexus skill trust` is asked for
    files = data.get("files") if isinstance(data, dict) else None
    return (data.get("version"), files) if isinstance(files, dict) else (VERSION, {})


def changes(name, skill_dir, project=None):
    """What changed in a skill's files since they were recorded: {'changed', 'added', 'removed'} (sorted
    lists, all empty when nothing did), or None when nothing is recorded."""
    found = _read(name, project)
    if found is None:
        return None
    version, before = found
    now = walk(skill_dir, gits=True)
    renew = {}
    if version == 1:  # recorded when __pycache__ did not count: the cache there now is taken as its runs', once
        renew = {rel: {"sha256": file_digest(os.path.join(skill_dir, rel)), "stamp": stamp(st)}
                 for rel, st in now.items() if in_cache(rel) and st is not None and rel not in before}
        before = {**before, **renew}
    found = {"changed": [], "added": sorted(set(now) - set(before)), "removed": sorted(set(before) - set(now))}
    for rel in sorted(set(now) & set(before)):
        st, old = now[rel], before[rel]
        if st is not None and isinstance(old, dict) and stamp(st) == old.get("stamp"):
            continue
        try:
            same = st is not None and isinstance(old, dict) and file_digest(os.path.join(skill_dir, rel)) == old.get("sha256")
        except OSError:
            same = False
        if same:
            renew[rel] = {**old, "stamp": stamp(st)}
        else:
            found["changed"].append(rel)
    if (renew or version == 1) and not any(found.values()):
        try:  # touched, not changed (or a version-1 record): the next run need not hash them again
            _write(name, {**before, **renew}, project)
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
    if combined({rel: f["sha256"] for rel, f in files.items() if not in_cache(rel)}) != added.get("sha256"):
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
    A skill not from the managed folder, or placed there by hand, is not bound; a project skill always is."""
    if entry.get("source") not in paths.ADDED:
        return None
    name = entry["name"]
    if entry["source"] == "nexus-project":  # PROJECT/.nexus/skills/NAME: trusted on this machine, or never run
        project = os.path.dirname(os.path.dirname(os.path.dirname(entry["dir"])))
        found = changes(name, entry["dir"], project)
        if found is None:
            return (f"Skill '{name}' of the project {project} was not installed on this machine by `nexus skills "
                    f"sync`: run it there (a skill folder committed into a repository is never run as it is)")
        if any(found.values()):
            return (f"Skill '{name}' changed since `nexus skills sync` placed it: {describe(found)}. Run `nexus "
                    f"skills sync` in {project} to put back the locked files")
        return None
    found = changes(name, entry["dir"])
    if found is None:
        found = unbound(name)
    if not found or not any(found.values()):
        return None
    return (f"Skill '{name}' changed since it was added, not through nexus: {describe(found)}. Review and accept "
            f"the change with `nexus skill trust {name}` (it shows the audit of the change first)")


def marked(records):
    """The records, each added skill that changed behind nexus's back given `untrusted`: {'reason': what
    refusal() says, 'step': the command that accepts the change} (`skills list`, `skill show`)."""
    for record in records:
        why = "dir" in record and refusal(record)
        if why:
            record["untrusted"] = {"reason": why, "step": f"nexus skill trust {record['name']}"}
    return records


def describe(found):
    """'scripts/run.sh changed, x.sh added' from changes(), at most a few names of each kind."""
    parts = []
    for kind in ("changed", "added", "removed"):
        names = found[kind]
        if names:
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            parts.append(f"{shown} {kind}")
    return "; ".join(parts)


def _write(name, files, project=None):
    fileio.private_dirs(os.path.dirname(paths.trust_file(name, project)), paths.home())
    fileio.write_atomic(paths.trust_file(name, project), fastjson.dumps({"version": VERSION, "files": files}).encode())
