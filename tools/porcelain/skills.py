"""The porcelain's views of every skill: `nexus skills list|refresh|path` and `nexus status`."""

import os

from nexus import config as configlib, paths
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
    from nexus.gateway import plan
    from nexus.style import one_line

    if record["status"] == "ready":
        from nexus.catalog.status import state_words

        marks = state_words(record)[1:]
        return _kind(record) + (f" ({', '.join(marks)})" if marks else "")
    reason, step = plan.not_ready_reason(record), plan.next_step(record)
    return one_line(reason if not step or step in reason else f"{reason} ({step})")


def _rows(records):
    """name, detail, description: the description gives way first on a terminal, the detail only when
    it must (style.fit)."""
    from nexus.style import one_line

    return [[r["name"], _detail(r), one_line(r.get("description", ""))] for r in records]


def render_list(records, out):
    if isinstance(records, dict):  # --summary
        return render_summary(records, out)
    # Imported here: `status` and --json, which agents call all the time, never pay for them.
    from nexus.style import Style, fit, one_line, plural, table

    if records and all("unlock" in r for r in records):  # --locked
        return render_locked(records, out)
    style = Style(out)
    skills = [r for r in records if r["status"] != "invalid"]
    groups = [(status, emoji, heading, [r for r in records if r["status"] == status])
              for status, emoji, heading in GROUPS]
    indent = "   "
    # One set of columns across every group: the rows are fitted together, then dealt out.
    rows, sizes = fit(_rows([r for status, *_, group in groups if status != "invalid" for r in group]),
                      style.columns, give=(2, 1), indent=indent)
    lines = style.header(f"NEXUS SKILLS ({len(skills)} total)")
    for status, emoji, heading, group in groups:
        if not group:
            continue
        lines += ["", style.clip(f"{style.emoji(emoji)}{heading} {style.dash} {plural(len(group), 'skill')}")]
        if status == "invalid":
            lines += [style.clip(f"{indent}{r['filePath']}: {one_line(r.get('error', ''))}") for r in group]
        else:
            lines += table(rows[:len(group)], indent, sizes)
            rows = rows[len(group):]
    lines += ["", "Run 'nexus skill show <name>' for details on any skill.",
              "Run 'nexus skill run <name>' to use a skill."]
    out.write("\n".join(lines) + "\n")


def render_locked(records, out):
    """The locked skills grouped by what unlocks them: one line for one step, however many it unlocks."""
    from nexus.style import Style, table

    style = Style(out)
    steps = {}
    for record in records:
        steps.setdefault(record["unlock"]["step"], []).append(record["name"])
    lines = style.header(f"LOCKED SKILLS ({len(records)}), BY WHAT UNLOCKS THEM")
    lines += ["", *table([[step, ", ".join(names)] for step, names in steps.items()])]
    lines += ["", "Run 'nexus skill show <name>' for every step a skill needs."]
    out.write("\n".join(lines) + "\n")


def _selected(status, args):
    if args["--ready"]:
        return status == "ready"
    if args["--locked"]:
        return status in ("needs-setup", "not-installed")
    return args["--all"] or status != "unsupported"


@renders(render_list)
def list_skills(ctx):
    """Usage:
      nexus skills list [--ready | --locked | --all] [--json]
      nexus skills list --summary [--json]
      nexus skills list (-h | --help)

    Options:
      --ready    Only skills that are ready to use.
      --locked   Only skills that need setup or are not installed, grouped by what unlocks them
                 (--json: each with "unlock": {"kind", "name", "step"}).
      --all      Also skills whose `os` excludes this platform.
      --summary  One line of counts per status: the same as `nexus status`.
      --json     An array of entries: name, description, source, type, status, verified, missing, ...
      -h --help  Show this help.

    The manifest is rebuilt first when a skill or source folder changed since it was written.
    """
    if ctx.args["--summary"]:
        return status(ctx)
    found = listing.listed(ctx.config, ctx.warn)
    keep = lambda found_status: _selected(found_status, ctx.args)  # noqa: E731
    if not ctx.args["--locked"]:
        return Encoded(found.json(keep)) if ctx.json else found.records(keep)
    records = found.records()
    from nexus.catalog import capabilities

    connected = {c["name"]: c["connected"] for c in capabilities.connectors(records, lambda r: [""])}
    chosen = [r for r in records if keep(r["status"])]
    for record in chosen:
        record["unlock"] = capabilities.unlock(record, connected)
    return chosen


def render_summary(summary, out):
    if "unhealthy" in summary:  # --check: one line per skill, nothing when all is well (cron mails output)
        out.write("".join(f"{name}: {flag}: {why}\n" for name, flag, why in summary["unhealthy"]))
        if summary.get("sandbox", {}).get("problem"):
            out.write(f"sandbox: {summary['sandbox']['problem']}\n")
        return
    line = (f"nexus: {summary['ready']} ready, {summary['needsSetup']} need setup, "
            f"{summary['notInstalled']} not installed, {summary['disabled']} disabled")
    line += f", {summary['invalid']} invalid" if summary["invalid"] else ""
    health = [f"{summary[flag]} {flag}" for flag in ("degraded", "drifted") if summary.get(flag)]
    out.write(line + (f"; {', '.join(health)}" if health else "") + "\n")


@renders(render_summary)
def status(ctx):
    """Usage:
      nexus status [--check] [--json]
      nexus status (-h | --help)

    Options:
      --check    For cron and monitoring: print one line per skill that is degraded or has drifted, and
                 per SKILL.md that is invalid, and exit 1 when there is one; print nothing and exit 0
                 when all is well.
      --json     Print {"ready", "needsSetup", "notInstalled", "disabled", "invalid", "unsupported",
                 "degraded", "drifted"}, each a count; with --check, also "unhealthy": [[name, flag, why]];
                 and "sandbox": {"mode", "landlock" (its ABI, 0: none), "netns", "text", "problem"}.
      -h --help  Show this help.

    With --check, a line also says when skills.sandbox.mode asks for confinement this system cannot
    give ("sandbox: landlock ABI 7, network namespace no: ..."), and the exit status is 1; `nexus skill
    show` says what it offers.

    Skills whose `os` excludes this platform are not in the line (they are in --json as unsupported).
    Broken SKILL.md files are counted as invalid, and named by `nexus skills list`.

    A ready skill is degraded when its recent calls fail far more often than they used to: at least 5
    of its last 10 calls failed while over 90% of its calls of the past 30 days before those (at least
    5) succeeded; or when its verification failed after one had passed. A skill has drifted when its
    verify command printed something else than the last time it passed, until it prints the same again.

    Exit status:
      0  success (--check: all is well);  1  --check found a skill degraded or drifted, or a sandbox
      that cannot be given;  2  usage error
    """
    found = listing.listed(ctx.config, ctx.warn, states=False).briefs()
    counts = listing.summary(found)
    if ctx.json or ctx.args.get("--check"):  # what confinement this system offers: a fork to see
        from nexus.gateway import sandbox

        counts["sandbox"] = sandbox.status(ctx.config)
    if ctx.args.get("--check"):  # `skills list --summary` has no --check
        counts["unhealthy"] = listing.unhealthy(found)
        ctx.status = 1 if counts["unhealthy"] or counts["sandbox"].get("problem") else 0
    return counts


def render_refresh(summary, out):
    out.write(f"{summary['skills']} skills, {summary['invalid']} invalid, "
              f"{summary['shadowed']} shadowed: {summary['manifest']}\n")


@renders(render_refresh)
def refresh(ctx):
    """Usage:
      nexus skills refresh [--json]
      nexus skills refresh (-h | --help)

    Options:
      --json     Print {"skills": N, "invalid": N, "shadowed": N, "manifest": PATH}.
      -h --help  Show this help.

    Broken skills are reported on stderr and recorded, so `nexus skills list` shows them.
    """
    _, scan = manifestlib.refresh(configlib.sources(ctx.config))
    for line in scan.diagnostics:
        ctx.warn(line)
    return {"skills": len(scan.entries), "invalid": len(scan.invalid),
            "shadowed": len(scan.shadowed), "manifest": paths.manifest_file()}


def render_path(sources, out):
    out.write("".join(source["path"] + "\n" for source in sources))


@renders(render_path)
def path(ctx):
    """Usage:
      nexus skills path [--json]
      nexus skills path (-h | --help)

    Options:
      --json     An array of {"source", "path", "exists"}.
      -h --help  Show this help.

    A skill in a later folder hides a skill of the same name in an earlier one.
    """
    return [{"source": source, "path": folder, "exists": os.path.isdir(folder)}
            for source, folder in configlib.sources(ctx.config)]
