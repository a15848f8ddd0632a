"""The porcelain's distribution commands: `nexus skills add|remove|update|link` and `nexus skill install`."""

import sys

from nexus import cli

PROG = "nexus"


def _warn(line):
    cli.warn(PROG, line)


ADD_DOC = """nexus skills add: add skills from a folder or a git repository to the managed source.

Usage:
  nexus skills add SOURCE [--skill NAME]... [--list] [--copy] [--force] [--json]
  nexus skills add (-h | --help)

Options:
  --skill NAME  Only this skill (repeat for more).
  --list        Show the skills SOURCE holds; add nothing.
  --copy        Copy a folder's skills instead of linking them (skills from git are always copied).
  --force       Replace a skill of the same name that was placed by hand or came from elsewhere.
  --json        The outcome as JSON: source, revision, added, unchanged, refused.
  -h --help     Show this help.

SOURCE is a folder, a git URL (https, ssh, git, file, or user@host:path), the path of a local git
repository (cloned like a URL: committed files only), or owner/repo on GitHub. It may be one skill
(SKILL.md at its root) or hold skills in folders up to 4 levels below it. Each added skill is recorded
in MANAGED_SKILLS_DIR/.nexus-lock.json; adding the same skill again refreshes it.

Exit status:
  0  added, or already there;  1  a skill was refused, or the source holds none or cannot be fetched;
  2  usage error, or an unreadable lockfile

Examples:
  nexus skills add ~/src/team-skills --skill pdf-tools
  nexus skills add owner/repo --list
"""


@cli.command(PROG)
def skills_add(argv):
    args = cli.parse(ADD_DOC, ["skills", "add", *argv])
    if args["--list"]:
        return _list(args)
    from nexus import managed

    report = managed.add(args["SOURCE"], args["--skill"], args["--copy"], args["--force"], _warn)
    if report["added"]:
        managed.refresh_manifest()
    if args["--json"]:
        print(cli.dumps(report))
    else:
        for added in report["added"]:
            print(f"added {added['name']} ({added['placement']}, {added['path']})")
        for name in report["unchanged"]:
            print(f"unchanged {name}")
    for refused in report["refused"]:
        where = refused["path"] if refused["name"] == refused["path"] else f"{refused['name']} ({refused['path']})"
        _warn(f"refused {where}: {refused['error']}")
    return 1 if report["refused"] else 0


def _list(args):
    from nexus import managed, sources
    from nexus.style import table

    with sources.checkout(args["SOURCE"]) as source:
        found = managed.select(sources.find(source, _warn), args["--skill"], source)
    if args["--json"]:
        print(cli.dumps({"source": source.location, "revision": source.revision,
                         "skills": [c.as_dict() for c in found]}))
        return 0
    rows = [[c.name or "(invalid)", c.path, c.description or c.error] for c in found]
    sys.stdout.write("\n".join(table(rows, indent="")) + "\n")
    return 0


REMOVE_DOC = """nexus skills remove: remove skills that `nexus skills add` placed.

Usage:
  nexus skills remove NAME...
  nexus skills remove (-h | --help)

Options:
  -h --help  Show this help.

Only skills recorded in MANAGED_SKILLS_DIR/.nexus-lock.json are removed; when one NAME is not,
nothing is removed. A linked skill's own folder is never touched, only the link.

Exit status:
  0  removed;  1  a NAME was not added by `nexus skills add`;  2  usage error, or an unreadable lockfile
"""


@cli.command(PROG)
def skills_remove(argv):
    args = cli.parse(REMOVE_DOC, ["skills", "remove", *argv])
    from nexus import managed

    names = list(dict.fromkeys(args["NAME"]))
    managed.remove(names)
    managed.refresh_manifest()
    for name in names:
        print(f"removed {name}")


UPDATE_DOC = """nexus skills update: fetch added skills again and report which changed.

Usage:
  nexus skills update [NAME...] [--force] [--json]
  nexus skills update (-h | --help)

Options:
  --force    Replace a copied skill that was edited in place with its source's files.
  --json     The outcome as JSON: changed, unchanged, editedLocally, removedUpstream (lists of names),
             failed (name and error).
  -h --help  Show this help.

Each source is fetched once (git sources cloned again, folders read again) and every skill's files are
compared by SHA-256 with the lockfile. A copied skill whose files no longer match the lockfile was
edited in place: it is reported as edited locally and kept as it is, unless --force. A skill gone
from its source is reported and left in place. Safe to run from cron.

Exit status:
  0  done;  1  a skill or its source failed (the others are still updated);  2  usage error
"""

UPDATE_LABELS = [("changed", "changed"), ("unchanged", "unchanged"), ("editedLocally", "edited locally"),
                 ("removedUpstream", "removed upstream")]


@cli.command(PROG)
def skills_update(argv):
    args = cli.parse(UPDATE_DOC, ["skills", "update", *argv])
    from nexus import managed
    from nexus.style import table

    report = managed.update(list(dict.fromkeys(args["NAME"])), args["--force"])
    if report["changed"]:
        managed.refresh_manifest()
    if args["--json"]:
        print(cli.dumps(report))
    else:
        rows = [[label, name] for key, label in UPDATE_LABELS for name in report[key]]
        sys.stdout.write("".join(line + "\n" for line in table(rows, indent="")) or "no skills added\n")
    for failed in report["failed"]:
        _warn(f"{failed['name']}: {failed['error']}")
    return 1 if report["failed"] else 0


LINK_DOC = """nexus skills link: link the ready skills where an agent looks for skill folders.

Usage:
  nexus skills link --agent AGENT [--dir DIR] [--unlink]
  nexus skills link (-h | --help)

Options:
  --agent AGENT  cursor (.cursor/skills), claude-code (.claude/skills), codex (.codex/skills)
                 or agents (.agents/skills).
  --dir DIR      The project folder holding the agent's folder [default: .].
  --unlink       Remove the links nexus made there, and nothing else.
  -h --help      Show this help.

Each ready skill's folder is symlinked into the agent's folder; links to skills no longer ready are
removed. nexus records the links it made ($NEXUS_HOME/state/nexus/links.json) and never touches a name
the folder already has from elsewhere. Running it again changes nothing.

Exit status:
  0  done;  2  usage error
"""


@cli.command(PROG)
def skills_link(argv):
    args = cli.parse(LINK_DOC, ["skills", "link", *argv])
    from nexus import links

    folder = links.agent_folder(args["--agent"], args["--dir"])
    if args["--unlink"]:
        report = links.unlink(folder, _warn)
    else:
        from nexus.catalog import load

        ready = {r["name"]: r["dir"] for r in load(_warn)[1] if r["status"] == "ready"}
        report = links.sync(folder, ready, _warn)
    for key in ("linked", "unlinked"):
        for name in report.get(key, []):
            print(f"{key} {name}")
    counts = ", ".join(f"{len(report[k])} {k}" for k in ("linked", "unchanged", "skipped", "unlinked") if k in report)
    print(f"{counts}: {folder}")


INSTALL_DOC = """nexus skill install: run the install spec that fits this platform, then verify the skill.

Usage:
  nexus skill install NAME [--id ID] [--dry-run] [--yes]
  nexus skill install (-h | --help)

Options:
  --id ID    The install spec with this id (default: the best fit whose package manager is here).
  --dry-run  Print the command, run nothing.
  --yes      Run without asking (needed when there is no terminal, as under cron or an agent).
  -h --help  Show this help.

The command is shown before it runs, and asked about on a terminal. brew, node (npm), go and uv specs
run without a shell; a shell spec's script runs with /bin/sh -c. A download is checked against its
sha256 before anything is placed in $NEXUS_HOME/bin; add that folder to skills.binPath. The installer's
output streams to stderr.

Exit status:
  0  installed and verified;  1  refused, the install failed, or verification failed;  2  usage error
"""


@cli.command(PROG)
def skill_install(argv):
    args = cli.parse(INSTALL_DOC, ["skill", "install", *argv])
    from nexus import catalog, config as configlib, install

    config = configlib.load()
    entry = catalog.entry(config, args["NAME"], _warn)
    spec = install.choose(entry.get("install", []), args["--id"])
    if args["--dry-run"]:
        print(install.describe(spec))
        return 0
    label = spec.get("label") or f"Install {entry['name']} ({spec.get('kind')})"
    _warn(f"{label}: {install.describe(spec)}")
    if not args["--yes"]:
        _confirm()
    placed = install.run(spec)
    if placed:
        print(f"installed {placed}")
        _check_searched(placed, config)
    return _verify(entry, config)


def _confirm():
    from nexus.errors import NexusError

    if sys.stdin is None or sys.stdin.closed or not sys.stdin.isatty():
        raise NexusError("no terminal to ask: run it again with --yes to install")
    sys.stderr.write("Run it? [y/N] ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise NexusError("nothing installed")


def _check_searched(placed, config):
    import os

    from nexus import paths, status

    folder = os.path.dirname(placed)
    if folder not in status.search_dirs(config):
        _warn(f"{folder} is not searched: add it to skills.binPath in {paths.config_file()}, "
              f"as  [skills] binPath = [\"{folder}\"]")


def _verify(entry, config):
    from nexus import gateway
    from nexus.style import Style
    from nexus.tools.nexus_skill import report_outcome

    outcome = gateway.verify(entry, config)
    report_outcome(outcome, entry, Style(sys.stdout), sys.stdout)
    return 0 if outcome["ok"] else 1
