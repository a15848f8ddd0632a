"""The porcelain's distribution commands: `nexus skills add|remove|update|sync|link`."""

import contextlib
import os
import shlex

from nexus.agents import instructions, links
from nexus.catalog import listing
from nexus.cli.command import renders
from nexus.distribute import managed, project, sources
from nexus.gateway import plan
from nexus.skill import audit
from nexus.errors import NexusError
from nexus.style import ask, table, visible


def render_listed(report, out):
    """--list: the skills a source holds."""
    rows = [[c["name"] or "(invalid)", visible(c["path"]), visible(c["description"] or c["error"])]  # the source's text:
            for c in report["skills"]]  # every escape shown, a colour code too
    out.write("\n".join(table(rows, indent="")) + "\n")


MANY = 10  # skills placed at once beyond which they are said together, and the work ends in a summary line


def render_add(report, out):
    if len(report["added"]) + len(report["unchanged"]) <= MANY:
        for added in report["added"]:
            shadows = f": {added['shadows']}" if added.get("shadows") else ""
            out.write(f"added {added['name']} ({added['placement']}, {visible(added['path'])}){shadows}\n")
        for name in report["unchanged"]:
            out.write(f"unchanged {name}\n")
        render_permissions(report, out)
        return
    from nexus.cli.records import wrap  # a long add only
    from nexus.style import Style

    columns, lines = Style(out).columns, []
    said = lambda text: lines.extend(wrap(text, columns) if columns else [text])  # noqa: E731
    for added in report["added"]:  # a skill that hides another is said alone: it changes what runs
        if added.get("shadows"):
            said(f"added {added['name']} ({added['placement']}, {visible(added['path'])}): {added['shadows']}")
    plain = [a["name"] for a in report["added"] if not a.get("shadows")]
    if plain:
        said(f"added {len(plain):,} ({', '.join(sorted({a['placement'] for a in report['added']}))}): {', '.join(plain)}")
    if report["unchanged"]:
        said(f"unchanged {len(report['unchanged']):,}: {', '.join(report['unchanged'])}")
    out.write("".join(line + "\n" for line in lines))
    render_permissions(report, out, columns)
    refused = [r["name"] for r in report.get("refused", [])]
    out.write(f"{len(report['added']):,} added, {len(report['unchanged']):,} unchanged, {len(refused):,} refused"
              + (f" (above): {', '.join(refused)}" if refused else "") + "\n")


def render_permissions(report, out, columns=None):
    """What each skill placed may do when it runs; with more than MANY, one line for the skills allowed alike."""
    from nexus import fastjson  # human text of a skill placed only
    from nexus.cli.records import wrap
    from nexus.gateway import sandbox

    found = report.get("permissions", {})
    if len(found) <= MANY:
        out.write("".join(f"  {sandbox.said(name, allowed)}\n" for name, allowed in found.items()))
        return
    alike = {}
    for name, allowed in found.items():
        alike.setdefault(fastjson.dumps(allowed), []).append(name)
    for text, names in alike.items():
        line = f"{len(names):,} {sandbox.said('NAME', fastjson.loads(text)).split(': ', 1)[1].replace('runs ', 'run ', 1)}"
        line += "" if len(alike) == 1 else f": {', '.join(names)}"  # which, where they differ
        out.write("".join(f"  {part}\n" for part in (wrap(line, columns - 2) if columns else [line])))


def _grants(args):
    """What --allow-network, --allow-write and --allow-read grant: {network, write, read}."""
    return {"network": bool(args.get("--allow-network")), "write": args.get("--allow-write") or [],
            "read": args.get("--allow-read") or []}


def _allow(ctx, names, grants):
    from nexus import config as configlib  # --allow-* only
    from nexus.gateway import sandbox

    for name in names:
        entry = listing.entry(ctx.config, name, ctx.warn)
        if configlib.skill_key(entry):  # none: its name is another skill's key (permissions() says so)
            sandbox.grant(entry, **grants)
    return configlib.load()  # the config as it is now, for what the permissions say


@contextlib.contextmanager
def door(ctx, again, grants=None):
    """admit() of managed.add and update, for the time they run: a skill that would run confined and declares
    more than was accepted (nothing, for a new one), or a linked skill whose folder changed in place (`change`,
    managed.change_of: what runs changed, though nexus placed nothing), is asked about at a terminal, with
    what changed and the audit of it shown first; accepted with --yes (said at the end: said_accepted) or
    what --allow-* grants, and refused otherwise, with the command that accepts it (`again`). The declaration
    accepted is returned, for the lockfile to keep (None for a skill that does not run confined)."""
    from nexus import trust  # only when skills are placed
    from nexus.gateway import sandbox
    from nexus.skill import entry as entrylib, skillmd

    def declared(folder):
        skill = skillmd.read(skillmd.file_in(folder), os.path.basename(folder))
        return entrylib.build(skill, "nexus-managed", folder, 0, 0)[0] if skill.ok else None

    def admit(name, folder, locked, change=None):
        entry = declared(folder)
        confined = entry is not None and entry.get("type") != "prompt" and plan.confined(entry, ctx.config)
        own, wants = (sandbox.declared(entry) if confined else None), ""
        if confined:
            before = locked.get("sandbox")  # what was accepted; a skill added before the door: what is in its place
            if not isinstance(before, dict):
                placed = declared(managed.skill_path(name)) if locked and os.path.isdir(managed.skill_path(name)) else None
                before = sandbox.declared(placed) if placed else {}
            wants = sandbox.widening(own, before, grants or {})
        if not wants and not change:
            return own
        files = change and trust.describe(change["files"])
        if change:  # what the question is about, before it is asked
            ctx.warn(f"{name}: its linked folder changed since it was added or trusted: {files}")
            show_findings(ctx, [f.as_dict() for f in change["findings"]])
            admit.shown.add(name)
        if ctx.args["--yes"]:
            said = [f"the change in its linked folder ({files})"] * bool(change) + [f"when it runs confined, {wants}"] * bool(wants)
            admit.accepted.append((name, f"{'' if change else ','} {', and '.join(said)}"))
            return own
        asked = (f"{name} changed in its linked folder{f' and asks, when it runs confined, for {wants}' if wants else ''}"
                 if change else f"{name} asks, when it runs confined, for {wants}")
        answer = ask(f"{asked}: {'trust it as it is now' if change else 'allow it'}? [y/N] ")
        if answer is None:
            return f"{asked}: to accept, {again} --yes"
        return own if answer else f"{asked}: declined"

    admit.shown = set()  # the skills whose findings were shown with the question
    admit.accepted = []  # (name, what --yes accepted of it)
    try:
        yield admit
    finally:
        said_accepted(ctx, admit.accepted)


def said_accepted(ctx, accepted):
    """What --yes accepted at the door, on stderr: a line a skill, or beyond MANY skills, a line for each
    acceptance alike (naming its skills where they differ), wrapped to the terminal, as the rest of a long
    add is said."""
    if len(accepted) <= MANY:
        for name, what in accepted:
            ctx.warn(f"{name}: accepted{what} (--yes)")
        return
    import sys  # a long add only

    from nexus.cli.records import wrap
    from nexus.style import Style

    alike, columns = {}, Style(sys.stderr).columns
    for name, what in accepted:
        alike.setdefault(what.replace(" it runs", " each runs"), []).append(name)
    for what, names in alike.items():  # which, where they differ (the permissions below name them too)
        text = f"{len(names):,} skills: accepted{what} (--yes)" + (f": {', '.join(names)}" if len(alike) > 1 else "")
        ctx.warn("\n  ".join(wrap(text, columns - len("nexus: ") - 2)) if columns else text)


def permissions(ctx, names, config=None):
    """{"permissions": {name: what it will be allowed}} of the tool and script skills just placed ({} when there
    are none): what `skills add` and `update` show at the door."""
    from nexus.gateway import sandbox  # only when skills were placed

    config, found = config or ctx.config, {}
    for name in names:
        entry = listing.entry(config, name, ctx.warn, scoped=False)  # placed whatever profile is in force
        if entry.get("keyClaimed"):  # its name is another skill's skillKey (catalog.manifest.name_claims)
            ctx.warn(f"{name}: another skill takes its name as its skillKey: {name} gets nothing of "
                     f"[skills.entries.{name}] (its apiKey, env and sandbox grants); nexus skills check says so")
        if entry.get("type") != "prompt":
            found[name] = sandbox.effective(entry, config)
    return {"permissions": found} if found else {}


def _short(value):
    """A commit's first 12 digits, an integrity's 'sha256:' and its first 12."""
    value = value or "none"
    return value[:19] if value.startswith("sha256:") else value[:12]


def render_sync(report, out):
    """What changed first, permissions first (a reviewer's question: what may it do now?), then the summary."""
    for name, changes in report["changes"].items():
        for key in ("permissions", "commit", "integrity"):
            if key in changes:
                before, after = changes[key]
                shown = project.said if key == "permissions" else _short
                out.write(f"{name}: {key}: {shown(before)} -> {shown(after)}\n")
    for key in ("added", "updated", "removed"):
        out.write("".join(f"{key} {name}\n" for name in report[key]))
    render_permissions(report, out)
    counts = ", ".join(f"{len(report[k]):,} {k}" for k in ("added", "updated", "unchanged", "removed"))
    refused = f", {len(report['refused']):,} refused" if report["refused"] else ""
    out.write(f"{counts}{refused}: {report['root']}\n")


@renders(render_add, {"--list": render_listed, "--project": render_sync})
def add(ctx):
    """SOURCE is a folder, a git URL (https, ssh, git, file, or user@host:path), the path of a local git
    repository (cloned like a URL: committed files only), or owner/repo on GitHub. It may be one skill
    (SKILL.md at its root) or hold skills in folders up to 4 levels below it. Each added skill is recorded
    in MANAGED_SKILLS_DIR/.nexus-lock.json; adding the same skill again refreshes it.

    Each skill is audited (`nexus skills audit`) before it is placed: one with a high finding is refused
    and nothing of it is placed, unless --force; every finding is shown on stderr, and the lockfile keeps
    what was accepted, so that `update` can say what is new.

    With --project, the skills are declared instead in the project's nexus.toml (a [[skills]] table each,
    appended; the file's other lines kept as they are) and `nexus skills sync` installs them into the
    project's .nexus/skills and pins them in nexus.lock (`nexus skills sync --help`).

    Exit status:
      0  added, or already there
      1  a skill was refused, or the source holds none or cannot be fetched
      2  usage error (a SOURCE that is no folder, git URL or owner/repo), or an unreadable lockfile

    Examples:
      nexus skills add FOLDER --skill NAME
      nexus skills add OWNER/REPO --list
    """
    args = ctx.args
    if args["--project"]:
        return _add_project(ctx)
    if args["--allow-network"] or args["--allow-write"] or args["--allow-read"] or args["--yes"]:
        plan.refuse_inside("skills add --allow-*/--yes")  # no skill widens the gate for what it adds
    if args["--list"]:
        with sources.checkout(args["SOURCE"]) as source:
            found = managed.select(sources.find(source, ctx.warn), args["--skill"], source)
        return {"source": source.location, "revision": source.revision, "skills": [c.as_dict() for c in found]}
    if args["--force"]:
        plan.refuse_inside("nexus skills add --force")  # no skill lowers its own gate
    grants = _grants(args)
    again = shlex.join(["nexus", "skills", "add", args["SOURCE"], *(f"--skill={n}" for n in args["--skill"]),
                        *(["--copy"] if args["--copy"] else []), *(["--force"] if args["--force"] else []),
                        *(["--allow-network"] if grants["network"] else []),
                        *(f"--allow-write={p}" for p in grants["write"]), *(f"--allow-read={p}" for p in grants["read"])])
    with door(ctx, again, grants) as admit:
        report = managed.add(args["SOURCE"], args["--skill"], args["--copy"], args["--force"], ctx.warn, admit=admit)
    if report["added"]:
        managed.refresh_manifest(ctx.config)
        names = [added["name"] for added in report["added"]]
        config = _allow(ctx, names, grants) if any(grants.values()) else ctx.config
        report.update(permissions(ctx, names, config))
    for refused in report["refused"]:
        where = refused["path"] if refused["name"] == refused["path"] else f"{refused['name']} ({refused['path']})"
        ctx.warn(visible(f"refused {where}: {refused['error']}"))  # a source's file names: a line break shown
        show_findings(ctx, refused.get("findings", []))
    for added in report["added"]:
        show_findings(ctx, added["findings"])
    ctx.status = 1 if report["refused"] else 0
    return report


def show_findings(ctx, findings):
    """The audit's findings on stderr, a line each, under the command's name."""
    for finding in findings:
        ctx.warn(audit.formatted(finding))


def render_removed(names, out):
    out.write("".join(f"removed {name}\n" for name in names))


def _add_project(ctx):
    plan.refuse_inside("nexus skills add --project")  # no skill declares skills for the project it runs in
    here, ref = project.here(create=True), ctx.args["--ref"]
    with sources.checkout(ctx.args["SOURCE"], ref) as source:
        found = managed.select(sources.find(source, ctx.warn), ctx.args["--skill"], source)
    bad = [c for c in found if c.error]
    if bad:
        raise NexusError(f"{source.location}: {bad[0].label}: {bad[0].error}")
    written = project.as_written(here, ctx.args["SOURCE"])
    project.declare(here, [{"name": c.name, "source": written, **({"ref": ref} if ref else {}),
                            **({"path": c.path} if c.path != "." else {})} for c in found])
    return _sync(ctx, here)


def _sync(ctx, here, frozen=False, moving=None):
    ctx.args = {"--force": False, "--yes": False, **ctx.args}  # `skills remove --project` has neither
    again = shlex.join(["nexus", "skills", "sync", *(["--frozen"] if frozen else [])])
    with door(ctx, again) as admit:
        report = project.sync(here, admit, frozen, moving, ctx.args["--force"], ctx.warn)
    placed = report["added"] + report["updated"]
    if placed or report["removed"]:
        managed.refresh_manifest(ctx.config)
    if placed:
        report.update(permissions(ctx, placed))
    for refused in report["refused"]:
        ctx.warn(f"refused {refused['name']}: {refused['error']}")
    ctx.status = 1 if report["refused"] else 0
    return report


@renders(render_sync)
def sync(ctx):
    """Each skill of the project's nexus.toml ([[skills]]: name, source, ref, path) is placed in PROJECT/.nexus/skills
    as `nexus skills add` places a skill: cloned without running anything of the repository's, audited, asked
    about at the door, its files trusted on this machine. nexus.lock records each (source, commit, the
    SHA-256 of its files, the permissions it declares, its trust digest); a skill nexus.lock pins stays at
    its commit until `nexus skills update --project`. Skills it placed and nexus.toml no longer declares are
    removed. .nexus/skills is added to .gitignore.

    Only [[skills]] is read from a project file: a repository never sets policy. The project is the nearest
    folder up from here that holds nexus.lock, or a nexus.toml with [[skills]]; your home folder and
    NEXUS_HOME never are.

    With --frozen (CI, a fresh clone) it installs exactly nexus.lock and never writes it; what the lock says a
    skill may do is a ceiling, never a grant: the door still asks for what you have not accepted here.

    Exit status:
      0  in sync
      1  a skill was refused (the others are installed), or not inside a project
      2  usage error, or an unreadable nexus.toml or nexus.lock

    Examples:
      nexus skills add --project FOLDER --skill NAME
      nexus skills sync
      nexus skills sync --frozen
    """
    if ctx.args["--force"] or ctx.args["--yes"]:
        plan.refuse_inside("nexus skills sync --force/--yes")
    return _sync(ctx, project.here(), ctx.args["--frozen"])


@renders(render_removed, {"--project": render_sync})
def remove(ctx):
    """Only skills recorded in MANAGED_SKILLS_DIR/.nexus-lock.json are removed, and only what nexus placed:
    its link (a linked skill's own folder is never touched), or a copy whose files still match the
    lockfile. When one NAME is not, or something else is in its place (an edited copy, a folder where
    the link was), that is reported and nothing is removed.

    Exit status:
      0  removed
      1  a NAME was not added, or what is in its place is kept
      2  usage error, or an unreadable lockfile
    """
    names = list(dict.fromkeys(ctx.args["NAME"]))
    if ctx.args["--project"]:
        plan.refuse_inside("nexus skills remove --project")
        here = project.here()
        project.undeclare(here, names)
        return _sync(ctx, here)
    managed.remove(names)
    managed.refresh_manifest(ctx.config)
    return names


UPDATE_LABELS = [("changed", "changed"), ("restored", "restored"), ("unchanged", "unchanged"),
                 ("editedLocally", "edited locally"), ("removedUpstream", "removed upstream"), ("refused", "refused")]


def render_update(report, out):
    """A row per skill; with more than MANY, the unchanged ones counted, and a last line of totals with the
    refused last."""
    many = sum(len(report[key]) for key, _ in UPDATE_LABELS) > MANY
    rows = [[label, name] for key, label in UPDATE_LABELS for name in report[key] if not (many and key == "unchanged")]
    out.write("".join(line + "\n" for line in table(rows, indent="")) or ("" if many else "no skills added\n"))
    render_permissions(report, out)
    if many:
        out.write(", ".join(f"{len(report[key]):,} {label}" for key, label in UPDATE_LABELS) + "\n")


@renders(render_update, {"--project": render_sync})
def update(ctx):
    """Each source is fetched once (git sources cloned again, folders read again) and every skill's files are
    compared by SHA-256 with the lockfile. A copied skill whose files no longer match the lockfile was
    edited in place: it is reported as edited locally and kept as it is, unless --force. Anything else in
    a skill's place (a folder where nexus's link was) is reported as failed and kept, even with --force.
    A skill gone from its source is reported and left in place. Each changed skill is audited: findings
    new since the version you have are shown, and one with a new high finding is refused and kept as it
    is (a clean skill that turns risky upstream), unless --force. A linked skill whose folder was edited in
    place since it was added or trusted changed what runs without nexus: the files changed and their audit
    are shown and it is asked about (as `nexus skill trust` asks), or kept as it is where no one can answer,
    unless --yes. Safe to run from cron.

    Exit status:
      0  done;  1  a skill was refused, or it or its source failed (the others are still updated);
      2  usage error
    """
    if ctx.args["--force"] or ctx.args["--yes"]:
        plan.refuse_inside("nexus skills update --force/--yes")
    names = list(dict.fromkeys(ctx.args["NAME"]))
    if ctx.args["--project"]:
        return _sync(ctx, project.here(), moving=names)
    again = shlex.join(["nexus", "skills", "update", *names, *(["--force"] if ctx.args["--force"] else [])])
    with door(ctx, again) as admit:
        report = managed.update(names, ctx.args["--force"], admit=admit)
    if report["changed"] or report["restored"]:
        managed.refresh_manifest(ctx.config)
        report.update(permissions(ctx, report["changed"] + report["restored"]))
    for failed in report["failed"]:
        ctx.warn(visible(f"{failed['name']}: {failed['error']}"))
    unsaid = [f for f in report["findings"] if f["path"].split("/", 1)[0] not in admit.shown]
    if unsaid:
        ctx.warn("new since the version you have (`nexus skills audit`):")
        show_findings(ctx, unsaid)
    for name in report["refused"]:
        ctx.warn(f"{name}: kept as it is: {report['declined'][name]}" if name in report.get("declined", {}) else
                 f"{name}: a new high finding since the version you have: kept as it is; --force updates it all the same")
    ctx.status = 1 if report["failed"] or report["refused"] else 0
    return report


def render_links(report, out):
    for key in ("linked", "unlinked"):
        out.write("".join(f"{key} {name}\n" for name in report.get(key, [])))
    counts = ", ".join(f"{len(report[k]):,} {k}" for k in ("linked", "unchanged", "skipped", "unlinked") if k in report)
    out.write(f"{counts}: {report['folder']}\n")


@renders(render_links)
def link(ctx):
    """Each ready skill's folder is symlinked into the agent's folder (a skill with
    `disable-model-invocation: true`, or an added skill changed behind nexus's back, is left out, as from
    every list an agent reads); links to skills no longer offered are removed. A skill that nexus runs
    confined (skills.sandbox.mode: by default, those added with `nexus skills add`) is left out too, and
    said so, unless --include-confined: an agent runs a linked skill's scripts itself, outside the sandbox.
    nexus records the links it made ($NEXUS_HOME/state/nexus/links.json) and never touches a name the
    folder already has from elsewhere. Running it again changes nothing.

    Exit status:
      0  done;  2  usage error
    """
    folder = links.agent_folder(ctx.args["--agent"], ctx.args["--dir"])
    if ctx.args["--unlink"]:
        return links.unlink(folder, ctx.warn)
    offered = instructions.offered(listing.records(ctx.config, ctx.warn), ctx.config)
    confined = [] if ctx.args["--include-confined"] else sorted(r["name"] for r in offered if plan.confined(r, ctx.config))
    if confined:
        ctx.warn(f"left out, for nexus runs them confined and an agent would run their scripts unconfined: "
                 f"{', '.join(confined)} (--include-confined links them all the same)")
    report = links.sync(folder, {r["name"]: r["dir"] for r in offered if r["name"] not in confined}, ctx.warn)
    return {**report, "confined": confined}
