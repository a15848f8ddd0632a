"""Find skills in the four sources, highest precedence wins: workspace > managed > bundled > extra dirs."""

import os

from . import paths, schema, skillmd


class Scan:
    """The result of scanning sources: winning entries, shadowed ones, invalid skills and diagnostics."""

    def __init__(self):
        self.entries = {}
        self.shadowed = []
        self.invalid = []
        self.diagnostics = []  # one formatted line each, for stderr
        self.readable_sources = 0


def scan(source_list):
    result = Scan()
    for source, folder in reversed(source_list):  # highest precedence first: the first name seen wins
        for skill_dir in _skill_dirs(folder, result):
            _load(skill_dir, source, result)
    result.entries = dict(sorted(result.entries.items()))
    return result


def _skill_dirs(folder, result):
    try:
        with os.scandir(folder) as it:
            children = sorted(it, key=lambda d: d.name)
    except FileNotFoundError:
        return
    except OSError as e:
        result.diagnostics.append(f"{folder}: cannot read folder: {e.strerror}")
        return
    result.readable_sources += 1
    for child in children:
        if child.name.startswith("."):
            continue
        try:
            is_dir = child.is_dir()
            if not is_dir and child.is_symlink():
                os.stat(child.path)  # raises for a dangling or looping link
        except OSError as e:
            result.diagnostics.append(f"{child.path}: broken symlink: {e.strerror}")
            continue
        if is_dir:
            yield child.path


def _load(skill_dir, source, result):
    path = os.path.join(skill_dir, "SKILL.md")
    try:
        os.lstat(path)
    except FileNotFoundError:
        return  # a folder without SKILL.md is not a skill
    except OSError as e:
        _invalid(result, source, skill_dir, skillmd.Problem("error", f"cannot read folder: {e.strerror}"))
        return
    dir_mtime, file_mtime = paths.mtime(skill_dir), paths.mtime(path)  # before reading: a change during the read is seen next time
    skill = skillmd.read(path, os.path.basename(skill_dir))
    for problem in skill.problems:
        if problem.severity != "error":
            result.diagnostics.append(problem.format(path))
    if not skill.ok:
        error = next(p for p in skill.problems if p.severity == "error")
        _invalid(result, source, skill_dir, error, dir_mtime, file_mtime)
        return
    entry = schema.manifest_entry(skill, source, skill_dir, dir_mtime, file_mtime)
    winner = result.entries.get(skill.name)
    if winner is None:
        result.entries[skill.name] = entry
    elif winner["source"] == source:
        result.diagnostics.append(
            f"{path}: warning: skill '{skill.name}' is also defined in {winner['filePath']}; using that one")
    else:
        entry["shadowedBy"] = winner["source"]
        result.shadowed.append(entry)


def _invalid(result, source, skill_dir, problem, dir_mtime=None, file_mtime=None):
    path = os.path.join(skill_dir, "SKILL.md")
    result.diagnostics.append(problem.format(path))
    result.invalid.append({
        "name": os.path.basename(skill_dir), "status": "invalid", "source": source, "filePath": path,
        "dir": skill_dir, "line": problem.line, "error": problem.message,
        "dirMtimeNs": dir_mtime, "fileMtimeNs": file_mtime,
    })
