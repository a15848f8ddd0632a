"""Find skills in the four sources, highest precedence wins: workspace > managed > bundled > extra dirs."""

import errno
import os

from .. import paths
from ..skill import entry as entrylib, skillmd


class Scan:
    """The result of scanning sources: winning entries, shadowed ones, invalid skills, the folders
    without a SKILL.md, and diagnostics. Entries and invalid skills kept from a previous manifest
    are its Records, as they were."""

    def __init__(self):
        self.entries = {}
        self.shadowed = []
        self.invalid = []
        self.folders = []  # {"dir", "dirMtimeNs"} of each folder without a SKILL.md
        self.diagnostics = []  # one formatted line each, for stderr
        self.readable_sources = 0

    def records(self, shadowed=True):
        """Every record found: the winning skills by name, the shadowed ones, then the broken ones."""
        return [*self.entries.values(), *(self.shadowed if shadowed else []), *self.invalid]


MANY_FOLDERS = 200
IN_PROCESSES = 500  # folders to read for each process before a scan reads them in more than one (shares)


def scan(source_list, known=None, finish=None):
    """Read every skill folder of the sources; with `known` ({dir: a previous manifest's Record, or
    the mtime of a folder that had no SKILL.md}), a folder unchanged since is taken as it was. (A
    Record is the manifest's, which imports this module: it is known here by what it does.) Many
    folders to read (a cold refresh) are read in a process per CPU, and taken in the same order.
    `finish(entry)`: what to keep of each entry read (the manifest's Record), made in the process
    that read it, so that a cold refresh's children hand back finished lines, not entries to encode."""
    result = Scan()
    known = dict(known or {})
    # In precedence order: a Record kept, a folder without a SKILL.md kept, a folder to read, or a Scan of
    # what listing a source found wrong.
    steps = []
    for source, folder in reversed(source_list):  # highest precedence first: the first name seen wins

        def report(path, problem, source=source):
            found = Scan()
            found.diagnostics.append(problem.format(path))
            if problem.code == "symlink":  # a skill folder link that leads nowhere is a broken skill too
                found.invalid.append(_invalid_record(source, os.path.join(path, "SKILL.md"), problem, None, None))
            steps.append((source, found))

        skill_dirs = child_dirs(folder, report)
        if skill_dirs is None:
            continue
        result.readable_sources += 1
        for skill_dir in skill_dirs:
            before = known.pop(skill_dir, None)  # popped: a folder listed in two sources is read again
            if before is not None and not isinstance(before, int) and before.unchanged():  # a Record
                before.source = source
                steps.append((source, before))
            elif isinstance(before, int) and paths.mtime(skill_dir) == before:
                steps.append((source, {"dir": skill_dir, "dirMtimeNs": before}))
            else:
                steps.append((source, skill_dir))
    reads = iter(_read_all([step for step in steps if isinstance(step[1], str)], finish))
    for source, step in steps:
        if isinstance(step, dict):
            result.folders.append(step)
        elif isinstance(step, (str, Scan)):
            found = next(reads) if isinstance(step, str) else step
            if not isinstance(found, Scan):  # a folder that held one skill and nothing to say (_read)
                _add(result, found, source)
                continue
            result.diagnostics += found.diagnostics
            result.invalid += found.invalid
            result.folders += found.folders
            for entry in found.entries.values():
                _add(result, entry, source)
        elif step.invalid:
            result.invalid.append(step)
        else:
            _add(result, step, source)
    result.entries = dict(sorted(result.entries.items()))
    return result


def _read_all(reads, finish=None):
    """What _read found in each (source, skill folder), in their order: many in a process per CPU (shares),
    this one saying on a terminal how far it got once it has read MANY_FOLDERS."""
    if len(reads) < MANY_FOLDERS:
        return [_read(read, finish) for read in reads]
    from .. import shares  # both for a scan that reads many folders: a run that reads one never needs them
    from ..style import Progress  # as shares

    import gc  # as shares

    here = os.getpid()
    collecting = gc.isenabled()
    gc.disable()  # reading makes no cycles: collections would only walk the records read so far (2% of a cold read)
    try:
        with Progress("reading skills", now=True) as progress:
            def read_one(read):
                found = _read(read, finish)
                progress.count += 1  # this process's own count, said once it is many: the others' come at the end
                if progress.allowed and progress.count >= MANY_FOLDERS and os.getpid() == here:
                    progress.step(0)
                return found

            return shares.mapped(read_one, reads, least=IN_PROCESSES)
    finally:
        if collecting:
            gc.enable()


def scan_one(source, skill_dir):
    """The Scan of one skill folder of `source`, read (a manifest updated in place: manifest.updated)."""
    found = Scan()
    _load(skill_dir, source, found)
    return found


def _read(read, finish=None):
    """What one skill folder holds: its one skill's entry (or finish(entry)) when it was read without a word
    to say, the most folders of a cold scan, and small to send back from a child; else a Scan."""
    source, skill_dir = read
    found = Scan()
    _load(skill_dir, source, found)
    if finish is not None:
        found.entries = {name: finish(entry) for name, entry in found.entries.items()}
    if len(found.entries) == 1 and not (found.diagnostics or found.invalid or found.folders or found.shadowed):
        return next(iter(found.entries.values()))
    return found


def folders_without_skill(source_list, known_dirs):
    """The sub-folders of each source that hold no SKILL.md (and are not in `known_dirs`), with their
    mtimes: the manifest watches them, so that a SKILL.md written into one later is seen at once."""
    found = []
    for _, folder in reversed(source_list):
        for skill_dir in child_dirs(folder, lambda path, problem: None) or []:
            if skill_dir in known_dirs:
                continue
            dir_mtime = paths.mtime(skill_dir)  # before looking: a SKILL.md written meanwhile is seen next time
            if not any(os.path.lexists(os.path.join(skill_dir, name)) for name in skillmd.FILE_NAMES):
                found.append({"dir": skill_dir, "dirMtimeNs": dir_mtime})
    return found


def child_dirs(folder, report, dots=False):
    """The sub-folders of `folder`, symlinks followed, by name; None when `folder` cannot be listed.
    Dot-folders only with `dots` (a source's are not skills; `skills check DIR` looks where `skills add`
    does, which reads them but .git).

    Only one level is read, so a symlink pointing back up is never followed forever; a link that
    loops or dangles is reported once through report(path, Problem) and skipped.
    """
    try:
        with os.scandir(folder) as it:
            children = sorted(it, key=lambda d: d.name)
    except FileNotFoundError:
        return None
    except OSError as e:
        report(folder, skillmd.Problem("error", f"cannot read folder: {e.strerror}", code="unreadable"))
        return None
    found = []
    for child in children:
        if child.name.startswith(".") and not (dots and child.name != ".git"):
            continue
        try:
            is_dir = child.is_dir()
            if not is_dir and child.is_symlink():
                os.stat(child.path)  # raises for a dangling or looping link
        except OSError as e:
            reason = "symlink loop" if e.errno == errno.ELOOP else f"broken symlink: {e.strerror}"
            report(child.path, skillmd.Problem("error", reason, code="symlink"))
            continue
        if is_dir:
            found.append(child.path)
    return found


def _load(skill_dir, source, result):
    path = os.path.join(skill_dir, "SKILL.md")
    dir_mtime = paths.mtime(skill_dir)  # before looking: a SKILL.md written meanwhile is seen next time
    skill = skillmd.read(path, os.path.basename(skill_dir))  # its mtime is taken before it is read, too
    if skill.mtime_ns is None:  # it could not be opened: is there none?
        try:
            os.lstat(path)
        except FileNotFoundError:
            path = skillmd.file_in(skill_dir)
            if not os.path.lexists(path):  # not a skill (yet): the manifest watches the folder
                result.folders.append({"dir": skill_dir, "dirMtimeNs": dir_mtime})
                return
            skill = skillmd.read(path, os.path.basename(skill_dir))  # a lowercase skill.md
        except OSError as e:
            problem = skillmd.Problem("error", f"cannot read folder: {e.strerror}")
            _invalid(result, source, path, problem, dir_mtime)  # its mtime: fixed, it is seen again
            return
    file_mtime = skill.mtime_ns
    for problem in skill.problems:
        if problem.severity != "error":
            result.diagnostics.append(problem.format(path))
    if not skill.ok:
        error = next(p for p in skill.problems if p.severity == "error")
        _invalid(result, source, path, error, dir_mtime, file_mtime)
        return
    entry, warnings = entrylib.build(skill, source, skill_dir, dir_mtime, file_mtime)
    unsafe = entrylib.unsafe(entry)
    if unsafe:  # never listed as ready, advertised to agents or run
        _invalid(result, source, path, skillmd.Problem("error", unsafe, skill.lines.get("metadata"), "execution"),
                 dir_mtime, file_mtime)
        return
    for warning in warnings:
        problem = skillmd.Problem("warning", f"metadata.{skill.meta_key}.{warning}", skill.lines.get("metadata"))
        result.diagnostics.append(problem.format(path))
    _add(result, entry, source)


def _where(entry):
    """(name, source, SKILL.md path) of an entry, or of a Record (a previous manifest's, or finish's)."""
    if isinstance(entry, dict):
        return entry["name"], entry["source"], entry["filePath"]
    return entry.name, entry.source, entry.stamp[2]


def _add(result, entry, source):
    """The first skill of a name wins; another of that name in the same source is reported, in a lower one shadowed."""
    name, _, path = _where(entry)
    winner = result.entries.get(name)
    if winner is None:
        result.entries[name] = entry
        return
    _, winner_source, winner_path = _where(winner)
    if winner_source == source:
        result.diagnostics.append(f"{path}: warning: skill '{name}' is also defined in {winner_path}; using that one")
    else:
        entry = entry if isinstance(entry, dict) else entry.entry()
        entry["shadowedBy"] = winner_source
        result.shadowed.append(entry)


def _invalid(result, source, path, problem, dir_mtime=None, file_mtime=None):
    result.diagnostics.append(problem.format(path))
    result.invalid.append(_invalid_record(source, path, problem, dir_mtime, file_mtime))


def _invalid_record(source, path, problem, dir_mtime, file_mtime):
    skill_dir = os.path.dirname(path)
    return {"name": os.path.basename(skill_dir), "status": "invalid", "source": source, "filePath": path,
            "dir": skill_dir, "line": problem.line, "error": problem.message, "dirMtimeNs": dir_mtime,
            "fileMtimeNs": file_mtime}
