"""The porcelain's views of every skill: `nexus skills list|refresh|path` and `nexus status`."""

import os

from nexus import config as configlib, paths, trust
from nexus.catalog import listing, manifest as manifestlib
from nexus.cli.command import renders
from nexus.cli.output import Encoded

GROUPS = [  # status, emoji, heading
    ("ready", "✅", "READY (configured, working)"),
    ("needs-setup", "⚠️ ", "NEEDS SETUP (requires configuration)"),
    ("not-installed", "⏳", "NOT INSTALLED (binary missing)"),
    ("disabled", "💤", "DISABLED (explicitly disabled)"),
    ("unsupported", "🚫", "UNSUPPORTED (not for this platform)"),
    ("invalid", "❌", "INVALID (broken SKILL.md)"),
]


def _kind(record):
    if record.get("type") == "tool":
        return f"[tool: {record.get('tool')}]"
    if record.get("type") == "script":
        return f"[script: {record.get('runner')}]"
    return "[prompt]"


def _detail(record):
    """(what the status column says, the command that fixes it or None)."""
    from nexus.gateway import plan  # human text only: `status` and --json, which agents call, never pay for them
    from nexus.style import one_line

    if record.get("untrusted"):
        return "refused: changed since it was added", record["untrusted"]["step"]
    if record["status"] == "ready":
        from nexus.catalog.status import state_words  # a ready skill's marks only

        marks = state_words(record)[1:]
        return _kind(record) + (f" ({', '.join(marks)})" if marks else ""), None
    reason, step = one_line(plan.not_ready_reason(record)), plan.next_step(record)
    return reason, (None if not step or step in reason else step)


def _said(reason, step):
    return f"{reason} ({step})" if step else reason


def _within(record, width):
    """The status detail of a record in `width` columns, when the whole does not fit: never a word cut
    into another (`shorten`), and for a skill that is not ready, the pointer to `nexus skill show NAME`
    kept while there is room for it (the fix command itself when it fits)."""
    from nexus.style import MIN_CELL, cells, shorten  # human text only, as in _detail

    reason, step = _detail(record)
    if step is not None or record["status"] != "ready":
        pointer = f" (nexus skill show {record['name']})"
        if step and cells(_said(reason, step)) <= width:
            return _said(reason, step)
        if cells(reason + pointer) <= width:
            return reason + pointer
        if width - cells(pointer) >= MIN_CELL:
            return shorten(reason, width - cells(pointer)) + pointer
    return shorten(_said(reason, step), width)


def _rows(records):
    """name, detail, description: the description gives way first on a terminal, the detail only when
    it must (style.fit, then `_within`)."""
    from nexus.style import one_line  # human text only, as in _detail

    return [[r["name"] + (" PROJECT" if r.get("source") == "nexus-project" else ""), _said(*_detail(r)),
             one_line(r.get("description", ""))] for r in records]  # PROJECT: the project's .nexus/skills


def render_list(records, out):
    # Imported here: `status` and --json, which agents call all the time, never pay for them.
    from nexus.cli.records import wrap
    from nexus.style import Style, cells, fit, one_line, plural, shorten, table, terminal

    style = Style(out)
    skills = [r for r in records if r["status"] != "invalid"]
    groups = [(status, emoji, heading, [r for r in records if r["status"] == status])
              for status, emoji, heading in GROUPS]
    indent = "   "
    # One set of columns across every group: the rows are fitted together, then dealt out.
    listed = [r for status, *_, group in groups if status != "invalid" for r in group]
    whole = _rows(listed)
    rows, sizes = fit(whole, style.columns, give=(2, 1), indent=indent)
    for row, record, full in zip(rows, listed, whole):
        if row[1] != terminal(full[1], False):  # the detail was cut: cut again so that it cannot mislead
            row[1] = _within(record, sizes[1])
    lines = style.header(f"NEXUS SKILLS ({len(skills)} total)")
    for status, emoji, heading, group in groups:
        if not group:
            continue
        headings = [f"{style.emoji(emoji)}{words} {style.dash} {plural(len(group), 'skill')}"
                    for words in (heading, heading.split(" (")[0])]  # a narrow terminal: without its explanation
        lines += ["", next((line for line in headings if not style.columns or cells(line) <= style.columns),
                           shorten(headings[1], style.columns))]
        if status == "invalid":
            lines += [style.clip(f"{indent}{r['filePath']}: {one_line(r.get('error', ''))}") for r in group]
        else:
            lines += table(rows[:len(group)], indent, sizes)
            rows = rows[len(group):]
    lines.append("")
    for hint in ("Run 'nexus skill show <name>' for details on any skill.",
                 "Run 'nexus skill run <name>' to use a skill."):
        lines += wrap(hint, style.columns) if style.columns else [hint]  # what to run next is never cut
    out.write("\n".join(lines) + "\n")


def render_locked(records, out):
    """The locked skills grouped by what unlocks them: one line for one step, however many it unlocks."""
    from nexus.style import Style, table  # human text only, as in _detail

    style = Style(out)
    steps = {}
    for record in records:
        steps.setdefault(record["unlock"]["step"], []).append(record["name"])
    lines = style.header(f"LOCKED SKILLS ({len(records)}), BY WHAT UNLOCKS THEM")
    lines += ["", *table([[step, ", ".join(names)] for step, names in steps.items()])]
    lines += ["", "Run 'nexus skill show <name>' for every step a skill needs."]
    out.write("\n".join(lines) + "\n")


def render_unhealthy(summary, out):
    """--check: one line per skill, nothing when all is well (cron mails output)."""
    out.write("".join(f"{name}: {flag}: {why}\n" for name, flag, why in summary["unhealthy"]))
    if summary.get("sandbox", {}).get("problem"):
        out.write(f"sandbox: {summary['sandbox']['problem']}\n")


def render_summary(summary, out):
    line = (f"nexus: {summary['ready']} ready, {summary['needsSetup']} need setup, "
            f"{summary['notInstalled']} not installed, {summary['disabled']} disabled")
    line += f", {summary['invalid']} invalid" if summary["invalid"] else ""
    health = [f"{summary[flag]} {flag}" for flag in ("degraded", "drifted") if summary.get(flag)]
    out.write(line + (f"; {', '.join(health)}" if health else "") + "\n")


def _selected(status, args):
    if args["--ready"]:
        return status == "ready"
    if args["--locked"]:
        return status in ("needs-setup", "not-installed")
    return args["--all"] or status != "unsupported"


@renders(render_list, {"--summary": render_summary, "--locked": render_locked})
def list_skills(ctx):
    """The manifest is rebuilt first when a skill or source folder changed since it was written."""
    if ctx.args["--summary"]:
        return status(ctx)
    found = listing.listed(ctx.config, ctx.warn)
    keep = lambda found_status: _selected(found_status, ctx.args)  # noqa: E731
    if not ctx.args["--locked"]:
        if ctx.json:
            return Encoded(_with_permissions(found.texts(keep), ctx.config))
        return trust.marked(found.records(keep))
    records = trust.marked(found.records())
    from nexus.catalog import capabilities  # --locked only: what unlocks each skill

    connected = {c["name"]: c["connected"] for c in capabilities.connectors(records, lambda r: [""])}
    chosen = [r for r in records if keep(r["status"])]
    for record in chosen:
        record["unlock"] = capabilities.unlock(record, connected)
    return chosen


def _with_permissions(texts, config):
    """The JSON array of the records, each tool or script skill's with "permissions": what it may do when it
    runs confined, as `nexus skill show --json` has them (but "available", which takes a fork to see), and
    an added skill changed behind nexus's back with "untrusted" (trust.marked)."""
    from nexus import fastjson  # --json only: the config and declaration make them, not the status cache
    from nexus.gateway import sandbox

    found, made = [], {}  # the permissions' JSON by what makes them: most skills share one
    for text in texts:
        record = fastjson.loads(text)
        rewrite = "untrusted" in trust.marked([record])[0] or "permissions" in record
        if record.get("type") in ("tool", "script") and record.get("name"):
            own, given = record.get("sandbox"), configlib.skill_entry(config, record).get("sandbox")
            key = fastjson.dumps([record["type"], record.get("source"), own, given,
                                  (own or given) and record.get("dir")])
            if key not in made:
                made[key] = fastjson.dumps(sandbox.effective(record, config)).encode()
            if not rewrite:  # added at the end of the text as it is: no second encoding of each record
                found.append(text[:-1] + b',"permissions":' + made[key] + b"}")
                continue
            record["permissions"] = fastjson.loads(made[key])  # last, and once, even if an entry had one
        found.append(fastjson.dumps(record).encode() if rewrite else text)
    return b"[" + b",".join(found) + b"]"


@renders(render_summary, {"--check": render_unhealthy})
def status(ctx):
    """With --check, a line also says when skills.sandbox.mode asks for confinement this system cannot
    give ("sandbox: landlock ABI 7, network namespace no: ..."), and the exit status is 1; `nexus skill
    show` says what it offers.

    Skills whose `os` excludes this platform are not in the line (they are in --json as unsupported).
    Broken SKILL.md files are counted as invalid, and named by `nexus skills list`.

    A ready skill is degraded when its recent calls fail far more often than they used to: at least 5
    of its last 10 calls failed while over 90% of its calls of the past 30 days before those (at least
    5) succeeded; or when its verification failed after one had passed. A skill has drifted when its
    verify command printed something else than the last time it passed, until it prints the same again.
    --check also names each added skill whose files changed behind nexus's back (untrusted: refused until
    `nexus skill trust NAME`), so that a cron job hears of it before an agent is refused.

    Exit status:
      0  success (--check: all is well);  1  --check found a skill degraded, drifted or untrusted, or a
      sandbox that cannot be given;  2  usage error
    """
    found = listing.listed(ctx.config, ctx.warn, states=False).briefs()
    counts = listing.summary(found)
    if ctx.json or ctx.args.get("--check"):  # what confinement this system offers: a fork to see
        from nexus.gateway import sandbox

        counts["sandbox"] = sandbox.status(ctx.config)
    if ctx.args.get("--check"):  # `skills list --summary` has no --check
        counts["unhealthy"] = listing.unhealthy(found) + _untrusted(ctx)
        ctx.status = 1 if counts["unhealthy"] or counts["sandbox"].get("problem") else 0
    return counts


def _untrusted(ctx):
    """(name, 'untrusted', why) of each added skill whose files changed behind nexus's back."""
    if not trust.added_skills():
        return []
    records = trust.marked(listing.listed(ctx.config, ctx.warn).records())
    return [(r["name"], "untrusted", r["untrusted"]["reason"]) for r in records if r.get("untrusted")]


def render_refresh(summary, out):
    out.write(f"{summary['skills']} skills, {summary['invalid']} invalid, "
              f"{summary['shadowed']} shadowed: {summary['manifest']}\n")


@renders(render_refresh)
def refresh(ctx):
    """Broken skills are reported on stderr and recorded, so `nexus skills list` shows them."""
    _, scan = manifestlib.refresh(configlib.sources(ctx.config))
    for line in scan.diagnostics:
        ctx.warn(line)
    return {"skills": len(scan.entries), "invalid": len(scan.invalid),
            "shadowed": len(scan.shadowed), "manifest": paths.manifest_file()}


def render_path(sources, out):
    out.write("".join(source["path"] + "\n" for source in sources))


@renders(render_path)
def path(ctx):
    """A skill in a later folder hides a skill of the same name in an earlier one."""
    return [{"source": source, "path": folder, "exists": os.path.isdir(folder)}
            for source, folder in configlib.sources(ctx.config)]
