"""The porcelain's views of every skill: `nexus skills list|refresh|path` and `nexus status`."""

import os

from nexus import config as configlib, paths, trust
from nexus.catalog import listing, manifest as manifestlib, scope
from nexus.cli.command import renders
from nexus.cli.output import Encoded

GROUPS = [  # status (or "failing": status.failing), emoji, heading
    ("ready", "✅", "READY (configured, working)"),
    ("failing", "❗", "FAILING (most of its recent calls fail; not offered to agents)"),
    ("needs-setup", "⚠️ ", "NEEDS SETUP (requires configuration)"),
    ("not-installed", "⏳", "NOT INSTALLED (binary missing)"),
    ("disabled", "💤", "DISABLED (explicitly disabled)"),
    ("unsupported", "🚫", "UNSUPPORTED (not for this platform)"),
    ("invalid", "❌", "INVALID (broken SKILL.md)"),
]


DESCRIPTION_MIN = 30  # columns of a description beside its row; narrower, it goes under the row


def _kind(record):
    if record.get("type") == "tool":
        return f"[tool: {record.get('tool')}]"
    if record.get("type") == "script":
        return f"[script: {record.get('runner')}]"
    if record.get("unknownType"):  # logged as `unknown`: said so here too
        return f"[unknown: {record['unknownType']}, read as a prompt]"
    return "[prompt]"


def _detail(record):
    """(what the status column says, the command that fixes it or None)."""
    from nexus.gateway import plan  # human text only: `status` and --json, which agents call, never pay for them
    from nexus.style import one_line

    if record.get("untrusted"):
        return "refused: changed since it was added", record["untrusted"]["step"]
    if record["status"] == "ready":
        from nexus.catalog.status import failing, state_words  # a ready skill's marks only

        marks = state_words(record)[0 if failing(record) else 1:]
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

    from nexus.catalog.status import failing

    reason, step = _detail(record)
    if step is not None or record["status"] != "ready" or failing(record):
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


def _group(record):
    from nexus.catalog.status import failing  # human text only, as in _detail

    return "failing" if failing(record) else record["status"]


class Shown(list):
    """The records a listing shows, and what filtered them: `filtered` (listing.filtered)."""

    filtered = None


UNDO = {"skills.defaultProfile": "nexus config unset skills.defaultProfile",
        "NEXUS_PROFILE": "unset NEXUS_PROFILE"}  # what shows every skill again, by what set the profile


def filter_note(filtered):
    """What a listing says of the skills a profile hides ("profile coder (skills.defaultProfile) hides 46
    skills; every skill: nexus config unset skills.defaultProfile"), or None."""
    from nexus.style import plural  # human text only, as in _detail

    if not filtered:
        return None
    undo = UNDO.get(filtered["origin"])
    return (f"profile {filtered['profile']} ({filtered['origin']}) hides {plural(filtered['hidden'], 'skill')}"
            + (f"; every skill: {undo}" if undo and filtered["hidden"] else ""))


def render_list(records, out):
    # Imported here: `status` and --json, which agents call all the time, never pay for them.
    from nexus.cli.records import wrap
    from nexus.style import Style, cells, fit, one_line, plural, shorten, table, terminal

    style = Style(out)
    skills = [r for r in records if r["status"] != "invalid"]
    groups = [(status, emoji, heading, [r for r in records if _group(r) == status])
              for status, emoji, heading in GROUPS]
    indent = "   "
    # One set of columns across every group: the rows are fitted together, then dealt out.
    listed = [r for status, *_, group in groups if status != "invalid" for r in group]
    whole = _rows(listed)
    rows, sizes = fit(whole, style.columns, give=(2, 1), indent=indent)
    described = [one_line(r.get("description", "")) for r in listed]
    below = bool(style.columns and listed and (len(sizes) < 3 or sizes[2] < DESCRIPTION_MIN)) and any(described)
    if below:  # a description cut to a few words says nothing: each goes under its row, as wide as the terminal
        rows, sizes = fit([row[:2] for row in whole], style.columns, give=(1,), indent=indent)
    for row, record, full in zip(rows, listed, whole):
        if row[1] != terminal(full[1], False):  # the detail was cut: cut again so that it cannot mislead
            row[1] = _within(record, sizes[1])
    lines = style.header(f"NEXUS SKILLS ({len(skills):,} total)")
    note = filter_note(getattr(records, "filtered", None))
    if note:
        lines += wrap(note[0].upper() + note[1:] + ".", style.columns) if style.columns else [note[0].upper() + note[1:] + "."]
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
            shown = table(rows[:len(group)], indent, sizes)
            if below:
                under = [shorten(d, style.columns - len(indent) - 2) for d in described[:len(group)]]
                shown = [line for pair in zip(shown, under) for line in (pair[0], f"{indent}  {pair[1]}".rstrip())]
            lines += shown
            rows, described = rows[len(group):], described[len(group):]
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
    lines = style.header(f"LOCKED SKILLS ({len(records):,}), BY WHAT UNLOCKS THEM")
    lines += ["", *table([[step, ", ".join(names)] for step, names in steps.items()])]
    lines += ["", "Run 'nexus skill show <name>' for every step a skill needs."]
    out.write("\n".join(lines) + "\n")


def render_unhealthy(summary, out):
    """--check: one line per skill, nothing when all is well (cron mails output)."""
    out.write("".join(f"{name}: {flag}: {why}\n" for name, flag, why in summary["unhealthy"]))
    if summary.get("sandbox", {}).get("problem"):
        out.write(f"sandbox: {summary['sandbox']['problem']}\n")


def render_summary(summary, out):
    failing = summary.get("failing", 0)
    line = (f"nexus: {summary['ready'] - failing:,} ready" + (f", {failing:,} failing" if failing else "")
            + f", {summary['needsSetup']:,} need setup, {summary['notInstalled']:,} not installed, "
            f"{summary['disabled']:,} disabled")
    line += f", {summary['invalid']:,} invalid" if summary["invalid"] else ""
    # A failing skill is said once, as failing; a degraded one that is not ready yet is a flag of its own.
    health = [f"{count:,} {flag}" for flag, count in (("degraded", summary.get("degraded", 0) - failing),
                                                  ("drifted", summary.get("drifted", 0))) if count]
    out.write(line + (f"; {', '.join(health)}" if health else "") + "\n")
    note = filter_note(summary.get("profile"))
    if note:
        out.write(f"nexus: {note}\n")
    shown = summary.get("sandbox")
    if shown:  # `nexus status`: what confinement this system gives the skills the mode confines
        out.write("sandbox: " + (shown.get("problem") or f"{shown['text']} (skills.sandbox.mode: {shown['mode']})") + "\n")


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
    keep = lambda found_status: _selected(found_status, ctx.args)  # noqa: E731
    manifest = listing.current_manifest(ctx.config, ctx.warn)
    if ctx.json and not ctx.args["--locked"]:
        which = "ready" if ctx.args["--ready"] else "all" if ctx.args["--all"] else "shown"  # the filter's name
        read = listing.read_kept()
        kept = listing.snapshot(manifest, ctx.config, True, which, read)
        if kept and kept[1] is not None:  # nothing changed since the last listing: its output again
            return Encoded(listing.filled(kept[1], kept[2], _members(ctx.config)))
        shown = listing.patched(manifest, ctx.config, which, keep, _members(ctx.config), ctx.warn, read)
        if shown is not None:  # a few skills edited since: their records made again, in place
            return Encoded(shown)
        found = listing.listed(ctx.config, ctx.warn, save=False, manifest=manifest)
        shown = _with_permissions(found, keep, ctx.config)
        found.snapshot(True, shown if found.settled is None else None, which)
        return Encoded(shown)
    found = listing.listed(ctx.config, ctx.warn, manifest=manifest)
    if not ctx.args["--locked"]:
        shown = Shown(trust.marked(found.records(keep)))
        shown.filtered = _filtered(found)
        return shown
    records = trust.marked(found.records())
    from nexus.catalog import capabilities  # --locked only: what unlocks each skill

    connected = {c["name"]: c["connected"] for c in capabilities.connectors(records, lambda r: [""])}
    chosen = [r for r in records if keep(r["status"])]
    for record in chosen:
        record["unlock"] = capabilities.unlock(record, connected)
    return chosen


def _filtered(found):
    """listing.filtered, with what put the profile in force."""
    filtered = listing.filtered(found)
    return {**filtered, "origin": scope.origin(None)} if filtered else None


def _with_permissions(found, keep, config):
    """The JSON array of the records kept, each tool or script skill's with "permissions": what it may do when it
    runs confined, as `nexus skill show --json` has them (but "available", which takes a fork to see), and
    an added skill changed behind nexus's back with "untrusted" (trust.marked). What a record's entry and the
    config make is kept in its row of the status cache (Listing.listed_texts): a fresh listing splices it in."""
    members = _members(config)
    if found.settled is not None:
        texts = [members(text)[0] for text in found.texts(keep)]
        return b"[" + b",".join(texts) + b"]"
    shown = found.listed_json(keep, members)
    found.save()
    return shown


def _members(config):
    """members(text) for Listing.listed_texts: (the record's text with what a listing adds, those members as
    a row keeps them, or listing.LIVE where they depend on more than its entry and the config)."""
    from nexus import fastjson  # --json only

    made = {}  # the permissions' JSON by what makes them: most skills share one

    def members(text):
        record = fastjson.loads(text)
        # An added skill's trust follows its files; a record with a "permissions" of its own is encoded again.
        rewrite = "untrusted" in trust.marked([record])[0] or "permissions" in record
        live = rewrite or record.get("source") in paths.ADDED
        if record.get("type") not in ("tool", "script") or not record.get("name"):
            return (fastjson.dumps(record).encode() if rewrite else text), listing.LIVE if live else ""
        own, given = record.get("sandbox"), configlib.skill_entry(config, record).get("sandbox")
        key = fastjson.dumps([record["type"], record.get("source"), own, given,
                              (own or given) and record.get("dir")])
        from nexus.gateway import sandbox  # only where a row does not have them yet

        if key not in made:
            made[key] = fastjson.dumps(sandbox.effective(record, config)).encode()
        if rewrite:
            record["permissions"] = fastjson.loads(made[key])  # last, and once, even if an entry had one
            return fastjson.dumps(record).encode(), listing.LIVE
        added = b',"permissions":' + made[key]  # at the end of the text as it is: no second encoding of it
        # a write grant is checked against the file system (sandbox.protected: links followed) each time
        live = live or bool(sandbox.permissions(record, config)["write"])
        return text[:-1] + added + b"}", listing.LIVE if live else added.decode()

    return members


@renders(render_summary, {"--check": render_unhealthy})
def status(ctx):
    """A second line says what confinement this system gives ("sandbox: landlock ABI 7, network namespace yes
    (skills.sandbox.mode: untrusted)"), or what it cannot give that skills.sandbox.mode asks for. With --check,
    that line is printed only then ("sandbox: landlock ABI 7, network namespace no: ..."), and the exit status
    is 1.

    Skills whose `os` excludes this platform are not in the line (they are in --json as unsupported).
    Broken SKILL.md files are counted as invalid, and named by `nexus skills list`.

    A skill is failing (degraded) when most of its recent calls fail: at least 5 of its last 10 calls of
    the past 30 days; it is counted apart from the ready ones and offered to no agent, until a run at a
    terminal or `nexus skill verify` succeeds, or its failures are 30 days old. A skill whose verification
    failed after one had passed is degraded too. A skill has drifted when its verify command printed
    something else than the last time it passed, until it prints the same again. A profile in force is
    named, with how many skills it hides.
    --check also names each added skill whose files changed behind nexus's back (untrusted: refused until
    `nexus skill trust NAME`), so that a cron job hears of it before an agent is refused.

    Exit status:
      0  success (--check: all is well)
      1  --check found a skill failing, degraded, drifted or untrusted, or a sandbox that cannot be given
      2  usage error
    """
    manifest = listing.current_manifest(ctx.config, ctx.warn)
    kept = None if ctx.args.get("--check") else listing.snapshot(manifest, ctx.config, False)
    if kept:  # nothing changed since the last listing: its counts again
        counts = dict(kept[0])
    else:
        listed = listing.listed(ctx.config, ctx.warn, states=False, manifest=manifest)
        found = listed.briefs()
        counts = listing.summary(found)
        if listed.profile:
            counts["profile"] = _filtered(listed)
        listed.snapshot(False)
    if ctx.json or "--check" in ctx.args:  # `status` (not `skills list --summary`): what confinement this system
        # offers (kept: gateway.probes)
        from nexus.gateway import probes

        counts["sandbox"] = probes.status(ctx.config)
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
    out.write(f"{summary['skills']:,} skills, {summary['invalid']:,} invalid, "
              f"{summary['shadowed']:,} shadowed: {summary['manifest']}\n")


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
