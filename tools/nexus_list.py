"""The porcelain's views of all skills: `nexus skills list|refresh|path`."""

import sys

from nexus import cli, config as configlib, install, manifest as manifestlib
from nexus.catalog import load
from nexus.style import Style, plural, table, truncate, widths

PROG = "nexus"

LIST_DOC = """nexus skills list: the skills, grouped by status.

Usage:
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

GROUPS = [  # status, emoji, heading
    ("ready", "✅", "READY (configured, working)"),
    ("needs-setup", "⚠️ ", "NEEDS SETUP (requires configuration)"),
    ("not-installed", "⏳", "NOT INSTALLED (binary missing)"),
    ("disabled", "💤", "DISABLED (explicitly disabled)"),
    ("unsupported", "🚫", "UNSUPPORTED (not for this platform)"),
    ("invalid", "❌", "INVALID (broken SKILL.md)"),
]


def _warn(line):
    cli.warn(PROG, line)


def _selected(record, args):
    if args["--ready"]:
        return record["status"] == "ready"
    if args["--locked"]:
        return record["status"] in ("needs-setup", "not-installed")
    return args["--all"] or record["status"] != "unsupported"


def _kind(record):
    if record.get("type") == "tool":
        return f"[tool: {record.get('tool')}]"
    if record.get("type") == "script":
        return f"[script: {record.get('runner')}]"
    return "[prompt]"


def _detail(record):
    status, missing = record["status"], record.get("missing", {})
    if status == "ready":
        return _kind(record)
    if status == "needs-setup":
        needs = missing["env"] + [f"config {p}" for p in missing["config"]]
        return "needs: " + ", ".join(needs) if needs else "verification failed"
    if status == "not-installed":
        hints = install.hints(record)
        return "install: " + hints[0] if hints else "missing: " + ", ".join(missing["bins"] or missing["anyBins"])
    if status == "disabled":
        return record.get("disabledReason", "disabled")
    if status == "unsupported":
        return "os: " + ", ".join(record.get("os", []))
    return record.get("error", "")


def _row(record):
    return [record["name"], truncate(record.get("description", ""), 44), _detail(record)]


def _human(records, out):
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


@cli.command(PROG)
def skills_list(argv):
    args = cli.parse(LIST_DOC, ["skills", "list", *argv])
    if args["--summary"]:
        from nexus.tools.nexus_stats import status

        return status(["--json"] if args["--json"] else [])
    _, records = load(_warn)
    records = [r for r in records if _selected(r, args)]
    if args["--json"]:
        sys.stdout.write(cli.dumps(records) + "\n")
    else:
        _human(records, sys.stdout)


REFRESH_DOC = """nexus skills refresh: rescan every skill source and rewrite the manifest.

Usage:
  nexus skills refresh [--json]
  nexus skills refresh (-h | --help)

Options:
  --json     Print {"skills": N, "invalid": N, "shadowed": N, "manifest": PATH}.
  -h --help  Show this help.

Broken skills are reported on stderr and recorded, so `nexus skills list` shows them.
"""


@cli.command(PROG)
def skills_refresh(argv):
    args = cli.parse(REFRESH_DOC, ["skills", "refresh", *argv])
    from nexus import paths

    manifest, scan = manifestlib.refresh(configlib.sources(configlib.load()))
    for line in scan.diagnostics:
        _warn(line)
    summary = {"skills": len(manifest["skills"]), "invalid": len(scan.invalid),
               "shadowed": len(scan.shadowed), "manifest": paths.manifest_file()}
    if args["--json"]:
        print(cli.dumps(summary))
    else:
        print(f"{summary['skills']} skills, {summary['invalid']} invalid, "
              f"{summary['shadowed']} shadowed: {summary['manifest']}")


PATH_DOC = """nexus skills path: print every skill source folder, lowest precedence first.

Usage:
  nexus skills path [--json]
  nexus skills path (-h | --help)

Options:
  --json     Print JSON Lines: {"source", "path", "exists"}.
  -h --help  Show this help.

A skill in a later folder hides a skill of the same name in an earlier one.
"""


@cli.command(PROG)
def skills_path(argv):
    import os

    args = cli.parse(PATH_DOC, ["skills", "path", *argv])
    for source, path in configlib.sources(configlib.load()):
        if args["--json"]:
            print(cli.dumps({"source": source, "path": path, "exists": os.path.isdir(path)}))
        else:
            print(path)
