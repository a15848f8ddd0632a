"""The porcelain's linter: `nexus skills check`."""

import os

from nexus import cli
from nexus.style import plural

PROG = "nexus"

CHECK_DOC = """nexus skills check: lint SKILL.md files against the Agent Skills and nexus rules.

Usage:
  nexus skills check [PATH...] [--strict] [--json]
  nexus skills check (-h | --help)

Each PATH is a SKILL.md file, a skill folder, or a folder of skill folders; without PATH, every
skill source (see `nexus skills path`). Each finding is printed as `path:line: severity: message`.

Loading is lenient and checking is strict: a missing name, a name that differs from its folder, a
duplicate key or an unquoted ': ' in a value still let a skill load (with a warning), but are
errors here, because the Agent Skills specification and other loaders reject them.

Options:
  --strict   Also warn about fields that neither Agent Skills nor nexus defines.
  --json     JSON Lines: {"path", "line", "severity", "code", "message"}.
  -h --help  Show this help.

Codes: encoding, unreadable, too-large, symlink, frontmatter, yaml, colon, comment, duplicate-key,
name, description, compatibility, allowed-tools, license, homepage, metadata, os, requires, install,
execution, script, unexpected-field, no-skill, edited (a skill copied into the managed folder by
`nexus skills add` whose files have changed since; see `nexus skills update`).

Exit status:
  0  no errors (there may be warnings)
  1  at least one error
  2  a PATH that does not exist, or a usage error

Examples:
  nexus skills check ~/src/my-skills/weather
  nexus skills check --strict ~/src/my-skills
  nexus skills check --json | jq -r 'select(.severity == "error") | .path' | sort -u
"""


class Findings:
    """What one run found, as (path, Problem) pairs in the order read, and how many skills it read."""

    def __init__(self, strict):
        from nexus import managed

        self.strict = strict
        self.found = []  # (path, Problem)
        self.skills = 0
        self.edited_copies = managed.EditedCopies()  # copies in the managed folder edited since added

    def report(self, path, problem):
        self.found.append((path, problem))

    def skill(self, path, skill_dir):
        from nexus import lint, skillmd

        self.skills += 1
        skill = skillmd.read(path, os.path.basename(os.path.abspath(skill_dir)))
        self.found.extend((path, p) for p in lint.check(skill, skill_dir, self.strict))
        edited = self.edited_copies.warning(skill_dir)
        if edited:
            self.report(path, edited)

    def folder(self, folder):
        """Every skill folder inside `folder`; how many there were (None when it cannot be listed)."""
        from nexus import discovery

        before = self.skills
        skill_dirs = discovery.child_dirs(folder, self.report)
        if skill_dirs is None:
            return None
        for skill_dir in skill_dirs:
            path = os.path.join(skill_dir, "SKILL.md")
            if os.path.lexists(path) or not os.access(skill_dir, os.R_OK | os.X_OK):  # reading says why not
                self.skill(path, skill_dir)
        return self.skills - before

    def path(self, path):
        from nexus import skillmd

        if not os.path.isdir(path):
            self.skill(path, os.path.dirname(os.path.abspath(path)))
        elif os.path.lexists(os.path.join(path, "SKILL.md")):
            self.skill(os.path.join(path, "SKILL.md"), path)
        elif self.folder(path) == 0:
            self.report(path, skillmd.Problem("error", "no SKILL.md here or in its sub-folders", code="no-skill"))


@cli.command(PROG)
def skills_check(argv):
    args = cli.parse(CHECK_DOC, ["skills", "check", *argv])
    from nexus.errors import BadInput

    findings = Findings(args["--strict"])
    missing = [p for p in args["PATH"] if not os.path.lexists(p)]
    if missing:
        raise BadInput(f"{missing[0]}: no such file or folder")
    if args["PATH"]:
        for path in args["PATH"]:
            findings.path(path)
    else:
        from nexus import config as configlib

        for _, folder in configlib.sources(configlib.load()):
            findings.folder(folder)
    for path, problem in findings.found:
        print(cli.dumps(problem.as_dict(path)) if args["--json"] else problem.format(path, label_errors=True))
    errors = sum(p.severity == "error" for _, p in findings.found)
    if not args["--json"]:
        warnings = len(findings.found) - errors
        cli.warn(PROG, f"{plural(findings.skills, 'skill')} checked: "
                       f"{plural(errors, 'error')}, {plural(warnings, 'warning')}")
    return 1 if errors else 0
