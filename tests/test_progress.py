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
