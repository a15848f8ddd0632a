"""verify --all as one loop over a spawn helper of its own (gateway.spawner.Batch): what each verify command
leaves is ended, its output bounded, and what was reported is recorded, whatever happens to nexus meanwhile."""

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import make_tool, wait_for, write_skill

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper of orphans is Linux's")

# A daemon started the usual way: a subshell starts it in a session of its own and exits, so that it is an
# orphan outside the verify command's group; it writes its pid to the file named first.
DAEMON = "( setsid sh -c 'echo $$ > \"$0\"; exec sleep 300' \"{pid}\" & )"


def alive(pid):
    """True while `pid` runs: a process killed and not yet reaped (a zombie) does not."""
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text(errors="replace")
    except FileNotFoundError:
        return False


def pid_in(path):
    assert wait_for(lambda: path.exists() and path.read_text().strip()), f"{path} was never written"
    return int(path.read_text())


def state(nexus_home, name):
    return json.loads((nexus_home / f"state/nexus/skills/{name}/state.json").read_text())


@linux
def test_what_a_verify_command_left_running_ends_with_verify_all(script_runner, workspace, bindir, tmp_path):
    make_tool(bindir, "tool")
    pidfile = tmp_path / "daemon"
    write_skill(workspace, "leaves", meta={"tool": "tool", "verify": DAEMON.format(pid=pidfile) +
                                           f'; while [ ! -s "{pidfile}" ]; do sleep 0.05; done'})
    write_skill(workspace, "plain", meta={"tool": "tool", "verify": "true"})
    try:
        result = script_runner.run(["nexus", "skills", "verify", "--all", "--json"])
        assert result.returncode == 0, result.stderr
        assert {o["skill"]: o["ok"] for o in json.loads(result.stdout)}.items() >= {"leaves": True, "plain": True}.items()
        daemon = pid_in(pidfile)
        assert wait_for(lambda: not alive(daemon)), "a process a verify command left outlived verify --all"
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


@linux
def test_a_timed_out_verify_command_is_ended_with_what_left_its_group(script_runner, workspace, bindir, tmp_path):
    make_tool(bindir, "tool")
    pidfile = tmp_path / "daemon"
    write_skill(workspace, "hangs", meta={"tool": "tool", "verify": DAEMON.format(pid=pidfile) + "; sleep 300"})
    write_skill(workspace, "plain", meta={"tool": "tool", "verify": "true"})
    try:
        result = script_runner.run(["nexus", "skills", "verify", "--all", "--timeout", "1", "--json"])
        outcomes = {o["skill"]: o for o in json.loads(result.stdout)}
        assert result.returncode == 1 and outcomes["plain"]["ok"]
        assert outcomes["hangs"]["error"] == "verify command timed out after 1 s" and outcomes["hangs"]["exit"] is None
        daemon = pid_in(pidfile)
        assert wait_for(lambda: not alive(daemon)), "what a timed-out verify command started outlived it"
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_a_verify_commands_output_is_kept_bounded_and_hashed_as_before(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "tool")
    write_skill(workspace, "loud", meta={"tool": "tool", "verify": "head -c 3145728 /dev/zero; echo bad >&2; exit 3"})
    write_skill(workspace, "quiet", meta={"tool": "tool", "verify": "head -c 3145728 /dev/zero"})
    result = script_runner.run(["nexus", "skills", "verify", "--all", "--json"])
    outcomes = {o["skill"]: o for o in json.loads(result.stdout)}
    assert outcomes["loud"]["exit"] == 3 and outcomes["loud"]["error"] == "bad" and outcomes["quiet"]["ok"]
    kept = hashlib.sha256(b"\0" * (1 << 20)).hexdigest()  # gateway.verify.OUTPUT_LIMIT of it
    assert state(nexus_home, "quiet")["fingerprint"]["verifyOutputHash"] == kept


@linux
def test_nexus_killed_mid_batch_keeps_what_it_reported_and_leaves_no_verify_command(workspace, bindir, nexus_home,
                                                                                      tmp_path):
    make_tool(bindir, "tool")
    quick = [f"a-quick-{n}" for n in range(5)]
    for name in quick:
        write_skill(workspace, name, meta={"tool": "tool", "verify": "true"})
    pidfile = tmp_path / "slow"
    write_skill(workspace, "z-slow", meta={"tool": "tool", "verify": f'echo $$ > "{pidfile}"; exec sleep 300'})
    began = time.time()
    verifying = subprocess.Popen(["nexus", "skills", "verify", "--all"], stdout=subprocess.PIPE, text=True)
    slow = None
    try:
        reported = set()
        while not reported >= set(quick):  # each line is written once its outcome is recorded
            line = verifying.stdout.readline()
            assert line, "verify --all ended early"
            reported.add(line.split(":")[0])
        slow = pid_in(pidfile)
        verifying.kill()
        verifying.wait(30)
        for name in quick:
            kept = state(nexus_home, name)  # whole: a state file is replaced, never written in place
            assert kept["lastVerifyOk"] is True and kept["lastVerified"] >= time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(began))
        assert wait_for(lambda: not alive(slow)), "a verify command outlived the nexus that ran it"
    finally:
        verifying.kill()
        verifying.wait(30)
        if slow:
            with contextlib.suppress(OSError):
                os.kill(slow, signal.SIGKILL)


@linux
@pytest.mark.script_launch_mode("subprocess")
def test_with_its_spawn_helper_killed_verify_all_still_verifies_every_skill(script_runner, workspace, bindir, tmp_path):
    make_tool(bindir, "tool")
    once = tmp_path / "killed-once"
    # The first run kills its parent, the spawn helper, and is killed with it: verified again, it passes.
    write_skill(workspace, "a-kills", meta={"tool": "tool", "verify": f'[ -e "{once}" ] || {{ touch "{once}"; '
                                                                      'kill -9 $PPID; sleep 30; }'})
    for n in range(4):
        write_skill(workspace, f"b-after-{n}", meta={"tool": "tool", "verify": "true"})
    result = script_runner.run(["nexus", "skills", "verify", "--all", "--json"])
    assert result.returncode == 0, result.stderr
    outcomes = {o["skill"]: o["ok"] for o in json.loads(result.stdout)}
    assert once.exists() and all(outcomes[name] for name in ["a-kills", *(f"b-after-{n}" for n in range(4))])
