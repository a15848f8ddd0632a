"""What an agent did: `nexus sessions`, `nexus session show|new|crystallize`."""

import os

from nexus import config as configlib, schema
from nexus.catalog import manifest as manifestlib
from nexus.cli.command import renders
from nexus.errors import NexusError
from nexus.state import skill_state
from nexus.style import Style, fit, fitted, last_line, local, shell_line, table, visible
from nexus.usage import crystallize as crystal, sessions


LIMIT = 20  # sessions shown unless told: the newest, and the command that shows the rest


def render_sessions(found, out):
    if not found:
        out.write("No calls in the usage logs.\n")
        return
    shown, more = found, getattr(found, "more", 0)
    year = local(found[0]["last"])[:5]  # a time of this year is shown without it: the columns fit 80
    short = lambda ts: local(ts)[5:] if local(ts).startswith(year) else local(ts)[:10]  # noqa: E731
    rows = [["SESSION", "FIRST", "LAST", "CALLS", "FAILED", "REFUSED", "CLIENT", "PROFILE", "SKILLS"]]
    rows += [[s["id"], short(s["first"]), short(s["last"]), f"{s['calls']:,}", f"{s['failures']:,}",
              f"{s['refused']:,}", ", ".join(s["clients"]) or "-", ", ".join(s["profiles"]) or "-",
              ", ".join(s["skills"])] for s in shown]
    empty = [i for i in (6, 7) if all(row[i] == "-" for row in rows[1:])]  # no client, no profile: said by nothing
    rows = [[cell for i, cell in enumerate(row) if i not in empty] for row in rows]
    # What a narrow terminal loses first: the profile, the first call, then the client is cut, the skills last.
    give = tuple(rows[0].index(name) for name in ("PROFILE", "FIRST", "CLIENT", "SKILLS") if name in rows[0])
    lines = fitted(rows, Style(out).columns, give=give)
    if more:
        lines.append(f"... and {more:,} older {'session' if more == 1 else 'sessions'}: nexus sessions --all, "
                     "or --limit N")
    out.write("\n".join(lines) + "\n")


class Newest(list):
    """The newest sessions, and how many older ones are left out (`more`)."""

    more = 0


@renders(render_sessions)
def list_sessions(ctx):
    """A session is the calls made with one NEXUS_SESSION_ID (set it with
    `export NEXUS_SESSION_ID=$(nexus session new)`). Calls made without one are shown as "-". A call
    the gateway refused (not installed, needs setup, disabled, ...) is counted as refused, never as
    failed: the skill did not run. The newest 20 are shown, and how many more there are.
    """
    found = sessions.summary(ctx.args["--days"], ctx.warn)
    limit = None if ctx.args["--all"] else ctx.args["--limit"] or (None if ctx.json else LIMIT)
    if limit is None or len(found) <= limit:
        return found
    shown = Newest(found[:limit])
    shown.more = len(found) - limit
    return shown


def render_calls(found, out):
    style = Style(out)
    rows, errors = [["#", "TIME", "SKILL", "EXIT", "MS", "ERROR / ARGS"]], [""]
    for call in found:
        # A failed call's error first, its last line (the whole log window is in --json): what went wrong; a
        # refused call says so and why, in yellow: the skill never ran (sessions.refused).
        mark = f"refused ({visible(call['refused'])}):" if sessions.refused(call) else "!"
        errors.append(f"{mark} {visible(last_line(call['error']))}" if call.get("error") else "")
        # each word as a shell needs it: exact, and visible
        shown = "  ".join(part for part in (errors[-1], shell_line(call.get("args") or [])) if part)
        rows.append([str(call["n"]), local(call["ts"]), call["skill"], str(call.get("exit", "-")),
                     str(call.get("ms", "-")), shown])
    rows, sizes = fit(rows, style.columns, give=(5, 2))
    for row, error in zip(rows, errors):  # coloured once fitted, in the last column: it is never padded
        if error and len(row) == 6:
            colour = "yellow" if error.startswith("refused") else "red"
            row[-1] = style.color(row[-1][:len(error)], colour) + row[-1][len(error):]
    out.write("\n".join(table(rows, "", sizes)) + "\n")


@renders(render_calls)
def show(ctx):
    """ID "-" shows the calls made without a session. The numbers (n) are the ones
    `nexus session crystallize --calls N-M` takes.

    Exit status:
      0  shown;  1  no call of that session in the usage logs;  2  usage error
    """
    found = list(sessions.calls(ctx.args["ID"], ctx.warn))
    if not found:
        raise NexusError(f"no call of session {ctx.args['ID']!r} in the usage logs; see `nexus sessions`")
    return found


def new(ctx):
    """Prints a fresh session id, for `export NEXUS_SESSION_ID=$(nexus session new)`."""
    return sessions.new_id() + "\n"


def render_files(made, out):
    """--dry-run: the files it would write."""
    # A byte of the script that is not UTF-8 shows as \\udcXX here, as in every output of nexus.
    out.write(f"# {made['path']}/SKILL.md\n{made['skillMd']}\n# {made['path']}/{crystal.SCRIPT}\n{made['script']}")


def render_crystal(made, out):
    out.write(f"crystallized {made['name']}: {made['path']} (replays calls {', '.join(map(str, made['calls']))})\n")


@renders(render_crystal, {"--dry-run": render_files})
def crystallize(ctx):
    """Turns the session's successful tool and script calls into a script skill that replays them in
    order through `nexus skill run`, stopping at the first failure; every argument arrives byte for
    byte. A secret was never logged: a call whose argument was masked (***) is replayed from a --var,
    or from the env var that held it when its skill declares one; otherwise nothing is written.

    Examples:
      nexus session crystallize SESSION --name weekly-report --var week=48
      nexus skill run NAME -- --week 49   # NAME: weekly-report, SESSION yours
    """
    args = ctx.args
    name = args["--name"]
    numbers = crystal.span(args["--calls"]) if args["--calls"] else None
    named = crystal.variables(args["--var"])
    path = crystal.folder(name)
    picked = crystal.chosen_calls(args["ID"], numbers, ctx.warn)
    manifest = manifestlib.current(configlib.sources(ctx.config), ctx.warn)
    skills = manifest.skills()
    if not args["--dry-run"]:
        crystal.taken(name, skills, args["--force"])
    files = crystal.plan(name, args["ID"], picked, named, skills)
    made = {"name": name, "path": path, "calls": files["calls"], "requires": files["requires"], "env": files["env"],
            "skillMd": files["skillMd"], "script": files["script"].decode("utf-8", "surrogateescape"),
            "dryRun": bool(args["--dry-run"])}
    if not args["--dry-run"]:
        crystal.write(name, files, args["--force"])
        entry = manifestlib.entry(configlib.sources(ctx.config), name, ctx.warn)
        with skill_state.Update(name, entry) as state:
            state["crystallizedFrom"] = {"session": args["ID"], "calls": files["calls"]}
            # skills spec 9.2: what the session saw, where nexus held a call's output (--json, MCP, jobs)
            state["crystallized"] = {"scriptPath": os.path.join(path, crystal.SCRIPT), "crystallizedAt": schema.now_iso(),
                                     "variables": [n for n, _ in named],
                                     "fingerprint": [{"n": c["n"], "skill": c["skill"], "output": c["output"]}
                                                     for c in picked if isinstance(c.get("output"), dict)]}
    return made


def session_ids(ctx):
    """Every session id in the usage logs, newest first, for shell completion."""
    return "".join(s["id"] + "\n" for s in sessions.summary() if s["id"] != "-")
