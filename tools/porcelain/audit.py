"""The porcelain's audit and trust: `nexus skills audit`, a static look at skills for what hostile ones do,
and `nexus skill trust`, which accepts an added skill's files as they are now."""

import os

from nexus import config as configlib, paths, trust as trustlib
from nexus.catalog import manifest
from nexus.cli.command import renders
from nexus.distribute import managed, sources
from nexus.errors import BadInput, NexusError
from nexus.gateway import plan
from nexus.skill import audit as auditlib, skillmd
from nexus.style import ask, one_line, plural


def render_findings(report, out):
    """A finding a line, then the count on stderr, after them: on a terminal that shows both it is the last
    line, never run into the findings."""
    import sys  # the summary's stream

    from nexus.cli import output

    out.write("".join(one_line(auditlib.formatted(f)) + "\n" for f in report["findings"]))
    out.flush()
    counts = {s: sum(f["severity"] == s for f in report["findings"]) for s in auditlib.SEVERITIES}
    sys.stderr.flush()
    output.say("nexus", f"{plural(len(report['audited']), 'skill')} audited: "
                        + ", ".join(f"{n:,} {s}" for s, n in counts.items()))


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
                inner = sources.skill_folders(target, ctx.warn)  # where `skills add` finds them
                if not inner:
                    raise BadInput(f"{target}: no SKILL.md here or in folders up to {sources.MAX_DEPTH} levels below it")
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
    """Reads every file of each skill, runs nothing, and prints each finding as
    `path:line: severity: code: message`. Each SKILL is a skill folder, its SKILL.md, a folder holding skills
    (found where `nexus skills add` finds them), or the name of a skill nexus knows; without SKILL, every
    skill of every source. Python is read through its syntax tree with names resolved (imports, aliases,
    getattr with a built name); shell, JavaScript and Markdown line by line, look-alike letters folded. A
    file is read as code by how the skill runs it (its runner and script), then its #! line, then its
    extension. Markdown that only talks about a thing (in double quotes, or after "never" or "do not") is not
    taken as saying it. A severity is what happens at the door of `nexus skills add`, `update` and `skill
    trust`; `nexus skills check` lists the high findings as warnings, never failing a skill for them.

    Rules:
    RULES

    Exit status:
      0  no high finding (with --strict, no medium one either)
      1  a high finding (with --strict, or a medium one)
      2  a SKILL that is neither a path nor a skill's name, or a usage error

    Examples:
      nexus skills audit ~/Downloads/some-skill
      nexus skills audit --json | jq '.findings[] | select(.severity == "high")'
    """
    targets = skill_dirs(ctx, ctx.args["SKILL"])
    findings = []
    for _, folder, label in targets:
        findings += auditlib.audit(folder, label)
    counts = {s: sum(f.severity == s for f in findings) for s in auditlib.SEVERITIES}
    failing = (auditlib.HIGH, auditlib.MEDIUM) if ctx.args["--strict"] else (auditlib.HIGH,)
    ctx.status = 1 if any(counts[s] for s in failing) else 0
    return {"audited": [{"name": name, "dir": folder} for name, folder, _ in targets],
            "findings": [f.as_dict() for f in findings]}


audit.__doc__ = audit.__doc__.replace("    RULES", auditlib.rules_text(indent=6, columns=104))


def render_trust(report, out):
    out.write(f"{'trusted' if report['trusted'] else 'not trusted'} {report['name']}\n")


@renders(render_trust)
def trust(ctx):
    """A skill added with `nexus skills add` runs only while its files are those it was added, updated or
    trusted with (their SHA-256s are kept in its trust.json; Python's __pycache__ counts, and the gateway
    runs it with PYTHONDONTWRITEBYTECODE so that its runs leave none). When they changed behind nexus's back, an edit in its folder or in the folder a
    linked skill comes from, `nexus skill run` and nexus-mcp refuse it and `skills link` leaves it out.
    This shows what changed, the audit of the change (`nexus skills audit`: findings in the changed files and
    any not accepted before) and what its declaration asks beyond what was accepted (the network, each
    folder added), asks for that, then binds the skill to its files and its permissions as they are now;
    with --yes it says what it accepted.

    Exit status:
      0  trusted, or nothing changed
      1  not trusted: a high finding without --force, no yes, or NAME is not an added skill
      2  usage error
    """
    plan.refuse_inside("nexus skill trust")  # no skill lowers its own gate
    name = paths.checked_name(ctx.args["NAME"])
    entry = manifest.current(configlib.sources(ctx.config), ctx.warn).skills().get(name)
    added = managed.read_lock()["skills"].get(name)
    if entry is not None and entry.get("source") == "nexus-project":
        raise NexusError(f"{name} is a project skill: `nexus skills sync` places it as nexus.lock pins it, and trusts "
                         "it (an edit is undone by `nexus skills sync --force`; a new version is a commit to its source)")
    if entry is None or entry.get("source") != "nexus-managed" or added is None:
        raise NexusError(f"{name} is not a skill added with `nexus skills add`: only those are bound to their files")
    files = trustlib.measure(entry["dir"])  # what is bound is what was shown, whatever changes after
    findings = auditlib.audit(entry["dir"], name)
    change = managed.change_of(name, entry["dir"], findings, added.get("audit", []))
    found, shown = change["files"], change["findings"]
    report = {"name": name, **found, "findings": [f.as_dict() for f in shown], "trusted": False}
    if not any(found.values()):
        ctx.warn(f"'{name}' is as it was added or last trusted: nothing to trust")
        report["trusted"] = True
        return report
    own, wants = widened(ctx, entry, added)
    report["permissions"] = wants
    if not ctx.json:
        ctx.warn(f"{name}: {trustlib.describe(found)}")
        for finding in shown:
            ctx.warn(finding.format())
        if wants:
            ctx.warn(f"{name} now asks, when it runs confined, for {wants}")
    high = sum(f.severity == auditlib.HIGH for f in shown)
    if high and not ctx.args["--force"]:
        ctx.warn(f"{plural(high, 'high finding')} in the change: not trusted; --force trusts it all the same")
        ctx.status = 1
        return report
    asked = f"Trust '{name}' as it is now{f', and allow it {wants}' if wants else ''}? [y/N] "
    if not ctx.args["--yes"] and not confirm(asked):
        ctx.status = 1
        return report
    trustlib.record(name, entry["dir"], seen=files)
    managed.accept(name, auditlib.keys(findings), own)
    if ctx.args["--yes"]:
        ctx.warn(f"accepted {name}: {trustlib.describe(found)}" + (f"; when it runs confined, {wants}" if wants else ""))
    report["trusted"] = True
    return report


def widened(ctx, entry, added):
    """(its sandbox declaration now, what it asks beyond the one accepted when it was added, updated or
    trusted: '' when nothing, or when it does not run confined)."""
    from nexus.gateway import sandbox  # the declaration of an added skill only

    own = sandbox.declared(entry)
    if entry.get("type") == "prompt" or not plan.confined(entry, ctx.config):
        return own, ""
    before = added.get("sandbox") if isinstance(added.get("sandbox"), dict) else {}
    return own, sandbox.widening(own, before, {})


def confirm(question):
    """True when the person at the terminal says yes; NexusError when there is no terminal to ask."""
    answer = ask(question)
    if answer is None:
        raise NexusError("no terminal to ask: run it again with --yes")
    return answer
