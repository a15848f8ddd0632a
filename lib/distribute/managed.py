"""The managed skills folder: skills added from a source, and the lockfile that records them.

MANAGED_SKILLS_DIR/.nexus-lock.json maps each added skill to where it came from (source, revision,
path inside the source), how it was placed (link or copy) and the SHA-256 of its files, so `update`
can say exactly which skills changed. Every change happens under one lock and is written atomically.

A project's `.nexus/skills` is a managed folder too (`into`): its skills are placed, audited, asked about and
trusted by the same code, its lockfile and trust records kept on this machine (distribute.project).
"""

import contextlib
import contextvars
import os
import shutil

from .. import config as configlib, fileio, paths, trust
from ..catalog import manifest
from ..errors import BadInput, NexusError
from ..schema import now_iso
from ..skill import audit as auditlib, skillmd
from ..skill.skillmd import Problem
from ..style import Progress, plural
from . import sources

LOCK_VERSION = 1
_PROJECT = contextvars.ContextVar("nexus_project", default=None)  # the project root whose folder is managed now


@contextlib.contextmanager
def into(project):
    """Within the block, this module manages the project's .nexus/skills (`project`: its root) instead of
    MANAGED_SKILLS_DIR: its lockfile and the trust of its skills are this machine's, in paths.project_state."""
    token = _PROJECT.set(project)
    try:
        yield
    finally:
        _PROJECT.reset(token)


def folder():
    project = _PROJECT.get()
    return paths.managed_skills() if project is None else paths.project_skills(project)


def lockfile():
    project = _PROJECT.get()
    return paths.managed_lockfile() if project is None else os.path.join(paths.project_state(project), "lock.json")


def source_name():
    return "nexus-managed" if _PROJECT.get() is None else "nexus-project"


def skill_path(name):
    """MANAGED_SKILLS_DIR/NAME, for a valid name only."""
    return os.path.join(folder(), paths.checked_name(name))


def read_lock():
    """The lockfile's {'version', 'skills'}; BadInput naming the file when it is corrupt."""
    path = lockfile()
    data = fileio.read_json(path)  # BadInput names the file when it is not JSON
    if data is None:
        return {"version": LOCK_VERSION, "skills": {}}
    entries = data.get("skills") if isinstance(data, dict) else None
    bad = "" if isinstance(entries, dict) else "expected {\"skills\": {NAME: {...}}}"
    for name, entry in entries.items() if not bad else ():
        wrong = [key for key, want in ENTRY_SHAPE.items() if isinstance(entry, dict) and key in entry
                 and not isinstance(entry[key], want)]
        if not paths.is_valid_name(name) or not isinstance(entry, dict) or wrong:
            bad = f"skill {name!r}: " + (f"'{wrong[0]}' is of the wrong type" if wrong else "not NAME: {...}")
            break
    if bad:
        raise BadInput(f"lockfile '{path}' is corrupt: {bad}; fix it or remove it (added skills then count as "
                       "placed by hand)")
    return data


ENTRY_SHAPE = {"source": str, "sourceType": str, "revision": (str, type(None)), "path": str, "sha256": str,
               "placement": str, "updatedAt": str, "addedAt": str, "trustedAt": str, "audit": list,
               "sandbox": dict}  # what add and update read back of an entry


def locked():
    """`with locked() as lock:` the lockfile, read and held, written back when changed."""
    if _PROJECT.get() is not None:
        fileio.private_dirs(os.path.dirname(lockfile()), paths.home())
    return fileio.Locked(lockfile(), read_lock)


def place(name, candidate, copy):
    """Put a candidate skill at MANAGED_SKILLS_DIR/NAME, replacing what is there in one rename."""
    target = skill_path(name)
    try:
        _place(target, candidate, copy)
    except OSError as e:
        raise NexusError(f"cannot place skill '{name}' at {target}: {e.strerror or e}") from None


def _place(target, candidate, copy):
    folder, name = os.path.split(target)
    # Dot names: a scan running meanwhile skips them.
    staging, old = (os.path.join(folder, f".{name}.{os.getpid()}.{end}") for end in ("new", "old"))
    _discard(staging)
    try:
        if copy:
            _copy(candidate, staging)
        else:
            os.symlink(os.path.realpath(candidate.dir), staging)
        if os.path.lexists(target):
            os.rename(target, old)
        try:
            os.rename(staging, target)
        except OSError:
            if os.path.lexists(old):  # what was there goes back
                os.rename(old, target)
            raise
    finally:  # a copy that failed (a full disk) leaves nothing to fill it further
        _discard(staging, quiet=True)
    _discard(old, quiet=True)


def _copy(candidate, staging):
    """The candidate's files copied into `staging` with fixed modes, whatever the source's and the umask:
    folders 0755, files 0644, or 0755 when the source file is executable (never setuid, never writable by
    others)."""
    os.mkdir(staging, 0o700)
    for rel in candidate.files:
        os.makedirs(os.path.join(staging, os.path.dirname(rel)), 0o700, exist_ok=True)
        source, copied = os.path.join(candidate.dir, rel), os.path.join(staging, rel)
        shutil.copyfile(source, copied)  # follows in-source links; the bytes only, never the mode
        os.chmod(copied, 0o755 if os.stat(source).st_mode & 0o111 else 0o644)
    for parent, _, _ in os.walk(staging):
        os.chmod(parent, 0o755)


STAGING_ENDS = (".new", ".old")


def sweep():
    """Remove what a place that was killed left in the managed folder (.NAME.PID.new, .NAME.PID.old);
    called under the lockfile's lock, so no place is running meanwhile."""
    try:
        names = os.listdir(folder())
    except OSError:
        return
    for entry in names:
        stem, _, end = entry.rpartition(".")
        name, _, pid = stem[1:].rpartition(".")
        if entry.startswith(".") and "." + end in STAGING_ENDS and pid.isdigit() and paths.is_valid_name(name):
            _discard(os.path.join(folder(), entry), quiet=True)


def unplace(name):
    _discard(skill_path(name))


def _discard(path, quiet=False):
    try:
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)
        elif os.path.isdir(path):
            shutil.rmtree(path)
    except OSError:
        if not quiet:
            raise


def record(candidate, source, copy, now):
    return {"source": source.location, "sourceType": source.kind, "revision": source.revision,
            "path": candidate.path, "sha256": sources.digest(candidate.dir, candidate.files),
            "placement": "copy" if copy else "link", "updatedAt": now}


MISSING, PLACED, EDITED, FOREIGN = "missing", "placed", "edited", "foreign"


def found_at(name, entry):
    """What is at MANAGED_SKILLS_DIR/NAME, judged against its lock entry: MISSING; PLACED (nexus's link,
    or a copy whose files match the lockfile); EDITED (a copy whose files no longer match); FOREIGN
    (anything else: a folder where nexus's link was, a link where its copy was). Only what nexus placed
    is ever removed or replaced without being asked to."""
    folder = skill_path(name)
    if not os.path.lexists(folder):
        return MISSING
    if entry.get("placement") != "copy":
        return PLACED if os.path.islink(folder) else FOREIGN
    if os.path.islink(folder) or not os.path.isdir(folder):
        return FOREIGN
    try:
        same = sources.digest(folder, sources.files(folder, folder)) == entry.get("sha256")
    except (OSError, NexusError):  # unreadable, or a symlink out of it: not what was placed
        same = False
    return PLACED if same else EDITED


def why_kept(name, found):
    """Why what is at MANAGED_SKILLS_DIR/NAME (EDITED or FOREIGN) is left alone."""
    path = skill_path(name)
    if found == EDITED:
        return f"{path}: its files no longer match the lockfile: kept"
    folder = os.path.isdir(path) and not os.path.islink(path)
    return f"{path} is {'a folder where nexus placed a link' if folder else 'not what nexus placed'}: kept"


class EditedCopies:
    """What `nexus skills check` asks of the managed folder: which copied skills were edited in place.
    The lockfile is read once, and only when a skill in the managed folder is checked."""

    def __init__(self):
        self.folder = os.path.realpath(folder())
        self.is_managed = {}  # a skill folder's parent -> whether it is the managed folder
        self.lock = None

    def warning(self, skill_dir):
        """The warning for a copy at `skill_dir` whose files no longer match the lockfile, or None."""
        parent, name = os.path.split(os.path.abspath(skill_dir))
        if parent not in self.is_managed:
            self.is_managed[parent] = os.path.realpath(parent) == self.folder
        if not self.is_managed[parent]:
            return None
        self.lock = self.lock or read_lock()
        entry = self.lock["skills"].get(name)
        if entry is None or found_at(name, entry) != EDITED:
            return None
        return Problem("warning", f"edited in place: its files no longer match the sha256 in {lockfile()}; "
                       "`nexus skills update` keeps the edit, --force puts the source's files back", code="edited")


def conflict(lock, name, source, candidate, force=False):
    """Why adding `candidate` as NAME would overwrite another skill, or None when it may go there. With
    `force` only what nexus placed may be replaced: a folder it did not place (by hand, or where its link
    was) is kept, as `update --force` keeps it."""
    entry = lock["skills"].get(name)
    found = found_at(name, entry) if entry is not None else MISSING if not os.path.lexists(skill_path(name)) else None
    if found is None:
        return f"skill '{name}' already exists at {skill_path(name)}, placed by hand: kept, even with --force " \
               "(move it away yourself)"
    if found == FOREIGN:
        return why_kept(name, found) + ", even with --force (move it away yourself)"
    if force:
        return None
    if entry is not None and (entry.get("source"), entry.get("path")) != (source.location, candidate.path):
        return f"skill '{name}' was added from {entry.get('source')} ({entry.get('path')}); --force replaces it"
    if found == EDITED:
        return f"skill '{name}' was edited in place since it was added; --force replaces it"
    return None  # the same skill again: adding it refreshes it


def require_added(lock, names):
    """NexusError unless every name was placed by `add` (then nothing is changed), saying for each other
    name why it cannot be removed or updated."""
    for name in names:
        skill_path(name)
    strangers = [n for n in names if n not in lock["skills"]]
    if strangers:
        raise NexusError("; ".join(why_not_added(name) for name in strangers))


def why_not_added(name):
    """Why `nexus skills remove|update NAME` leaves a skill alone: where it comes from, and what to do."""
    found = manifest.current(configlib.sources(configlib.load())).skills().get(name)
    if found is None and not os.path.lexists(skill_path(name)):
        return f"no skill named {name} was added (see `nexus skills list`)"
    source = found.get("source") if found else "nexus-managed"
    if source == "nexus-bundled":
        return f"{name} is bundled with nexus: disable it with `nexus skill disable {name}`"
    if source == "nexus-project" and _PROJECT.get() is None:
        return f"{name} is a skill of the project here, declared in its nexus.toml: add --project to the command"
    if source == source_name():
        return f"{name} was placed in {folder()} by hand, not by `nexus skills add`: nexus leaves it alone"
    return f"{name} is not an added skill but yours ({found['dir']}): remove its folder yourself"


def select(candidates, names, source):
    """The candidates to add: all of them, or those named (each name must be there)."""
    for name in names:
        skill_path(name)
    if not names:
        return candidates
    missing = [n for n in names if n not in {c.name for c in candidates}]
    if missing:
        held = ", ".join(c.name for c in candidates if c.name) or "no valid skills"
        raise NexusError(f"{source.location} has no skill {', '.join(map(repr, missing))} (it has: {held})")
    return [c for c in candidates if c.name in names]


def add(source_text, names=(), copy=False, force=False, on_problem=None, admit=None, ref=None, path=None):
    """Add the skills of a source: {'source', 'revision', 'added', 'unchanged', 'refused'}. admit(name, folder,
    its lock entry so far, {} if none), the door's question: why not to place it (text), or the sandbox
    declaration accepted (a dict, kept in the lock entry for update to compare), or None. `ref`: the tag,
    branch or commit of a git source to fetch; `path`: the one skill's folder inside the source."""
    report = {"source": None, "revision": None, "added": [], "unchanged": [], "refused": []}
    with locked() as lock, sources.checkout(source_text, ref) as source:
        sweep()
        if paths.contains(folder(), source.root):
            raise NexusError(f"{source.location} is inside the managed folder {folder()}")
        report.update(source=source.location, revision=source.revision)
        copy = copy or source.kind == "git"  # a clone is scratch: its skills are copied out
        seen, others = set(), skills_elsewhere()
        found = [sources.at(source, path)] if path else sources.find(source, on_problem or (lambda m: None))
        chosen = select(found, names, source)
        progress = Progress("adding skills", total=len(chosen))  # each is audited: a large source takes a while
        for candidate in chosen:
            progress.step()
            shadows = _shadows(candidate, lock, source, others)
            why = _refusal(candidate, seen, lock, source, force) or (  # a project's skill is the project's choice
                shadows and not force and _PROJECT.get() is None and shadows[0] + "; --force adds it all the same")
            if why:
                report["refused"].append({"name": candidate.label, "path": candidate.path, "error": why})
                continue
            name = candidate.name
            seen.add(name)
            entry, old = record(candidate, source, copy, now_iso()), lock["skills"].get(name, {})
            if _already_placed(name, old, entry):
                report["unchanged"].append(name)
                continue
            held = not copy and trust.gits(candidate.dir)
            if held:  # its hooks and config run where git works, and trust cannot bind what changes with every use
                report["refused"].append({"name": name, "path": candidate.path, "error": f"it holds {held[0]}, "
                                          "which a link would leave unbound by trust: add it with --copy"})
                continue
            findings = auditlib.audit(candidate.dir, name)
            high = sum(f.severity == auditlib.HIGH for f in findings)
            if high and not force:  # nothing is placed
                report["refused"].append({"name": name, "path": candidate.path, "findings": [f.as_dict() for f in findings],
                                          "error": f"{plural(high, 'high finding')} of `nexus skills audit` (below); "
                                                   "--force adds it all the same"})
                continue
            verdict = admit(name, candidate.dir, old) if admit else None
            if isinstance(verdict, str):
                report["refused"].append({"name": name, "path": candidate.path, "error": verdict})
                continue
            place(name, candidate, copy)
            trust.record(name, skill_path(name), _PROJECT.get())
            lock["skills"][name] = {**entry, "audit": auditlib.keys(findings),
                                    "addedAt": old.get("addedAt", entry["updatedAt"]),
                                    **({"sandbox": verdict} if isinstance(verdict, dict) else {})}
            report["added"].append({"name": name, "path": candidate.path, "placement": entry["placement"],
                                    "sha256": entry["sha256"], **({"shadows": shadows[1]} if shadows else {}),
                                    "findings": [f.as_dict() for f in findings]})
        progress.close()  # an error on the way wipes it as it is said (cli.output.say)
    return report


def _refusal(candidate, seen, lock, source, force):
    """Why a candidate is not added, or None."""
    if candidate.error:
        return candidate.error
    if candidate.name in seen:
        return f"another skill named '{candidate.name}' is already added from this source"
    posing = None if force else paths.lookalike(candidate.name)  # an agent picks a skill by its name
    if posing:
        return f"its name could pass for another: {posing}; --force adds it all the same"
    return conflict(lock, candidate.name, source, candidate, force)


def skills_elsewhere():
    """{name: (source, skill folder)} of the skills the user has in every source but the managed folder."""
    from ..catalog import discovery  # only to say what an added skill shadows: discovery reads SKILL.md files

    scan = discovery.scan([s for s in configlib.sources(configlib.load()) if s[0] != source_name()])
    return {e["name"]: (e["source"], e["dir"]) for e in reversed(scan.records()) if e.get("name") and e.get("dir")}


def _shadows(candidate, lock, source, others):
    """(refusal, note): what adding a candidate would do to a skill of its name the user already has, said
    before and after; None when there is none, or the skill was added from here before (accepted then)."""
    name, old = candidate.name, lock["skills"].get(candidate.name) or {}
    if name not in others or (old.get("source"), old.get("path")) == (source.location, candidate.path):
        return None
    where, folder = others[name]
    if where == "nexus-workspace" and _PROJECT.get() is None:  # the workspace wins: the added skill would never run
        other = f"the workspace skill '{name}' ({folder})"
        return f"{other} would hide it", f"{other} hides it"
    other = f"the bundled skill '{name}'" if where == "nexus-bundled" else f"the skill '{name}' in {os.path.dirname(folder)}"
    return f"it would shadow {other}", f"it shadows {other}"


def _already_placed(name, old, new):
    """NAME is recorded and placed just as adding `new` would place it (a copy edited since is not)."""
    keys = ("source", "path", "sha256", "placement")
    return all(old.get(k) == new[k] for k in keys) and found_at(name, old) == PLACED


def remove(names):
    """Remove added skills and their lock entries; nothing is removed when one was not added, or when
    what is in its place is not what nexus placed (an edited copy, a folder where its link was)."""
    if _nothing_added(names):
        return
    with locked() as lock:
        require_added(lock, names)
        kept = [why_kept(n, found) for n in names if (found := found_at(n, lock["skills"][n])) in (EDITED, FOREIGN)]
        if kept:
            raise NexusError("; ".join(kept) + ": nothing removed (remove it yourself, and then `nexus skills remove` "
                             "drops its record)")
        for name in names:
            unplace(name)
            trust.forget(name, _PROJECT.get())
            for own in paths.sandbox_folders(name):  # its cached tokens: never a later skill's of the name
                shutil.rmtree(own, ignore_errors=True)
            try:  # its cached permissions, which named its grants
                os.remove(paths.sandbox_cache(name))
            except FileNotFoundError:
                pass
            del lock["skills"][name]


def update(names=(), force=False, admit=None):
    """Fetch the sources of added skills again:
    {'changed', 'restored', 'unchanged', 'editedLocally', 'removedUpstream', 'refused', 'failed', 'findings'},
    and 'declined' {name: why} for those admit (as add's, given the skill's lock entry) refused.

    A copy edited in place is kept as it is (and its lock entry too) unless `force`."""
    report = {"changed": [], "restored": [], "unchanged": [], "editedLocally": [], "removedUpstream": [],
              "refused": [], "failed": [], "findings": []}
    if _nothing_added(names):
        return report
    with locked() as lock:
        sweep()
        names = list(names) or sorted(lock["skills"])
        require_added(lock, names)
        by_source = {}
        for name in names:
            by_source.setdefault(lock["skills"][name].get("source"), []).append(name)
        progress = Progress("updating skills", total=len(names))  # as in add
        for location, group in by_source.items():
            try:
                with sources.checkout(location) as source:
                    for name in group:
                        progress.step()
                        _update_one(lock["skills"][name], name, source, force, report, admit)
            except NexusError as e:  # the source cannot be fetched: none of its skills is touched
                report["failed"] += [{"name": n, "error": str(e)} for n in group]
        progress.close()
    return report


def _nothing_added(names):
    """True when there is no lockfile (and no names to refuse): then no folder or lock is made."""
    if os.path.exists(lockfile()):
        return False
    require_added({"skills": {}}, names)
    return True


def _update_one(entry, name, source, force, report, admit=None):
    folder = os.path.normpath(os.path.join(source.root, entry.get("path") or "."))
    if not paths.contains(source.root, folder) or not os.path.isfile(skillmd.file_in(folder)):
        report["removedUpstream"].append(name)
        return
    candidate = sources.Candidate(source, folder)
    if candidate.error or candidate.name != name:
        error = candidate.error or f"the skill at {candidate.path} is now named '{candidate.name}'"
        report["failed"].append({"name": name, "error": error})
        return
    found = found_at(name, entry)
    if found == FOREIGN:  # never replaced, even when forced: it holds what the user put there
        report["failed"].append({"name": name, "error": why_kept(name, found)})
        return
    edited = found == EDITED
    if edited and not force:
        report["editedLocally"].append(name)
        return
    fresh = record(candidate, source, entry.get("placement") == "copy", now_iso())
    entry["revision"] = fresh["revision"]
    missing = found == MISSING  # deleted by hand: put back from the source
    if fresh["sha256"] == entry.get("sha256") and not missing and not edited:
        report["unchanged"].append(name)
        return
    linked = found == PLACED and entry.get("placement") != "copy"  # its folder changed in place: what runs changed
    seen = trust.measure(candidate.dir) if linked else None  # what is bound is what was audited and asked about
    findings = auditlib.audit(candidate.dir, name)
    accepted = _accepted(entry, name, found, findings)
    new = auditlib.new_since(findings, accepted)
    report["findings"] += [f.as_dict() for f in new]
    if any(f.severity == auditlib.HIGH for f in new) and not force:  # the classic: clean once, risky upstream
        report["refused"].append(name)
        return
    change = change_of(name, candidate.dir, findings, accepted) if linked else None
    if change and not any(change["files"].values()):  # trusted already as it is (`nexus skill trust`)
        change = None
    verdict = admit(name, candidate.dir, entry, change) if admit else None
    if isinstance(verdict, str):
        report["refused"].append(name)
        report.setdefault("declined", {})[name] = verdict
        return
    try:
        place(name, candidate, fresh["placement"] == "copy")
        trust.record(name, skill_path(name), _PROJECT.get(), seen)
    except NexusError as e:
        report["failed"].append({"name": name, "error": str(e)})
        return
    entry.update(sha256=fresh["sha256"], updatedAt=fresh["updatedAt"], audit=auditlib.keys(findings),
                 **({"sandbox": verdict} if isinstance(verdict, dict) else {}))
    report["restored" if missing else "changed"].append(name)


def change_of(name, folder, findings, accepted):
    """What a person is asked to trust of an added skill whose files changed since they were recorded:
    {'files': trust.changes() (every file added, for a skill recorded before files were), 'findings': those
    of the audit in the files changed or added, and any not among the `accepted` keys}."""
    found = trust.changes(name, folder, _PROJECT.get())
    if found is None:  # added before files were recorded one by one: every file is news
        found = {"changed": [], "added": sorted(trust.walk(folder)), "removed": []}
    touched = {f"{name}/{rel}" for rel in found["changed"] + found["added"]}
    new = auditlib.new_since(findings, accepted)
    return {"files": found, "findings": [f for f in findings if f.path in touched or f in new]}


def accept(name, audit, sandbox=None):
    """Record that the user trusted an added skill's files as they are now (`nexus skill trust`): the
    findings accepted, for update to tell what is new, and the sandbox declaration accepted with them. Its sha256 stays the source's: a trusted edit of a
    copy is still an edit, which update keeps unless --force."""
    with locked() as lock:
        entry = lock["skills"].get(name)
        if entry is None:
            raise NexusError(f"{name} is not an added skill")
        entry.update(audit=audit, trustedAt=now_iso(), **({"sandbox": sandbox} if sandbox is not None else {}))


def _accepted(entry, name, found, findings):
    """The findings the user accepted for the version they have: those recorded when it was added or
    updated; for a skill added before audits were recorded, those of its copy, or (a link, whose source
    is already the new version) those found now."""
    if "audit" in entry:
        return entry["audit"]
    if found == PLACED and entry.get("placement") == "copy":
        return auditlib.keys(auditlib.audit(skill_path(name), name))
    return auditlib.keys(findings)


def refresh_manifest(config):
    """Rescan after a change, so the next command sees it at once."""
    manifest.refresh(configlib.sources(config))
