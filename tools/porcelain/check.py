"""The porcelain's linter: `nexus skills check`."""

import collections
import os

from nexus import config as configlib, paths
from nexus.catalog import capabilities, discovery, listing, manifest as manifestlib
from nexus.cli.command import renders
from nexus.config import keys
from nexus.config.statements import line_of
from nexus.distribute import managed, sources
from nexus.errors import BadInput
from nexus.skill import audit, entry as entrylib, lint, skillmd
from nexus.style import plural


class Findings:
    """What one run found, as (path, Problem) pairs in the order read, and how many skills it read."""

    def __init__(self, strict):
        self.strict = strict
        self.found = []  # (path, Problem)
        self.skills = 0
        self.entries = {}  # name -> (path, its manifest entry), of the skills that load
        self.edited_copies = managed.EditedCopies()  # copies in the managed folder edited since added
        self.where = []  # for each folder PATH whose skills lie deeper than its sub-folders: how many, where
        self.found_in = []  # the skill folders the last folder PATH held

    def report(self, path, problem):
        self.found.append((path, problem))

    def skill(self, path, skill_dir):
        self.skills += 1
        skill = skillmd.read(path, os.path.basename(os.path.abspath(skill_dir)))
        self.found.extend((path, p) for p in lint.check(skill, skill_dir, self.strict))
        if skill.ok and skill.name:
            self.entries[skill.name] = (path, entrylib.build(skill, "nexus-extra", skill_dir, None, None)[0])
        edited = self.edited_copies.warning(skill_dir)
        if edited:
            self.report(path, edited)
        if os.path.isdir(skill_dir):  # listed, never an error: conformance is judged here, the audit has its own exit
            for finding in audit.audit(skill_dir, os.path.dirname(path)):
                if finding.severity == audit.HIGH:
                    self.report(finding.path, skillmd.Problem("warning", f"{finding.code}: {finding.message} "
                                                              "(see `nexus skills audit`)", finding.line, "audit"))

    def folder(self, folder, levels=1, dots=False):
        """Every skill folder inside `folder`, and down to `levels` levels below it inside sub-folders
        that hold none; how many there were (None when it cannot be listed). `dots`: dot-folders too, as
        `nexus skills add` finds skills in a folder (.curated); a source's dot-folders are not skills."""
        before = self.skills
        skill_dirs = discovery.child_dirs(folder, self.report, dots)
        if skill_dirs is None:
            return None
        for skill_dir in skill_dirs:
            path = skillmd.file_in(skill_dir)
            if os.path.lexists(path) or not os.access(skill_dir, os.R_OK | os.X_OK):  # reading says why not
                self.skill(path, skill_dir)
                self.found_in.append(skill_dir)
            elif levels > 1 and os.path.basename(skill_dir) not in sources.SKIP_FOLDERS:
                self.folder(skill_dir, levels - 1, dots)
        return self.skills - before

    def requirements(self, catalogue):
        """The checked skills as a whole, with the rest of the catalogue: capabilities nothing provides,
        cycles of requirements."""
        entries = {**catalogue, **{name: entry for name, (_, entry) in self.entries.items()}}
        for name, problems in capabilities.check(entries.values()).items():
            if name in self.entries:
                self.found += [(self.entries[name][0], skillmd.Problem(severity, message, code="requires"))
                               for severity, message in problems]
        added = {name for name, entry in catalogue.items() if entry.get("source") in paths.ADDED}
        project = paths.project_root()
        folders = [paths.managed_skills(), *([paths.project_skills(project)] if project else [])]
        added |= {name for name, (path, _) in self.entries.items() if any(paths.contains(f, path) for f in folders)}
        sourced = [{**entry, "source": "nexus-managed" if entry["name"] in added else entry.get("source")}
                   for entry in entries.values()]
        claims = manifestlib.key_claims(sourced)
        for name, key in claims.items():
            if name in self.entries:
                self.found.append((self.entries[name][0], skillmd.Problem(
                    "error", f"skillKey '{key}' is another skill's name or key: an added skill gets nothing of "
                             f"[skills.entries.{key}] (its key is ignored)", code="metadata")))
        for name, owners in manifestlib.name_claims(sourced, claims).items():
            if name in self.entries:
                self.found.append((self.entries[name][0], skillmd.Problem(
                    "error", f"its name is the skillKey of {', '.join(owners)}: an added skill named so gets nothing "
                             f"of [skills.entries.{name}] (that skill's apiKey, env and sandbox grants)",
                    code="metadata")))
        for owners, message in manifestlib.alias_table(entries.values())[1]:
            self.found += [(self.entries[name][0], skillmd.Problem("warning", message, code="alias"))
                           for name in owners if name in self.entries]

    def path(self, path):
        """A SKILL.md, a skill folder, or a folder of skills up to sources.MAX_DEPTH levels below it; the
        last says how many it found where."""
        if not os.path.isdir(path):
            self.skill(path, os.path.dirname(os.path.abspath(path)))
        elif os.path.lexists(skillmd.file_in(path)):
            self.skill(skillmd.file_in(path), path)
        else:
            self.found_in = []
            if self.folder(path, sources.MAX_DEPTH, dots=True) == 0:
                self.report(path, skillmd.Problem("error", f"no SKILL.md here or in folders up to "
                                                           f"{sources.MAX_DEPTH} levels below it", code="no-skill"))
            deeper = collections.Counter(os.path.dirname(os.path.relpath(d, path)) for d in self.found_in)
            if set(deeper) - {""}:  # said only where it looked below the folder's own sub-folders
                self.where.append(f"{path}: {plural(len(self.found_in), 'skill')} found: "
                                  + ", ".join(f"{n:,} in {w or '.'}/" for w, n in sorted(deeper.items())))


def _config(ctx, findings):
    """The config, checked: a config nexus cannot use is an error (and its extra folders are not
    checked); keys naming skills that are not there, and a key no tool would get, are warnings."""
    try:
        config = ctx.config
    except configlib.ConfigError as e:
        findings.report(e.path, skillmd.Problem("error", e.problem, e.line, "config"))
        return {}
    if not config:
        return config
    path = paths.config_file()
    with open(path, encoding="utf-8") as f:
        text = f.read()

    manifest = listing.current_manifest(config, lambda message: None)  # the skills' own problems are findings
    skills = {configlib.skill_key(entry): bool(entrylib.primary_env(entry)) for entry in manifest.skills().values()
              if configlib.skill_key(entry)}
    for parts, message in keys.problems(config, skills, set(os.listdir(paths.bundled_skills()))):
        findings.report(path, skillmd.Problem("warning", f"{'.'.join(parts)}: {message}", line_of(text, parts),
                                              "config"))
    return config


def render_findings(findings, out):
    for f in findings:
        where = f"{f['path']}:{f['line']}" if f["line"] else f["path"]
        message = " ".join(part.strip() for part in f["message"].splitlines() if part.strip())  # spaces kept
        out.write(f"{where}: {f['severity']}: {message}\n")


@renders(render_findings)
def check(ctx):
    """Each PATH is a SKILL.md file, a skill folder, or a folder holding skills up to 4 levels below it,
    dot-folders included (where `nexus skills add` finds them); without PATH, every skill source (see
    `nexus skills path`) and the config file. Each finding is printed as `path:line: severity: message`.
    The audit's high findings are listed as warnings (code audit): check judges conformance, and `nexus
    skills audit` has its own exit status.

    Loading is lenient and checking is strict: a missing name, a name that differs from its folder, a
    duplicate key or an unquoted ': ' in a value still let a skill load (with a warning), but are
    errors here, because the Agent Skills specification and other loaders reject them.

    {codes}

    Exit status:
      0  no errors (there may be warnings)
      1  at least one error
      2  a PATH that does not exist, or a usage error

    Examples:
      nexus skills check SKILL_FOLDER
      nexus skills check --strict FOLDER
      nexus skills check --json | jq -r '.[] | select(.severity == "error").path'
    """
    args = ctx.args
    missing = [p for p in args["PATH"] if not os.path.lexists(p)]
    if missing:
        raise BadInput(f"{missing[0]}: no such file or folder")
    findings = Findings(args["--strict"])
    if args["PATH"]:
        config = ctx.config
        for path in args["PATH"]:
            findings.path(path)
    else:
        config = _config(ctx, findings)
        for _, folder in configlib.sources(config):
            findings.folder(folder)
    findings.requirements(listing.current_manifest(config, lambda line: None).skills())
    found = [problem.as_dict(path) for path, problem in findings.found]
    errors = sum(f["severity"] == "error" for f in found)
    if not ctx.json:
        for line in findings.where:
            ctx.warn(line)
        ctx.warn(f"{plural(findings.skills, 'skill')} checked: "
                 f"{plural(errors, 'error')}, {plural(len(found) - errors, 'warning')}")
    ctx.status = 1 if errors else 0
    return found


check.__doc__ = check.__doc__.replace("{codes}", lint.codes_paragraph())  # made from the table: it cannot go stale
