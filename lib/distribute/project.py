"""Skills as code: a project's nexus.toml declares the skills it uses ([[skills]]: name, source, ref, path), and
`nexus skills sync` installs them into PROJECT/.nexus/skills through `skills add`'s own path (managed.add
under managed.into: a clone that runs nothing, the audit, the door, trust), then writes PROJECT/nexus.lock:
per skill its source, the commit it resolved to, the SHA-256 of its files, the permissions it declares and
its trust digest, sorted, so that a change is a small diff a reviewer reads.

Only [[skills]] is ever read from a project file: a cloned repository never sets policy (the sandbox,
profiles, entries, keys stay the user's own config's). The lock is a ceiling, never a grant: `--frozen`
refuses what differs from it, and the door still asks this user for what they have not accepted here; what
sync placed and trusted is recorded on this machine (paths.project_state), never in the repository.
"""

import os

from .. import config as configlib, fileio, paths, trust
from ..errors import BadInput, NexusError
from ..skill import entry as entrylib, skillmd
from . import managed, sources

LOCK_VERSION = 1
KEYS = ("name", "source", "ref", "path")
PINNED = ("source", "ref", "path")  # what nexus.toml says of a skill, which its lock entry must match
IGNORE_LINE = "/.nexus/skills/"
LOCK_HEADER = "# Written by `nexus skills sync` from nexus.toml: commit it, never edit it.\n"


class Project:
    """A project: its root folder, its nexus.toml and nexus.lock, its .nexus/skills."""

    def __init__(self, root):
        self.root = root
        self.file = os.path.join(root, paths.PROJECT_FILE)
        self.lockfile = os.path.join(root, paths.PROJECT_LOCK)
        self.skills = paths.project_skills(root)


def here(create=False):
    """The project nexus runs in (paths.project_root); with `create`, the current folder when there is none
    (`skills add --project` starts one). NexusError for none, and for a root where .nexus/ is the user's own."""
    root = paths.project_root()
    cwd = os.path.realpath(os.getcwd())
    if root is None and not create:
        where = cwd
        if any(os.path.lexists(os.path.join(cwd, f)) for f in (paths.PROJECT_FILE, paths.PROJECT_LOCK)):
            _refuse_root(cwd)  # a project file here that is never a project's: say why
        raise NexusError(f"not inside a project: no {paths.PROJECT_LOCK}, or {paths.PROJECT_FILE} with [[skills]], "
                         f"in {where} or a folder above it (`nexus skills add --project SOURCE` starts one here)")
    root = root or cwd
    _refuse_root(root)
    return Project(root)


def _refuse_root(root):
    if root == os.path.realpath(os.path.expanduser("~")):
        raise NexusError(f"{root} is your home folder: its .nexus/ is your own, never a project's: refused")
    if root == os.path.realpath(paths.home()):
        raise NexusError(f"{root} is NEXUS_HOME: its nexus.toml is your config, never a project file: refused")
    managed_folder = paths.managed_skills()
    if paths.contains(managed_folder, root) or paths.contains(paths.project_skills(root), managed_folder):
        raise NexusError(f"a project at {root} would share MANAGED_SKILLS_DIR ({paths.managed_skills()}): refused")


# -- nexus.toml ------------------------------------------------------------------------------------


def declared(project, warn=None):
    """The [[skills]] of the project's nexus.toml, as [{name, source, ref?, path?}] in the file's order; BadInput
    naming the file for what is not a skill entry. Any other table is said to be ignored, never read."""
    try:
        with open(project.file, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    except OSError as e:
        raise BadInput(f"'{project.file}': {e.strerror}") from None
    document = configlib.parse(data, project.file)
    ignored = sorted(k for k in document if k != "skills")
    if ignored and warn:
        warn(f"{project.file}: only [[skills]] is read from a project file; ignored: {', '.join(ignored)} "
             f"(policy is your own config's, {paths.config_file()})")
    found = document.get("skills", [])
    if not isinstance(found, list) or not all(isinstance(s, dict) for s in found):
        raise BadInput(f"'{project.file}': skills must be [[skills]] tables (name, source, ref, path)")
    seen = set()
    for number, skill in enumerate(found, 1):
        where = f"'{project.file}': [[skills]] number {number}"
        odd = [k for k in skill if k not in KEYS]
        if odd:
            raise BadInput(f"{where}: unknown key {odd[0]!r} (a skill has {', '.join(KEYS)})")
        if not all(isinstance(v, str) and v for v in skill.values()) or "source" not in skill:
            raise BadInput(f"{where}: name and source are required, and every value is a non-empty string")
        name = skill.get("name")
        if not paths.is_valid_name(name):
            raise BadInput(f"{where}: invalid skill name {name!r}: {paths.name_problem(name)}")
        if name in seen:
            raise BadInput(f"{where}: skill '{name}' is declared twice")
        seen.add(name)
    return found


def location(project, source):
    """A declared source as sources.resolve reads it: a folder or repository path is the project's (relative to
    its root), whatever the folder nexus runs in."""
    if "://" in source or source.startswith("git@") or os.path.isabs(os.path.expanduser(source)):
        return source
    inside = os.path.join(project.root, source)
    return inside if os.path.exists(inside) or source.startswith(".") else source


def as_written(project, source):
    """How `skills add --project SOURCE` writes SOURCE in nexus.toml: a folder inside the project relative to
    its root (it is the same in every clone), another folder absolute, a URL or owner/repo as given."""
    kind, where = sources.resolve(source)
    folder = where[len("file://"):] if where.startswith("file://") else where if kind == "folder" else None
    if folder is None:
        return source
    folder = os.path.realpath(folder)
    return os.path.relpath(folder, project.root) if paths.contains(project.root, folder) else folder


def declare(project, entries):
    """Append [[skills]] tables to nexus.toml (made when there is none), its other lines kept as they are."""
    import tomli_w  # an edit of nexus.toml only

    text = _text(project.file)
    names = {s["name"] for s in declared(project)}
    twice = [e["name"] for e in entries if e["name"] in names]
    if twice:
        raise NexusError(f"{project.file} already declares {', '.join(twice)}: "
                         f"`nexus skills update --project {twice[0]}` moves its pin")
    tables = "\n".join("[[skills]]\n" + tomli_w.dumps(entry) for entry in entries)
    _write_file(project, text.rstrip("\n") + "\n\n" + tables if text.strip() else tables)


def undeclare(project, names):
    """Remove the [[skills]] tables of `names` from nexus.toml (from its header to its last key); every other line,
    comments above and below it too, is kept as it is. NexusError naming what is not declared."""
    from ..config.statements import scan  # an edit of nexus.toml only: it brings tomllib

    text = _text(project.file)
    lines = text.splitlines(keepends=True)
    statements = scan(lines)
    drop, found = set(), set()
    for i, s in enumerate(statements):
        if s.kind != "array" or s.path != ("skills",):
            continue
        body = []
        for later in statements[i + 1:]:
            if later.kind in ("table", "array"):
                break
            body.append(later)
        name = next((b.value for b in body if b.kind == "value" and b.key == ("name",)), None)
        if name not in names:
            continue
        found.add(name)
        values = [b for b in body if b.kind == "value"]
        start, end = s.start, values[-1].end if values else s.end  # the comments around it stay
        if end < len(lines) and not lines[end].strip():
            end += 1
        drop.update(range(start, end))
    missing = [n for n in names if n not in found]
    if missing:
        raise NexusError(f"{project.file} declares no skill {', '.join(map(repr, missing))}")
    _write_file(project, "".join(line for i, line in enumerate(lines) if i not in drop))


def _text(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"'{path}': {getattr(e, 'strerror', None) or e}") from None


def _write_file(project, text):
    configlib.parse(text.encode(), project.file)  # what is written still parses
    mode = os.stat(project.file).st_mode & 0o777 if os.path.exists(project.file) else 0o644  # a file to commit
    fileio.write_atomic(project.file, text.encode(), mode)


# -- nexus.lock ------------------------------------------------------------------------------------


def read_lock(project):
    """{name: lock entry} of nexus.lock, or None when there is none; BadInput naming it when it is not one."""
    try:
        with open(project.lockfile, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise BadInput(f"'{project.lockfile}': {e.strerror}") from None
    document = configlib.parse(data, project.lockfile)
    skills = document.get("skills", {})
    if not isinstance(skills, dict) or not all(paths.is_valid_name(n) and _well_formed(e) for n, e in skills.items()):
        raise BadInput(f"'{project.lockfile}' is corrupt: expected [skills.NAME] tables as `nexus skills sync` "
                       "writes them")
    return skills


def _well_formed(entry):
    """A lock entry: text where text is kept, a 40 or 64 digit commit, permissions as sync writes them."""
    texts = (*PINNED, "integrity", "trust")
    if not isinstance(entry, dict) or not all(isinstance(entry.get(k, ""), str) for k in texts):
        return False
    commit, allowed = entry.get("commit"), entry.get("permissions", {})
    return (commit is None or isinstance(commit, str) and len(commit) in (40, 64)
            and all(c in "0123456789abcdef" for c in commit)) and isinstance(allowed, dict)


def write_lock(project, entries):
    """nexus.lock: sorted, one table per skill, written only when its text changes."""
    import tomli_w  # a sync that changes the lock only

    order = (*PINNED, "commit", "integrity", "trust", "permissions")
    skills = {name: {k: entries[name][k] for k in order if k in entries[name]} for name in sorted(entries)}
    document = {"version": LOCK_VERSION, "skills": skills}
    text = LOCK_HEADER + tomli_w.dumps(document)
    if _text(project.lockfile) != text:
        fileio.write_atomic(project.lockfile, text.encode(), 0o644)


def stale(skills, lock):
    """{name: why} where nexus.lock no longer says what nexus.toml declares ({} when it does)."""
    if lock is None:
        return {s["name"]: f"{paths.PROJECT_LOCK} is missing: run `nexus skills sync` and commit it" for s in skills}
    why = {}
    for skill in skills:
        entry = lock.get(skill["name"])
        if entry is None:
            why[skill["name"]] = f"declared in {paths.PROJECT_FILE} but not in {paths.PROJECT_LOCK}"
        elif not matches(skill, entry):
            differ = [k for k in PINNED if skill.get(k) != entry.get(k)]
            why[skill["name"]] = f"its {', '.join(differ)} in {paths.PROJECT_FILE} differ from {paths.PROJECT_LOCK}"
    for name in sorted(set(lock) - {s["name"] for s in skills}):
        why[name] = f"in {paths.PROJECT_LOCK} but no longer declared in {paths.PROJECT_FILE}"
    return {name: f"{why[name]} (the lock is stale: run `nexus skills sync` and commit it)" for name in sorted(why)}


def matches(skill, entry):
    return all(skill.get(k) == entry.get(k) for k in PINNED)


def permissions(folder):
    """What the skill in `folder` declares it may do when confined: {network, write, read} (the lock's record)."""
    skill = skillmd.read(skillmd.file_in(folder), os.path.basename(folder))
    entry = entrylib.build(skill, "nexus-project", folder, 0, 0)[0] if skill.ok else {}
    own = entry.get("sandbox") if isinstance(entry.get("sandbox"), dict) else {}

    def strings(value):
        return sorted({v for v in value if isinstance(v, str)}) if isinstance(value, list) else []

    return {"network": own.get("network") is True, "write": strings(own.get("write")), "read": strings(own.get("read"))}


def digest(hexdigest):
    return f"sha256:{hexdigest}"


# -- sync ------------------------------------------------------------------------------------------


def sync(project, admit, frozen=False, moving=None, force=False, warn=None):
    """Install the declared skills: {'root', 'added', 'updated', 'unchanged', 'removed', 'refused': [{name,
    error}], 'changes': {name: {key: [before, after]}}}. admit: the door, as managed.add's. `frozen`: exactly
    nexus.lock, never written. `moving`: the names whose pins move to what their ref names now (all of them
    when empty), as `skills update --project`; None: every locked skill stays at its commit."""
    state = paths.project_state(project.root)
    fileio.private_dirs(state, paths.home())
    with fileio.Lock(os.path.join(state, ".sync.lock")):  # one sync of a project at a time: nexus.lock is whole
        return _sync(project, admit, frozen, moving, force, warn)


def _sync(project, admit, frozen, moving, force, warn):
    skills = declared(project, warn)
    lock = read_lock(project)
    report = {"root": project.root, "added": [], "updated": [], "unchanged": [], "removed": [], "refused": [],
              "changes": {}}
    if frozen:
        why = stale(skills, lock)
        if why:
            report["refused"] = [{"name": name, "error": error} for name, error in why.items()]
            return report
    if moving:
        unknown = [n for n in moving if n not in {s["name"] for s in skills}]
        if unknown:
            raise NexusError(f"{project.file} declares no skill {', '.join(map(repr, unknown))}")
    lock = lock or {}
    written = {}
    fileio.inside(project.skills, project.root)  # a .nexus that links elsewhere (~/.nexus, ~/.ssh) is not written
    os.makedirs(project.skills, exist_ok=True)
    with managed.into(project.root):
        before = managed.read_lock()["skills"]
        for skill in sorted(skills, key=lambda s: s["name"]):
            name = skill["name"]
            pinned = lock.get(name) if name in lock and matches(skill, lock[name]) else None
            moves = moving is not None and (not moving or name in moving)
            try:
                where = sources.resolve(location(project, skill["source"]))[1]
                if name in before and before[name].get("source") != where:
                    managed.remove([name])  # declared from elsewhere now: what sync placed goes first
                entry = _install(project, skill, pinned, frozen, moves, force, admit, warn)
            except NexusError as e:
                report["refused"].append({"name": name, "error": str(e)})
                if name in lock:
                    written[name] = lock[name]  # a failure never drops a pin
                continue
            written[name] = entry
            old = lock.get(name)
            changes = {k: [old.get(k), entry[k]] for k in ("permissions", "commit", "integrity")
                       if old is not None and old.get(k) != entry.get(k)}
            if changes:
                report["changes"][name] = changes
            placed_before = before.get(name, {}).get("sha256")
            if placed_before is None:
                report["added"].append(name)
            elif placed_before != managed.read_lock()["skills"][name]["sha256"]:
                report["updated"].append(name)
            else:
                report["unchanged"].append(name)
        for name in sorted(set(managed.read_lock()["skills"]) - {s["name"] for s in skills}):
            try:
                managed.remove([name])
                report["removed"].append(name)
            except NexusError as e:
                report["refused"].append({"name": name, "error": f"no longer declared, but kept: {e}"})
    if not frozen:
        write_lock(project, written)
        ignore(project)
    return report


def _install(project, skill, pinned, frozen, moves, force, admit, warn):
    """Place one declared skill through managed.add and return its lock entry; NexusError saying why not."""
    name = skill["name"]
    commit = pinned.get("commit") if pinned else None
    ref = commit if commit and not moves else skill.get("ref")

    def checked(name, folder, accepted):
        if frozen:  # before anything is placed: the lock is a ceiling
            why = _unlike(pinned, folder)
            if why:
                return why
        return admit(name, folder, accepted) if admit else None

    try:
        report = managed.add(location(project, skill["source"]), [name], copy=True, force=force, on_problem=warn,
                             admit=checked, ref=ref, path=skill.get("path"))
    except NexusError as e:
        if commit and ref == commit:  # pinned: a commit the repository no longer has stays pinned until moved
            raise NexusError(f"the locked commit {commit} cannot be fetched: {e}" +
                             ("" if frozen else f"; `nexus skills update --project {name}` moves its pin")) from None
        raise
    if report["refused"]:
        refused = report["refused"][0]
        findings = "; ".join(f"{f['severity']} {f['path']}: {f['message']}" for f in refused.get("findings", []))
        raise NexusError(refused["error"] + (f": {findings}" if findings else ""))
    placed = managed.read_lock()["skills"][name]
    folder = managed.skill_path(name)
    lost = report["unchanged"] and trust.recorded(name, project.root) is None
    if lost and not any(map(trust.in_cache, trust.walk(folder))):
        trust.record(name, folder, project.root)  # its files are those placed (add compared them), no bytecode beside
    recorded = trust.recorded(name, project.root) or {}
    entry = {**{k: skill[k] for k in PINNED if k in skill}, "integrity": digest(placed["sha256"]),
             "permissions": permissions(folder),
             "trust": digest(trust.combined({rel: f["sha256"] for rel, f in recorded.items()}))}
    if report["revision"]:
        entry["commit"] = report["revision"]
    if frozen:
        why = _unlike(pinned, folder, entry)
        if why:
            raise NexusError(why)
    return entry


def _unlike(pinned, folder, entry=None):
    """Why the skill in `folder` (with its lock entry, once placed) is not what nexus.lock pinned, or None."""
    if entry is None:
        rels = sources.files(folder, folder)
        entry = {"integrity": digest(sources.digest(folder, rels)), "permissions": permissions(folder)}
    if entry["integrity"] != pinned.get("integrity"):
        return f"its files' SHA-256 {entry['integrity']} differs from {pinned.get('integrity')} in {paths.PROJECT_LOCK}"
    if entry["permissions"] != pinned.get("permissions"):
        return (f"the permissions it declares ({said(entry['permissions'])}) differ from those in "
                f"{paths.PROJECT_LOCK} ({said(pinned.get('permissions'))})")
    if pinned.get("commit") and entry.get("commit", pinned["commit"]) != pinned["commit"]:
        return f"it resolved to commit {entry['commit']}, not {pinned['commit']} as {paths.PROJECT_LOCK} says"
    return None


def said(allowed):
    """'network yes; writes x; reads y' of a lock's permissions."""
    if not isinstance(allowed, dict):
        return "none recorded"
    parts = [f"network {'yes' if allowed.get('network') else 'no'}"]
    parts += [f"{word} {', '.join(map(str, allowed[key]))}" for key, word in (("write", "writes"), ("read", "reads"))
              if isinstance(allowed.get(key), list) and allowed[key]]
    return "; ".join(parts)


def ignore(project):
    """Add .nexus/skills to the project's .gitignore, once: what sync places is this machine's."""
    path = os.path.join(project.root, ".gitignore")
    text = _text(path)
    if any(line.strip().rstrip("/").lstrip("/") in (".nexus", ".nexus/skills") for line in text.splitlines()):
        return
    fileio.inside(path, project.root)
    mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o644
    fileio.write_atomic(path, (text + ("\n" if text and not text.endswith("\n") else "") + IGNORE_LINE + "\n").encode(),
                        mode)
