"""Concurrent runs and kills: the log and the state stay whole. These tests start the real console
scripts as separate processes, so they run the same in both launch modes and run once."""

import json
import random
import signal
import subprocess
import time

import pytest
from helpers import make_tool, write_config, write_skill

pytestmark = pytest.mark.once

PROCESSES, RUNS = 8, 25


def hammer(skill, arg="x"):
    loop = f'for i in $(seq {RUNS}); do nexus-run {skill} -- "$i" >/dev/null || exit 1; done'
    procs = [subprocess.Popen(["sh", "-c", loop]) for _ in range(PROCESSES)]
    assert [p.wait(timeout=240) for p in procs] == [0] * PROCESSES


def skill_files(nexus_home, name):
    folder = nexus_home / "state" / "nexus" / "skills" / name
    return folder / "usage.log", folder / "state.json"


@pytest.fixture
def quick_tool(workspace, bindir):
    make_tool(bindir, "quick", "#!/bin/sh\necho \"$1\"\n")
    write_skill(workspace, "quick", meta={"tool": "quick"})
    assert subprocess.run(["nexus", "skills", "refresh"], capture_output=True).returncode == 0


def test_concurrent_runs_lose_nothing(quick_tool, nexus_home):
    hammer("quick")
    log, state = skill_files(nexus_home, "quick")
    lines = log.read_bytes().splitlines()
    assert len(lines) == PROCESSES * RUNS
    entries = [json.loads(line) for line in lines]
    assert sorted(int(e["args"][0]) for e in entries) == sorted(list(range(1, RUNS + 1)) * PROCESSES)
    assert json.loads(state.read_text())["totalInvocations"] == PROCESSES * RUNS


def test_concurrent_runs_with_rotation(quick_tool, nexus_home):
    write_config(nexus_home, "[skills.log]\nmaxEntries = 20\n")
    hammer("quick")
    log, state = skill_files(nexus_home, "quick")
    lines = log.read_bytes().splitlines()
    assert 18 <= len(lines) <= 20  # pruned on write to 90% of the limit, then appended up to it
    entries = [json.loads(line) for line in lines]
    assert all(e["skill"] == "quick" for e in entries)
    # The newest lines are kept: a kept call k of one process comes with its RUNS - k later calls,
    # all newer, so k is above RUNS - len(lines). An old line surviving a prune would break this.
    assert min(int(e["args"][0]) for e in entries) > RUNS - len(lines)
    final = json.loads(state.read_text())
    assert final["totalInvocations"] == PROCESSES * RUNS
    assert final["logEntries"] == len(lines)


def test_sigkill_never_tears_state(workspace, bindir, nexus_home):
    make_tool(bindir, "quick", "#!/bin/sh\nexit 0\n")
    write_skill(workspace, "quick", meta={"tool": "quick"})
    subprocess.run(["nexus-run", "quick"], check=True, capture_output=True)
    log, state = skill_files(nexus_home, "quick")
    rng = random.Random(7)
    for _ in range(40):
        proc = subprocess.Popen(["nexus-run", "quick"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, 0.06))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        json.loads(state.read_text())  # always whole: the rename is atomic
    assert all(json.loads(line) for line in log.read_bytes().splitlines())
