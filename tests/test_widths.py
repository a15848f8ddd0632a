"""Every table fits the terminal, as gh's do: at 80 and at 120 columns no line is wider than the
terminal (the description gives way first, names stay whole), and in a pipe nothing is cut.

The commands run as a person runs them: the real console script, stdout on a pseudo-terminal, COLUMNS
set as a shell sets it."""

import datetime
import os
import re
import shutil
import subprocess
import unicodedata

import pytest
from helpers import make_tool, on_terminal, write_config, write_log, write_skill

pytestmark = pytest.mark.once  # each command runs on a terminal of its own: subprocess mode adds nothing

ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
LONG_ERROR = "rsync: connection unexpectedly closed\nrestic: repository not reachable: dial tcp 10.0.0.5:22: no route"
LONG_ARGS = ["backup", "--exclude", "/home/someone/projects/a-very-long-folder-name/node_modules", "--verbose"]
COMMANDS = [["skills", "list"], ["sessions"], ["session", "show", "weekly-report-2026-48"], ["jobs"], ["capabilities"],
            ["connectors"], ["config", "list"], ["skill", "stats"], ["skill", "stats", "backup"]]


def columns_of(line):
    """The terminal columns a line takes: escape codes none, wide characters (emoji) two."""
    line = ESCAPE.sub("", line)
    return sum(0 if unicodedata.combining(c) or "\ufe00" <= c <= "\ufe0f" else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def terminal(argv, columns):
    """(exit code, what a terminal `columns` wide shows) of argv."""
    code, shown, _ = on_terminal(argv, columns)
    return code, shown


@pytest.fixture
def crowded(workspace, nexus_home, bindir, tmp_path):
    """A catalogue with the long details the issue names, sessions, calls, a job and long config values."""
    now = datetime.datetime.now(datetime.timezone.utc)
    make_tool(bindir, "restic")
    description = "Back up the home folder to the NAS with restic, keeping seven daily and four weekly snapshots."
    write_skill(workspace, "backup", description=description, meta={"tool": "restic"})
    write_skill(workspace, "sendgrid", description="Send transactional email through the SendGrid API.",
                meta={"tool": "sh", "implements": ["email_sender"], "requires": {"env": ["SENDGRID_API_KEY"]}})
    write_skill(workspace, "weekly-digest", description="Mail a digest of the week's pull requests to the team.",
                meta={"tool": "sh", "requires": {"capabilities": ["email_sender"]}, "connectors": ["google"]})
    lines = []
    for i, skill in enumerate(["backup"] * 5 + ["weekly-digest", "sendgrid", "backup"]):
        ts = (now - datetime.timedelta(minutes=50 - i)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        entry = {"ts": ts, "skill": skill, "type": "tool", "args": LONG_ARGS, "ms": 40 + i, "exit": 0,
                 "session": "weekly-report-2026-48"}
        if i % 3 == 0:
            entry.update(exit=3, error=LONG_ERROR)
        lines.append(entry)
    for skill in ("backup", "weekly-digest", "sendgrid"):
        write_log(nexus_home, skill, [e for e in lines if e["skill"] == skill])
    folder = tmp_path / ("a-folder-of-skills-with-a-long-name-" * 3)
    write_config(nexus_home, f'[skills.load]\nextraDirs = ["{folder}", "{folder}2"]\n')
    nexus = shutil.which("nexus")
    started = subprocess.run([nexus, "skill", "run", "backup", "--background", "--", *LONG_ARGS],
                             capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    subprocess.run([nexus, "job", "wait", started.stdout.split()[-1] if started.stdout.split() else ""],
                   capture_output=True, timeout=60)
    return nexus


@pytest.mark.parametrize("columns", [80, 120])
def test_every_table_fits_the_terminal(crowded, columns):
    for argv in COMMANDS:
        code, out = terminal([crowded, *argv], columns)
        assert code == 0, (argv, out)
        assert out.strip(), argv
        for line in out.splitlines():
            assert columns_of(line) <= columns, (argv, columns, line)
    listed = terminal([crowded, "skills", "list"], columns)[1]
    # names and the status detail stay whole; the description gave way
    assert "   backup " in listed and "weekly-digest  needs" in listed
    # a description too narrow beside its row goes under it, as wide as the terminal: never 19 characters
    assert "\n     Back up the home folder to the NAS with restic, keeping seven daily" in listed
    assert ("seven daily and four weekly snapshots." in listed) is (columns > 100)
    shown = terminal([crowded, "session", "show", "weekly-report-2026-48"], columns)[1]
    assert "rsync" not in shown and "! restic: repository" in shown  # the last line of stderr, in its row
    assert len(shown.splitlines()) == 9  # a header and 8 calls: a multi-line error never breaks the table


def test_in_a_pipe_no_column_is_cut(crowded):
    for argv in COMMANDS:
        done = subprocess.run([crowded, *argv], capture_output=True, text=True, env={**os.environ, "COLUMNS": "80"})
        assert done.returncode == 0, (argv, done.stderr)
        assert not re.search(r"\w\.\.\.(\s|$)", done.stdout), argv  # no cell cut ("VAR=..." is a step's own)
    listed = subprocess.run([crowded, "skills", "list"], capture_output=True, text=True).stdout
    assert "seven daily and four weekly snapshots." in listed
    sessions = subprocess.run([crowded, "sessions"], capture_output=True, text=True).stdout
    assert "weekly-report-2026-48" in sessions and "backup, sendgrid, weekly-digest" in sessions
    shown = subprocess.run([crowded, "session", "show", "weekly-report-2026-48"], capture_output=True, text=True)
    assert " ".join(LONG_ARGS) in shown.stdout and len(shown.stdout.splitlines()) == 9


@pytest.mark.parametrize("columns", [80, 40])
def test_a_status_detail_that_does_not_fit_is_cut_at_a_word_and_points_to_show(workspace, columns):
    """A 65-character "needs a provider of ..." does not fit beside its name at 80 columns: it is cut at a
    word, never inside one (SENDGRID_A... reads as another name), and keeps `nexus skill show NAME`
    while there is room for it; the lines that say what to run next are wrapped, never cut."""
    write_skill(workspace, "sendgrid", description="Send transactional email through the SendGrid API.",
                meta={"tool": "sh", "implements": ["email_sender"], "requires": {"env": ["SENDGRID_API_KEY"]}})
    write_skill(workspace, "weekly-digest", description="Mail a digest of the week's pull requests to the team.",
                meta={"tool": "sh", "requires": {"capabilities": ["email_sender"]}})
    nexus = shutil.which("nexus")
    whole = {line.split()[0]: line.split(None, 1)[1].rsplit("  ", 1)[0].strip()
             for line in subprocess.run([nexus, "skills", "list"], capture_output=True, text=True).stdout.splitlines()
             if line.startswith("   ")}
    assert whole["weekly-digest"] == ("needs a provider of email_sender: sendgrid needs SENDGRID_API_KEY "
                                      "(nexus skill show weekly-digest)")
    code, shown = terminal([nexus, "skills", "list"], columns)
    assert code == 0
    assert all(columns_of(line) <= columns for line in shown.splitlines()), shown
    rows = {line.split()[0]: line.split(None, 1)[1].strip() for line in shown.splitlines()
            if line.startswith("   ") and not line.startswith("     ")}  # deeper: a description under its row
    for name, detail in rows.items():
        said, cut, rest = detail.partition("...")
        if cut:  # what is left ends at a word of the whole detail, and what follows it is a pointer of its own
            assert whole[name].startswith(said) and not re.match(r"\w", whole[name][len(said)]), (name, detail)
            assert rest in ("", f" (nexus skill show {name})"), (name, detail)
    if columns == 80:
        assert rows["weekly-digest"] == "needs a provider of... (nexus skill show weekly-digest)"
        assert rows["sendgrid"] == "needs: SENDGRID_API_KEY (nexus skill show sendgrid)"
    else:
        assert rows["weekly-digest"] == "needs a provider of..." and "⚠️  NEEDS SETUP — 2 skills" in shown
    assert "Run 'nexus skill show <name>' for details on any skill." in " ".join(shown.split())
