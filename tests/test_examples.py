"""Every example in the README and the man pages runs as a reader would type it, against the bundled
skills (issue 25 items 13 and 14): each ```sh block of README.md, and each example block of man/*.1,
is one shell script, run line by line with `sh -e`. Not run: a line with a placeholder in CAPITALS
(NAME, JOB, OWNER/REPO: the README says so), a line whose program is not installed here (jq, pass,
claude), and `make` (the build itself, which CI runs)."""

import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest
from helpers import write_skill

pytestmark = pytest.mark.once  # shell scripts of real commands: subprocess mode adds nothing

ROOT = pathlib.Path(__file__).resolve().parent.parent
# A word in capitals that is not a variable being set or read: a placeholder (NAME, JOB, OWNER/REPO).
PLACEHOLDER = re.compile(r"(?<![\w$.{-])[A-Z][A-Z0-9]+(?:_[A-Z0-9]+)*(?![\w=}])")


def command_part(line):
    """A line without its comment."""
    return re.split(r"\s#\s|^#", line, maxsplit=1)[0].rstrip()


def readme_blocks():
    text = (ROOT / "README.md").read_text()
    return [(f"README.md:{text[:m.start()].count(chr(10)) + 2}", m.group(1))
            for m in re.finditer(r"^```sh\n(.*?)^```", text, re.M | re.S)]


def roff_text(line):
    line = re.sub(r"\\f[BIRP]", "", line)
    return line.replace("\\-", "-").replace("\\e", "\\").replace("\\(aq", "'").replace("\\(dq", '"')


def man_blocks():
    """The example blocks of the man pages (EXAMPLES, and each command's Examples:), as plain text."""
    found = []
    for page in sorted((ROOT / "man").glob("*.1")):
        text = page.read_text()
        for m in re.finditer(r"(?:^\.SH EXAMPLES\n|^Examples:\n)(?:\.PP\n)?\.RS 4\n\.nf\n(.*?)^\.fi", text, re.M | re.S):
            lines = [roff_text(line) for line in m.group(1).splitlines()]
            found.append((f"{page.name}:{text[:m.start()].count(chr(10)) + 1}", "\n".join(lines)))
    return found


def runnable(line):
    """Whether a line of an example is run, and if not, why."""
    command = command_part(line)
    if not command:
        return False, "comment"
    if command.startswith("make "):
        return False, "the build itself"
    if re.match(r"^[\d*/,]+ ", command):
        return False, "a crontab line"
    if PLACEHOLDER.search(command):
        return False, "placeholder"
    for segment in re.split(r"\|\||&&|\||;", command):
        words = [w for w in segment.split() if "=" not in w.split("/")[0] or w.startswith("-")]
        program = words[0] if words else ""
        if program and program not in ("cat", "export", "echo") and shutil.which(program) is None:
            return False, f"{program} is not installed"
    return True, ""


@pytest.fixture
def stage(tmp_path, nexus_home, monkeypatch):
    """A reader's machine: a home with a folder of team skills and a project folder to work in, whose nexus.toml
    declares one of them (the README's `skills sync` lines are run in a project)."""
    home = tmp_path / "home"
    write_skill(home / "src" / "team-skills", "hello", description="Say hello.")
    (home / "src" / "app").mkdir()
    write_skill(home / "Downloads", "some-skill", description="A skill someone sent.")  # to audit
    (home / "Downloads" / "big.bin").write_bytes(b"x" * 4096)
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("some notes\n")
    (project / "nexus.toml").write_text('[[skills]]\nname = "hello"\nsource = "../home/src/team-skills"\n')
    return project


def run_block(where, block, cwd):
    lines = [line for line in block.splitlines() if runnable(line)[0]]
    if not lines:
        return 0, []
    script = "set -e\n" + "\n".join(command_part(line) for line in lines) + "\n"
    env = {**os.environ, "EDITOR": "true", "VISUAL": "true", "NO_COLOR": "1"}
    done = subprocess.run(["sh", "-x", "-c", script], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300)
    return done, lines


def with_lines_to_run(blocks):
    """The blocks that have a line to run (a block of placeholders or of the build itself has none)."""
    return [(where, block) for where, block in blocks if any(runnable(line)[0] for line in block.splitlines())]


@pytest.mark.parametrize("where, block", with_lines_to_run(readme_blocks() + man_blocks()),
                         ids=lambda v: v if ":" in v else None)
def test_every_example_runs(stage, where, block):
    done, lines = run_block(where, block, stage)
    assert lines, f"{where}: nothing to run"
    assert done.returncode == 0, f"{where}: the example fails:\n{done.stderr[-3000:]}"


def test_placeholders_are_marked_and_the_quick_start_runs_anywhere():
    blocks = dict(readme_blocks())
    quick = next(block for where, block in blocks.items() if "nexus skills list" in block)
    assert all(runnable(line)[0] for line in quick.splitlines())  # no placeholder, no tool a machine may lack
    assert "tmux" not in quick  # it fails outside tmux, and the failure made tmux verify again
    every = "\n".join(block for _, block in readme_blocks() + man_blocks())
    for invented in ("gog", "eve", "brave-search", "pdf-tools", "experimental", "github -- pr"):
        assert not re.search(rf"(?<![\w-]){re.escape(invented)}(?![\w-])", every), invented
    assert "logs/*.log" not in every


def test_the_docs_say_what_skills_check_json_prints(stage):
    readme = (ROOT / "README.md").read_text()
    assert "(`--json`: one JSON array of\n{path, line, severity, code, message})" in readme
    done = subprocess.run(["nexus", "skills", "check", "--json", str(stage.parent / "home" / "src")],
                          capture_output=True, text=True)
    found = json.loads(done.stdout)
    assert isinstance(found, list) and done.stdout.count("\n") == 1  # one document, not JSON Lines


def test_no_example_names_a_folder_a_reader_lacks_and_one_that_turns_skills_off_says_how_to_undo_it(stage):
    """`skills add ~/src/team-skills` failed as written on a reader's machine (it is no placeholder), and
    `config set skills.allowBundled` turned four bundled skills off without a word on how to undo it."""
    every = readme_blocks() + man_blocks()
    for where, block in every:
        for line in block.splitlines():
            assert not (runnable(line)[0] and "team-skills" in line), f"{where}: {line}"
    allow = [block for _, block in readme_blocks() if "config set skills.allowBundled" in block]
    assert allow and all("nexus config unset skills.allowBundled" in block for block in allow)
    done = subprocess.run(["nexus", "config", "set", "skills.allowBundled", '["filesystem", "tmux"]'],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "disabled: disk-report, github, video-frames, weather (every bundled skill " \
                                    "again: nexus config unset skills.allowBundled)" in done.stderr, done.stderr
