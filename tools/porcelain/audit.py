"""The porcelain's audit: `nexus skills audit`, a static look at skills for what hostile ones do."""

import os

from nexus import config as configlib, paths
from nexus.catalog import discovery, manifest
from nexus.cli.command import renders
from nexus.errors import BadInput
from nexus.skill import audit as auditlib, skillmd
from nexus.style import one_line, plural


def render_findings(report, out):
    out.write("".join(one_line(auditlib.formatted(f)) + "\n" for f in report["findings"]))


def skill_dirs(ctx, targets):
    """[(skill name or None, folder, label)] of what to audit: each target a path or a skill's name;
    without targets, every skill of the catalogue."""
    if not targets:
        skills = manifest.current(configlib.sources(ctx.config), ctx.warn).skills()
        return [(name, entry["dir"], entry["dir"]) for name, entry in sorted(skills.items())]
    found = []
    for target in targets:
        if os.path.lexists(target):
            if not os.path.isdir(target):
                folder = os.path.dirname(target) or "."
                found.append((None, folder, folder))
            elif os.path.lexists(skillmd.file_in(target)):
                found.append((None, target, target))
            else:
                inner = [d for d in discovery.child_dirs(target, lambda *a: None) or []
                         if os.path.lexists(skillmd.file_in(d))]
                if not inner:
                    raise BadInput(f"{target}: no SKILL.md here or in its sub-folders")
                found += [(None, d, d) for d in inner]
        elif paths.is_valid_name(target):
            entry = manifest.current(configlib.sources(ctx.config), ctx.warn).skills().get(target)
            if entry is None:
                raise BadInput(f"{target}: no such file, folder or skill (see `nexus skills list`)")
            found.append((target, entry["dir"], entry["dir"]))
        else:
            raise BadInput(f"{target}: no such file or folder")
    return found


@renders(render_findings)
def audit(ctx):
    """Usage:
      nexus skills audit [--strict] [--json] [--] [SKILL...]
      nexus skills audit (-h | --help)

    Reads every file of each skill, runs nothing, and prints each finding as
    `path:line: severity: code: message`. Each SKILL is a skill folder, its SKILL.md, a folder of skill
    folders, or the name of a skill nexus knows; without SKILL, every skill of every source. Python is
    parsed (ast), shell, JavaScript and Markdown are matched line by line; Markdown that only talks about
    a thing (in double quotes, or after "never" or "do not") is not taken as saying it. `nexus skills
    add` and `update` refuse a skill with a high finding unless --force; `nexus skills check` reports the
    high ones too.

    Options:
      --strict   Exit 1 on a medium finding too.
      --json     One document: {"audited": [{"name", "dir"}], "findings": [{"path", "line", "severity",
                 "code", "message"}]}.
      -h --help  Show this help.

    Rules:
    RULES

    Exit status:
      0  no high finding (with --strict, no medium one either)
      1  a high finding (with --strict, or a medium one)
      2  a SKILL that is neither a path nor a skill's name, or a usage error

    Examples:
      nexus skills audit ~/Downloads/some-skill
      nexus skills audit --json | jq -r '.findings[] | select(.severity == "high") | .path' | sort -u
    """
    targets = skill_dirs(ctx, ctx.args["SKILL"])
    findings = []
    for _, folder, label in targets:
        findings += auditlib.audit(folder, label)
    counts = {s: sum(f.severity == s for f in findings) for s in auditlib.SEVERITIES}
    failing = (auditlib.HIGH, auditlib.MEDIUM) if ctx.args["--strict"] else (auditlib.HIGH,)
    ctx.status = 1 if any(counts[s] for s in failing) else 0
    if not ctx.json:
        ctx.warn(f"{plural(len(targets), 'skill')} audited: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    return {"audited": [{"name": name, "dir": folder} for name, folder, _ in targets],
            "findings": [f.as_dict() for f in findings]}


audit.__doc__ = audit.__doc__.replace("    RULES", auditlib.rules_text(indent=6, columns=104))
