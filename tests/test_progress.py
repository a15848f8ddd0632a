"""Long work says how far it got, on stderr, to a person at a terminal only: never in a pipe, never
with --json (issue 25 item 9). Through the real scripts, on a pseudo-terminal."""

import os
import shutil
import subprocess

import pytest
from helpers import on_terminal, write_skill

pytestmark = pytest.mark.once  # a terminal of its own: subprocess mode adds nothing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def many(workspace):
    for n in range(300):
        write_skill(workspace, f"skill-{n:03d}", description=f"Skill number {n}.")
    return shutil.which("nexus")


def test_a_cold_refresh_says_how_far_it_got_on_a_terminal(many):
    code, shown, _ = on_terminal([many, "skills", "refresh"])
    assert code == 0 and "\rreading skills: 200" in shown
    progress, _, result = shown.rpartition("\r\033[K")  # wiped at the end: the result stands alone
    assert "reading skills" in progress and result.startswith("306 skills, 0 invalid")


def test_never_in_a_pipe_nor_with_json(many):
    code, shown, piped = on_terminal([many, "skills", "refresh"], stdout_too=False)
    assert code == 0 and "reading skills" not in shown and piped.startswith("306 skills")
    code, shown, _ = on_terminal([many, "skills", "refresh", "--json"])
    assert code == 0 and "reading skills" not in shown and '"skills":306' in shown.replace(" ", "")


def test_make_run_says_what_it_does():
    planned = subprocess.run(["make", "-n", "-B", "run", "VENV=/nonexistent/.venv"], cwd=ROOT,
                             capture_output=True, text=True).stdout
    said = [line for line in planned.splitlines() if line.startswith("echo ")]
    assert len(said) == 3 and "the first time: a minute or two" in said[0] and "nexus skills list" in said[2]


@pytest.fixture
def team_repo(tmp_path):
    """A git repository of three skills, as `skills add` clones one."""
    repo = tmp_path / "team-skills"
    for name in ("alpha", "beta", "gamma"):
        write_skill(repo, name, description=f"The {name} skill.")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for argv in (["init", "--quiet"], ["add", "."], ["commit", "--quiet", "-m", "skills"]):
        subprocess.run([*git, *argv], check=True, capture_output=True)
    return repo


def test_skills_add_says_it_clones_then_wipes_the_line(team_repo, monkeypatch):
    nexus = shutil.which("nexus")
    code, shown, _ = on_terminal([nexus, "skills", "add", str(team_repo)], columns=300)
    assert code == 0, shown
    assert f"\rcloning file://{team_repo}...\033[K" in shown
    narrow = on_terminal([nexus, "skills", "add", str(team_repo)], columns=40)[1]  # cut to the width: never wraps
    assert "\rcloning file:///tmp/" in narrow and all(len(part) <= 42 for part in narrow.split("\r")[1:2])
    progress, _, result = shown.rpartition("\r\033[K")  # wiped: what was added stands alone
    assert "cloning" in progress and result.startswith("added alpha") and "cloning" not in result
    monkeypatch.setenv("NO_COLOR", "1")  # no escape code at all: the line is rewritten and wiped with spaces
    code, shown, _ = on_terminal([nexus, "skills", "add", str(team_repo)])
    assert code == 0 and "\x1b" not in shown and "\rcloning file://" in shown
    cloning = shown.split("\r")[1]
    assert shown.split("\r")[2] == " " * len(cloning) and shown.split("\r")[3].startswith("unchanged alpha")
    for argv, stdout_too in ((["--json"], True), ([], False)):  # never with --json, never in a pipe
        code, shown, piped = on_terminal([nexus, "skills", "add", str(team_repo), *argv], stdout_too=stdout_too)
        assert code == 0 and "cloning" not in shown and "unchanged" in shown + piped


def test_skill_install_says_how_much_it_downloaded_and_that_it_verifies(workspace, tmp_path, nexus_home):
    import hashlib

    payload = tmp_path / "dl-tool"
    payload.write_bytes(b"#!/bin/sh\necho dl-tool 2.0\n" + b"#" * 300_000)
    spec = {"kind": "download", "url": payload.as_uri(), "sha256": hashlib.sha256(payload.read_bytes()).hexdigest(),
            "bins": ["dl-tool"]}
    write_skill(workspace, "dl-tool", meta={"tool": "dl-tool", "verify": "dl-tool --version", "install": [spec]})
    (nexus_home / "nexus.toml").write_text(f'[skills]\nbinPath = ["{nexus_home / "bin"}"]\n')
    code, shown, _ = on_terminal([shutil.which("nexus"), "skill", "install", "dl-tool", "--yes"])
    assert code == 0, shown
    assert "\rdownloading dl-tool: 0.1 MB of 0.3 MB\033[K" in shown  # the first 64 KB, said at once
    assert "\rverifying dl-tool...\033[K" in shown
    progress, _, result = shown.rpartition("\r\033[K")
    assert "verifying" in progress and "installed" in result and "verifying" not in result
