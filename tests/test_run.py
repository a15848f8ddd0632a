"""nexus-run / nexus skill run: the gateway, through the real console scripts in subprocess mode
(the gateway hands the tool its real file descriptors)."""

import json
import os
import signal
import subprocess
import time

import pytest
from helpers import make_tool, read_log, read_state, state_dir, write_config, write_skill

pytestmark = pytest.mark.script_launch_mode("subprocess")

ARGV_TOOL = """#!/usr/bin/env python3
import json, os, sys
with open(os.environ["ARGV_OUT"], "w", encoding="utf-8", errors="surrogateescape") as f:
    json.dump({"args": sys.argv[1:], "cwd": os.getcwd(), "env": {k: v for k, v in os.environ.items()
               if k.startswith(("NEXUS_", "MY_", "API_"))}}, f)
print("ran", *sys.argv[1:])
"""


@pytest.fixture
def counted_verify(tmp_path):
    """A verify command that counts its runs in a file."""
    marker = tmp_path / "verified"

    def runs():
        return len(marker.read_text().splitlines()) if marker.exists() else 0

    return f"echo x >> {marker}", runs


@pytest.fixture
def argv_out(tmp_path, monkeypatch):
    path = tmp_path / "argv.json"
    monkeypatch.setenv("ARGV_OUT", str(path))
    return path


def test_tool_runs_verifies_once_and_logs(script_runner, workspace, bindir, nexus_home, counted_verify):
    verify, verify_runs = counted_verify
    make_tool(bindir, "gog", "#!/bin/sh\necho \"gog says $*\"\necho warning >&2\n")
    write_skill(workspace, "gog", meta={"verify": verify})
    for _ in range(3):
        result = script_runner.run(["nexus", "skill", "run", "gog", "--", "gmail", "list"])
        assert result.returncode == 0, result.stderr
        assert result.stdout == "gog says gmail list\n"
        assert "warning" in result.stderr
    assert verify_runs() == 1
    log = read_log(nexus_home, "gog")
    assert len(log) == 3
    assert {(e["skill"], e["type"], e["exit"], e["tool"]) for e in log} == {("gog", "tool", 0, "gog")}
    assert log[0]["args"] == ["gmail", "list"] and isinstance(log[0]["ms"], int)
    state = read_state(nexus_home, "gog")
    assert state["configured"] is True and state["totalInvocations"] == 3 and state["successRate"] == 1
    assert state["fingerprint"]["skillSha256"]


def test_exit_code_passes_through_and_failure_reverifies(script_runner, workspace, bindir, nexus_home, counted_verify):
    verify, verify_runs = counted_verify
    make_tool(bindir, "flaky", '#!/bin/sh\necho "boom: $1" >&2\nexit "$1"\n')
    write_skill(workspace, "flaky", meta={"tool": "flaky", "verify": verify})
    assert script_runner.run(["nexus-run", "flaky", "--", "0"]).returncode == 0
    failed = script_runner.run(["nexus-run", "flaky", "--", "3"])
    assert failed.returncode == 3 and "boom: 3" in failed.stderr
    state = read_state(nexus_home, "flaky")
    assert state["configured"] is False and state["lastError"] == "boom: 3"
    assert read_log(nexus_home, "flaky")[-1]["error"] == "boom: 3"
    assert script_runner.run(["nexus-run", "flaky", "--", "0"]).returncode == 0
    assert verify_runs() == 2  # first use, and again after the failure
    assert read_state(nexus_home, "flaky")["successRate"] == pytest.approx(2 / 3, abs=1e-3)


def test_changed_skill_md_is_verified_again(script_runner, workspace, bindir, counted_verify):
    verify, verify_runs = counted_verify
    make_tool(bindir, "mytool")
    write_skill(workspace, "mytool", meta={"tool": "mytool", "verify": verify})
    script_runner.run(["nexus-run", "mytool"])
    script_runner.run(["nexus-run", "mytool"])
    write_skill(workspace, "mytool", description="Edited.", meta={"tool": "mytool", "verify": verify})
    script_runner.run(["nexus-run", "mytool"])
    assert verify_runs() == 2


def test_failed_verification_refuses_with_setup(script_runner, workspace, bindir, nexus_home, argv_out):
    make_tool(bindir, "gog", ARGV_TOOL)
    write_skill(workspace, "gog", meta={"verify": "echo 'token expired' >&2; exit 1"})
    result = script_runner.run(["nexus", "skill", "run", "gog", "--", "x"])
    assert result.returncode == 1
    assert "Skill 'gog' is not configured: token expired" in result.stderr
    assert not argv_out.exists()
    state = read_state(nexus_home, "gog")
    assert state["lastVerifyOk"] is False and state["configured"] is False
    assert read_log(nexus_home, "gog")[-1]["exit"] == 1
    assert read_log(nexus_home, "gog")[-1]["error"] == "Skill 'gog' is not configured: token expired"


def test_no_verify_skips_verification(script_runner, workspace, bindir, counted_verify):
    verify, verify_runs = counted_verify
    make_tool(bindir, "mytool")
    write_skill(workspace, "mytool", meta={"tool": "mytool", "verify": verify})
    assert script_runner.run(["nexus-run", "mytool", "--no-verify"]).returncode == 0
    assert verify_runs() == 0


def test_prompt_skill_prints_body_and_logs(script_runner, workspace, nexus_home):
    skill_dir = write_skill(workspace, "guide", body="Read {baseDir}/docs/setup.md first.\n")
    result = script_runner.run(["nexus", "skill", "run", "guide"])
    assert result.returncode == 0
    assert result.stdout == f"Read {skill_dir}/docs/setup.md first.\n"
    (entry,) = read_log(nexus_home, "guide")
    assert entry["type"] == "prompt" and entry["exit"] == 0 and "args" not in entry


def test_script_skill_runs_in_its_folder(script_runner, workspace, tmp_path, argv_out):
    skill_dir = write_skill(workspace, "hello", meta={"runner": "python3", "script": "scripts/hello.py"})
    (skill_dir / "scripts").mkdir()
    (skill_dir / "scripts" / "hello.py").write_text(ARGV_TOOL)
    caller = tmp_path / "caller"
    caller.mkdir()
    result = script_runner.run(["nexus-run", "hello", "--", "a", "b"], cwd=str(caller))
    assert result.returncode == 0, result.stderr
    seen = json.loads(argv_out.read_text())
    assert seen["args"] == ["a", "b"]
    assert seen["cwd"] == str(skill_dir)
    assert seen["env"]["NEXUS_CALLER_CWD"] == str(caller)


def test_the_gateway_lends_its_folder_to_a_script_only_for_the_spawn(script_runner, workspace, tmp_path):
    """A script skill starts in its folder without a fork (gateway.process._in_folder): the gateway's own
    folder is its caller's again once the script runs, as the script sees it in /proc."""
    skill_dir = write_skill(workspace, "where", meta={"runner": "sh", "script": "where.sh"})
    (skill_dir / "where.sh").write_text('i=0\nwhile [ "$(readlink /proc/$PPID/cwd)" != "$1" ] && [ $i -lt 50 ]; do\n'
                                        '  sleep 0.1; i=$((i+1))\ndone\nreadlink /proc/$PPID/cwd\npwd\n')
    caller = tmp_path / "caller"
    caller.mkdir()
    result = script_runner.run(["nexus-run", "where", "--", str(caller)], cwd=str(caller))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == [str(caller), str(skill_dir)]


def test_script_outside_its_folder_is_refused(script_runner, workspace, tmp_path):
    (tmp_path / "evil.py").write_text("print('escaped')\n")
    write_skill(workspace, "escape", meta={"runner": "python3", "script": "../../../evil.py"})
    result = script_runner.run(["nexus-run", "escape"])
    assert result.returncode == 1 and "escaped" not in result.stdout
    assert "Skill 'escape' is invalid" in result.stderr and "inside the skill folder" in result.stderr


def test_not_found_suggests(script_runner, workspace, bindir):
    make_tool(bindir, "tmux")
    result = script_runner.run(["nexus", "skill", "run", "tmx"])
    assert result.returncode == 1
    assert "Skill 'tmx' not found. Did you mean: tmux?" in result.stderr
    assert "nexus skills list" in result.stderr


@pytest.mark.parametrize("name", ["../etc", "a/b", "Upper", "..", "x/../../y", "-rf"])
def test_bad_names_never_become_paths(script_runner, workspace, nexus_home, tmp_path, name):
    write_skill(workspace, "real")
    result = script_runner.run(["nexus-run", "--", name] if name.startswith("-") else ["nexus-run", name])
    assert result.returncode in (1, 2)
    made = {p.relative_to(tmp_path) for p in tmp_path.rglob("*")}
    assert not any("etc" in str(p) or str(p).endswith(("/y", "/b", "Upper")) for p in made)
    skills_state = nexus_home / "state" / "nexus" / "skills"
    made_here = set(os.listdir(skills_state)) if skills_state.exists() else set()
    assert made_here <= {"manifest.json", "tmux", "video-frames", "disk-report"}  # bundled tools' state


def test_disabled_skill_refuses(script_runner, workspace, nexus_home):
    write_skill(workspace, "off-skill")
    write_config(nexus_home, "[skills.entries.off-skill]\nenabled = false\n")
    result = script_runner.run(["nexus-run", "off-skill"])
    assert result.returncode == 1
    assert "disabled" in result.stderr and "To enable it: nexus skill enable off-skill" in result.stderr


def test_missing_binary_shows_install(script_runner, workspace, nexus_home):
    meta = {"tool": "nosuchtool", "install": [
        {"kind": "brew", "formula": "nosuch"}, {"kind": "node", "package": "nosuch-cli"}]}
    write_skill(workspace, "absent", meta=meta)
    result = script_runner.run(["nexus-run", "absent", "--", "x"])
    assert result.returncode == 1
    assert "Tool 'nosuchtool' not found in PATH." in result.stderr
    assert "npm install -g nosuch-cli" in result.stderr
    assert read_log(nexus_home, "absent")[-1]["exit"] == 1


def test_env_injection_and_masking(script_runner, workspace, bindir, nexus_home, argv_out):
    make_tool(bindir, "api", ARGV_TOOL)
    write_skill(workspace, "api", meta={"tool": "api", "requires": {"env": ["API_TOKEN"]}, "primaryEnv": "API_TOKEN"})
    refused = script_runner.run(["nexus-run", "api"])
    assert refused.returncode == 1 and "API_TOKEN" in refused.stderr
    write_config(nexus_home, '[skills.entries.api]\napiKey = "s3cret-value"\nenv = { MY_EXTRA = "1" }\n')
    result = script_runner.run(["nexus-run", "api", "--", "--token=s3cret-value"])
    assert result.returncode == 0, result.stderr
    seen = json.loads(argv_out.read_text())
    assert seen["env"]["API_TOKEN"] == "s3cret-value" and seen["env"]["MY_EXTRA"] == "1"
    log_text = (state_dir(nexus_home, "api") / "usage.log").read_text()
    assert "s3cret-value" not in log_text and '"--token=***"' in log_text


def test_dry_run_runs_nothing(script_runner, workspace, bindir, nexus_home, argv_out, counted_verify):
    verify, verify_runs = counted_verify
    tool = make_tool(bindir, "api", ARGV_TOOL)
    write_skill(workspace, "api", meta={"tool": "api", "verify": verify})
    write_config(nexus_home, '[skills.entries.api.env]\nMY_EXTRA = "1"\n')
    result = script_runner.run(["nexus-run", "api", "--dry-run", "--", "a b", "c"])
    assert result.returncode == 0
    assert result.stdout.splitlines()[0] == f"{tool} 'a b' c"
    assert "MY_EXTRA" in result.stdout
    assert not argv_out.exists() and verify_runs() == 0 and read_log(nexus_home, "api") == []
    plan = json.loads(script_runner.run(["nexus-run", "api", "--dry-run", "--json", "--", "x"]).stdout)
    assert plan["argv"] == [str(tool), "x"] and "MY_EXTRA" in plan["env"]


def test_json_captures_output(script_runner, workspace, bindir):
    make_tool(bindir, "both", "#!/bin/sh\necho out\necho err >&2\nexit 4\n")
    write_skill(workspace, "both", meta={"tool": "both"})
    result = script_runner.run(["nexus", "skill", "run", "both", "--json"])
    assert result.returncode == 4
    record = json.loads(result.stdout)
    assert (record["skill"], record["type"], record["exit"]) == ("both", "tool", 4)
    assert record["stdout"] == "out\n" and record["stderr"] == "err\n" and isinstance(record["ms"], int)


@pytest.mark.parametrize("json_mode", [False, True])
def test_timeout_ends_the_tool_with_124(script_runner, workspace, bindir, nexus_home, json_mode):
    make_tool(bindir, "slow", "#!/bin/sh\nsleep 30\n")
    write_skill(workspace, "slow", meta={"tool": "slow"})
    started = time.monotonic()
    result = script_runner.run(["nexus-run", "slow", "--timeout", "0.5", *(["--json"] if json_mode else [])])
    assert result.returncode == 124
    assert time.monotonic() - started < 10
    entry = read_log(nexus_home, "slow")[-1]
    assert entry["exit"] == 124 and "timed out" in entry["error"]


def test_timeout_kills_a_tool_that_ignores_sigterm(script_runner, workspace, bindir):
    make_tool(bindir, "stubborn", "#!/bin/sh\ntrap '' TERM\nsleep 30 & wait\nsleep 30\n")
    write_skill(workspace, "stubborn", meta={"tool": "stubborn"})
    started = time.monotonic()
    result = script_runner.run(["nexus-run", "stubborn", "--timeout", "0.3"])
    assert result.returncode == 124 and time.monotonic() - started < 15


def test_killed_by_signal_gives_128_plus_n(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "suicide", "#!/bin/sh\nkill -TERM $$\n")
    write_skill(workspace, "suicide", meta={"tool": "suicide"})
    result = script_runner.run(["nexus-run", "suicide"])
    assert result.returncode == 128 + signal.SIGTERM
    assert read_log(nexus_home, "suicide")[-1]["exit"] == 128 + signal.SIGTERM


@pytest.mark.parametrize("to_group", [True, False], ids=["ctrl-c-to-the-group", "kill-int-to-the-gateway"])
def test_interrupt_reaches_the_tool_and_the_call_is_logged(workspace, bindir, nexus_home, tmp_path, to_group):
    """Ctrl-C at a terminal goes to the whole foreground process group; an agent cancelling a call
    sends SIGINT to the gateway alone. Either way the tool hears it and the call is logged."""
    started, heard = tmp_path / "started", tmp_path / "got-int"
    make_tool(bindir, "waiter", f"#!/bin/sh\ntrap 'echo int > {heard}; exit 130' INT\ntouch {started}\n"
                                "while :; do sleep 0.05; done\n")
    write_skill(workspace, "waiter", meta={"tool": "waiter"})
    proc = subprocess.Popen(["nexus-run", "waiter"], start_new_session=True, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60  # a liveness bound: a loaded machine may take seconds to start it
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert started.exists(), "the tool never started"
        os.killpg(proc.pid, signal.SIGINT) if to_group else proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
    finally:  # a failed test leaves no tool looping behind it
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert heard.read_text() == "int\n"
    assert read_log(nexus_home, "waiter")[-1]["exit"] == 130


WEIRD_ARGS = ["two words", "'single'", '"double"', "new\nline", "$(touch /tmp/nexus-pwned)", "*", "~",
              "ünïcødé ✓", "", "--flag=value", "-x", "a;b|c&d", "`id`"]


def test_arguments_reach_the_tool_byte_for_byte(script_runner, workspace, bindir, argv_out, tmp_path):
    make_tool(bindir, "echoargs", ARGV_TOOL)
    write_skill(workspace, "echoargs", meta={"tool": "echoargs"})
    result = script_runner.run(["nexus-run", "echoargs", "--", *WEIRD_ARGS], cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert json.loads(argv_out.read_text())["args"] == WEIRD_ARGS
    assert not os.path.exists("/tmp/nexus-pwned")


def test_binary_stdout_and_stdin_pass_through(script_runner, workspace, bindir, tmp_path):
    blob = bytes(range(256)) * 64
    (tmp_path / "blob").write_bytes(blob)
    make_tool(bindir, "catfile", f"#!/bin/sh\ncat {tmp_path / 'blob'}\n")
    make_tool(bindir, "upper", "#!/bin/sh\ntr a-z A-Z\n")
    write_skill(workspace, "catfile", meta={"tool": "catfile"})
    write_skill(workspace, "upper", meta={"tool": "upper"})
    result = script_runner.run(["nexus-run", "catfile"], universal_newlines=False)
    assert result.stdout == blob
    import io

    piped = script_runner.run(["nexus-run", "upper"], stdin=io.StringIO("hello gateway\n"))
    assert piped.stdout == "HELLO GATEWAY\n"


def test_no_log_still_counts(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "quiet")
    write_skill(workspace, "quiet", meta={"tool": "quiet"})
    script_runner.run(["nexus-run", "quiet", "--no-log"])
    assert read_log(nexus_home, "quiet") == []
    assert read_state(nexus_home, "quiet")["totalInvocations"] == 1


def test_session_is_recorded(script_runner, workspace, bindir, nexus_home, monkeypatch):
    make_tool(bindir, "quiet")
    write_skill(workspace, "quiet", meta={"tool": "quiet"})
    monkeypatch.setenv("NEXUS_SESSION_ID", "agent-42")
    script_runner.run(["nexus-run", "quiet"])
    assert read_log(nexus_home, "quiet")[-1]["session"] == "agent-42"


def test_private_modes(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "quiet")
    write_skill(workspace, "quiet", meta={"tool": "quiet"})
    script_runner.run(["nexus-run", "quiet"])
    folder = state_dir(nexus_home, "quiet")
    for path in (nexus_home / "state", folder.parent, folder):
        assert path.stat().st_mode & 0o777 == 0o700, path
    for name in ("state.json", "usage.log"):
        assert (folder / name).stat().st_mode & 0o777 == 0o600, name
    assert (folder.parent / "manifest.json").stat().st_mode & 0o777 == 0o600


def test_corrupt_state_is_reported_and_rebuilt(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "quiet")
    write_skill(workspace, "quiet", meta={"tool": "quiet"})
    script_runner.run(["nexus-run", "quiet"])
    state_file = state_dir(nexus_home, "quiet") / "state.json"
    state_file.write_text('{"configured": tr')
    result = script_runner.run(["nexus-run", "quiet"])
    assert result.returncode == 0
    assert str(state_file) in result.stderr and "starting from defaults" in result.stderr
    assert json.loads(state_file.read_text())["totalInvocations"] == 1


def test_usage_errors_exit_2(script_runner):
    for argv in (["nexus-run"], ["nexus-run", "x", "--bogus"], ["nexus-run", "x", "--timeout", "soon"]):
        result = script_runner.run(argv)
        assert result.returncode == 2, argv
        assert "usage: nexus-run" in result.stderr


def test_a_background_child_holding_stderr_does_not_hold_the_gateway(script_runner, workspace, bindir, tmp_path):
    pidfile = tmp_path / "pid"
    make_tool(bindir, "spawner", f'#!/bin/sh\necho started >&2\nsleep 600 >/dev/null &\necho $! > "{pidfile}"\nexit 0\n')
    write_skill(workspace, "spawner", meta={"tool": "spawner"})  # its child keeps our stderr for 10 minutes
    started = time.monotonic()
    try:
        result = script_runner.run(["nexus-run", "spawner"])
        assert result.returncode == 0 and "started" in result.stderr
        assert time.monotonic() - started < 300  # held by the child, it would take 600 s
    finally:
        os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_a_file_the_system_cannot_run_gives_126(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "noshebang", "echo hi\n")
    write_skill(workspace, "noshebang", meta={"tool": "noshebang"})
    result = script_runner.run(["nexus-run", "noshebang"])
    assert result.returncode == 126
    assert "cannot run" in result.stderr and "Traceback" not in result.stderr
    assert read_log(nexus_home, "noshebang")[-1]["exit"] == 126


def test_a_log_that_cannot_be_written_does_not_hide_the_tools_exit(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "three", "#!/bin/sh\nexit 3\n")
    write_skill(workspace, "three", meta={"tool": "three"})
    script_runner.run(["nexus-run", "three"])
    log = state_dir(nexus_home, "three") / "usage.log"
    log.unlink()
    log.mkdir()  # appending to it now fails
    result = script_runner.run(["nexus-run", "three"])
    assert result.returncode == 3
    assert "could not record the call" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("value", ["inf", "nan", "1e300", "0", "-1"])
def test_timeout_must_be_a_sane_number(script_runner, value):
    result = script_runner.run(["nexus-run", "x", "--timeout", value])
    assert result.returncode == 2 and "--timeout needs a number above 0" in result.stderr


def test_a_skill_md_that_gains_a_verify_command_is_verified(script_runner, workspace, bindir, tmp_path):
    make_tool(bindir, "mytool")
    write_skill(workspace, "mytool", meta={"tool": "mytool"})
    assert script_runner.run(["nexus-run", "mytool"]).returncode == 0
    write_skill(workspace, "mytool", meta={"tool": "mytool", "verify": "echo 'not set up' >&2; exit 1"})
    result = script_runner.run(["nexus-run", "mytool"])
    assert result.returncode == 1 and "not set up" in result.stderr


def test_dry_run_of_a_refused_skill_logs_nothing(script_runner, workspace, nexus_home):
    write_skill(workspace, "absent", meta={"tool": "nosuchtool"})
    result = script_runner.run(["nexus-run", "absent", "--dry-run"])
    assert result.returncode == 1 and "not found in PATH" in result.stderr
    assert read_log(nexus_home, "absent") == []


def test_a_skill_written_into_an_existing_folder_is_found(script_runner, workspace, bindir):
    (workspace / "later").mkdir()
    assert script_runner.run(["nexus", "skills", "list", "--json"]).returncode == 0
    assert script_runner.run(["nexus-manifest", "check"]).returncode == 0
    write_skill(workspace, "later", body="Later.\n")
    assert script_runner.run(["nexus-manifest", "check"]).returncode == 1
    result = script_runner.run(["nexus", "skill", "run", "later"])
    assert result.returncode == 0 and result.stdout == "Later.\n"


def test_messages_name_the_command_the_user_typed(script_runner, workspace):
    assert script_runner.run(["nexus", "skill", "run", "nope"]).stderr.startswith("nexus: Skill 'nope' not found.")
    assert script_runner.run(["nexus-run", "nope"]).stderr.startswith("nexus-run: Skill 'nope' not found.")


@pytest.mark.script_launch_mode("subprocess")
def test_the_agents_temperature_is_logged_when_set(script_runner, workspace, nexus_home, monkeypatch):
    from helpers import read_log

    write_skill(workspace, "hot", meta={"tool": "true"})
    monkeypatch.setenv("NEXUS_TEMPERATURE", "0.7")
    monkeypatch.setenv("NEXUS_MODEL", "m1")
    assert script_runner.run(["nexus", "skill", "run", "hot"]).returncode == 0
    monkeypatch.setenv("NEXUS_TEMPERATURE", "warm")  # not a number: left out, never a wrong figure
    assert script_runner.run(["nexus", "skill", "run", "hot"]).returncode == 0
    first, second = read_log(nexus_home, "hot")
    assert first["temperature"] == 0.7 and first["model"] == "m1" and "temperature" not in second


@pytest.mark.script_launch_mode("subprocess")
def test_a_timeout_says_so_on_stderr(script_runner, workspace, bindir):
    make_tool(bindir, "slow", "#!/bin/sh\nsleep 30\n")
    write_skill(workspace, "slow", meta={"tool": "slow"})
    ran = script_runner.run(["nexus", "skill", "run", "slow", "--no-verify", "--timeout", "1"])
    assert ran.returncode == 124 and "'slow' was stopped after --timeout 1 s (exit 124)" in ran.stderr


def test_the_gateway_leaves_at_once_with_all_its_output_written(script_runner, workspace, bindir):
    """Run as a script, the gateway skips Python's teardown (cli.command.leave): what it printed itself, a
    prompt's text and a --json capture larger than any buffer, still arrives whole, with the tool's status."""
    body = "".join(f"line {n} of the prompt\n" for n in range(8_000))
    write_skill(workspace, "long-prompt", body=body)
    make_tool(bindir, "chatty", "#!/bin/sh\nseq 1 50000\nexit 5\n")
    write_skill(workspace, "chatty", meta={"tool": "chatty"})
    for gateway in (["nexus", "skill", "run"], ["nexus-run"]):
        prompt = script_runner.run([*gateway, "long-prompt"])
        assert prompt.returncode == 0 and prompt.stdout.count("of the prompt\n") == 8_000, prompt.stderr
        captured = script_runner.run([*gateway, "chatty", "--json"])
        assert captured.returncode == 5, captured.stderr
        assert json.loads(captured.stdout)["stdout"].split() == [str(n) for n in range(1, 50_001)]
