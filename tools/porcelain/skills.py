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
    from nexus.skill import installspec

    status, missing = record["status"], record.get("missing", {})
    if status == "ready":
        return _kind(record)
    if status == "needs-setup":
        needs = missing["env"] + [f"config {p}" for p in missing["config"]]
        return "needs: " + ", ".join(needs) if needs else "verification failed"
    if status == "not-installed":
        hints = installspec.hints(record)
        return "install: " + hints[0] if hints else "missing: " + ", ".join(missing["bins"] or missing["anyBins"])
    if status == "disabled":
        return record.get("disabledReason", "disabled")
    if status == "unsupported":
        return "os: " + ", ".join(record.get("os", []))
    return record.get("error", "")


def _row(record):
    from nexus.style import truncate

    return [record["name"], truncate(record.get("description", ""), 44), _detail(record)]


def render_list(records, out):
    if isinstance(records, dict):  # --summary
        return render_summary(records, out)
    # Imported here: `status` and --json, which agents call all the time, never pay for them.
    from nexus.style import Style, plural, table, widths

    style = Style(out)
    skills = [r for r in records if r["status"] != "invalid"]
    aligned = widths([_row(r) for r in skills])  # one set of columns across every group
    lines = style.header(f"NEXUS SKILLS ({len(skills)} total)")
    for status, emoji, heading in GROUPS:
        group = [r for r in records if r["status"] == status]
        if not group:
            continue
        lines += ["", f"{style.emoji(emoji)}{heading} {style.dash} {plural(len(group), 'skill')}"]
        if status == "invalid":
            lines += [f"   {r['filePath']}: {r.get('error', '')}" for r in group]
        else:
            lines += table([_row(r) for r in group], column_widths=aligned)
    lines += ["", "Run 'nexus skill show <name>' for details on any skill.",
              "Run 'nexus skill run <name>' to use a skill."]
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
      --locked   Only skills that need setup or are not installed.
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
    return Encoded(found.json(keep)) if ctx.json else found.records(keep)


def render_summary(summary, out):
    line = (f"nexus: {summary['ready']} ready, {summary['needsSetup']} need setup, "
            f"{summary['notInstalled']} not installed, {summary['disabled']} disabled")
    out.write(line + (f", {summary['invalid']} invalid" if summary["invalid"] else "") + "\n")


@renders(render_summary)
def status(ctx):
    """Usage:
      nexus status [--json]
      nexus status (-h | --help)

    Options:
      --json     Print {"ready", "needsSetup", "notInstalled", "disabled", "invalid", "unsupported"}, each a count.
      -h --help  Show this help.

    Skills whose `os` excludes this platform are not in the line (they are in --json as unsupported).
    Broken SKILL.md files are counted as invalid, and named by `nexus skills list`.
    """
    return listing.summary(listing.listed(ctx.config, ctx.warn, states=False).statuses())


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
