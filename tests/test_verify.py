"""nexus-verify and the porcelain's verify and show: outcomes recorded, nothing run behind your back."""

import contextlib
import io
import json

import pytest
from helpers import by_name, jsonl, make_tool, write_skill


@pytest.fixture
def marker(tmp_path):
    return tmp_path / "verify-ran"


@pytest.fixture
def gog(workspace, bindir, marker):
    make_tool(bindir, "gog", "#!/bin/sh\necho labels: INBOX\n")
    write_skill(workspace, "gog", description="Google Workspace CLI.",
                meta={"emoji": "📧", "verify": f"touch {marker}; gog labels", "requires": {"bins": ["gog"]}},
                body="# gog\n\nUse it.\n")


def test_verify_runs_and_records(script_runner, gog, marker, nexus_home):
    result = script_runner.run(["nexus-verify", "gog"])
    assert result.returncode == 0, result.stderr
    (outcome,) = jsonl(result.stdout)
    assert outcome["skill"] == "gog" and outcome["ok"] is True and outcome["exit"] == 0
    assert marker.exists()
    state = json.loads((nexus_home / "state/nexus/skills/gog/state.json").read_text())
    assert state["configured"] and state["lastVerifyOk"] and state["configuredAt"] == state["lastVerified"]
    assert len(state["fingerprint"]["verifyOutputHash"]) == 64


def test_failed_verify_marks_needs_setup(script_runner, workspace, bindir):
    make_tool(bindir, "eve", "#!/bin/sh\necho 'not logged in' >&2\nexit 2\n")
    write_skill(workspace, "eve", meta={"tool": "eve", "verify": "eve whoami"})
    result = script_runner.run(["nexus-verify", "eve"])
    assert result.returncode == 1
    (outcome,) = jsonl(result.stdout)
    assert outcome["ok"] is False and outcome["exit"] == 2 and outcome["error"] == "not logged in"
    listed = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    assert listed["eve"]["status"] == "needs-setup" and listed["eve"]["verified"] is False


def test_verify_without_command_and_prompt_skill(script_runner, workspace, bindir):
    make_tool(bindir, "plain")
    write_skill(workspace, "plain", meta={"tool": "plain"})
    write_skill(workspace, "notes")
    outcomes = by_name([{**o, "name": o["skill"]} for o in jsonl(script_runner.run(["nexus-verify", "plain", "notes"]).stdout)])
    assert outcomes["plain"]["ok"] and outcomes["plain"]["verify"] is None
    assert outcomes["notes"]["ok"] and outcomes["notes"]["configured"]


def test_verify_reports_missing_env_without_running(script_runner, workspace, bindir, marker):
    make_tool(bindir, "brave")
    write_skill(workspace, "brave", meta={"tool": "brave", "verify": f"touch {marker}", "requires": {"env": ["BRAVE_API_KEY"]}})
    result = script_runner.run(["nexus", "skill", "verify", "brave"])
    assert result.returncode == 1
    assert "BRAVE_API_KEY" in result.stdout and "export BRAVE_API_KEY" in result.stdout
    assert not marker.exists()


def test_verify_timeout(script_runner, workspace, bindir):
    make_tool(bindir, "hang")
    write_skill(workspace, "hang", meta={"tool": "hang", "verify": "sleep 20"})
    result = script_runner.run(["nexus-verify", "--timeout", "0.5", "hang"])
    assert result.returncode == 1
    assert "timed out after 0.5 s" in jsonl(result.stdout)[0]["error"]


def test_verify_all_runs_jobs_at_once_and_keeps_each_timeout(script_runner, workspace, bindir, tmp_path):
    make_tool(bindir, "meet")
    met = tmp_path / "met"
    met.mkdir()
    # Each verify waits (10 s at most) until all three have started: they pass only when run at once.
    barrier = (f"touch {met}/$$; i=0; while [ $(ls {met} | wc -l) -lt 3 ] && [ $i -lt 100 ]; do sleep 0.1; "
               f"i=$((i+1)); done; [ $(ls {met} | wc -l) -ge 3 ]")
    for name in ("c-meet", "a-meet", "b-meet"):
        write_skill(workspace, name, meta={"tool": "meet", "verify": barrier})
    result = script_runner.run(["nexus", "skills", "verify", "--all", "--jobs", "3", "--json"])
    outcomes = json.loads(result.stdout)
    assert [o["skill"] for o in outcomes if o["skill"].endswith("-meet")] == ["a-meet", "b-meet", "c-meet"]
    assert all(o["ok"] for o in outcomes if o["skill"].endswith("-meet")), outcomes

    for name in ("c-meet", "a-meet", "b-meet"):
        write_skill(workspace, name, meta={"tool": "meet", "verify": "true"})
    write_skill(workspace, "d-hang", meta={"tool": "meet", "verify": "sleep 20 & sleep 20"})
    result = script_runner.run(["nexus", "skills", "verify", "--all", "--jobs", "4", "--timeout", "1", "--json"])
    ok = {o["skill"]: (o["ok"], o["error"]) for o in json.loads(result.stdout) if not o.get("skipped")}
    assert ok["a-meet"] == ok["b-meet"] == ok["c-meet"] == (True, None)
    assert ok["d-hang"] == (False, "verify command timed out after 1 s") and result.returncode == 1


@pytest.mark.parametrize("jobs", ["0", "x", "257", "-1"])
def test_jobs_must_be_a_sane_number(script_runner, jobs):
    for argv in (["nexus", "skills", "verify", "--all", "--jobs", jobs], ["nexus-verify", "--all", "--jobs", jobs]):
        result = script_runner.run(argv)
        assert result.returncode == 2 and "--jobs" in result.stderr


def test_static_checks_run_nothing(script_runner, gog, marker, workspace):
    write_skill(workspace, "needs-key", meta={"requires": {"env": ["NOPE_KEY"]}})
    entries = script_runner.run(["nexus-discover"]).stdout
    result = script_runner.run(["nexus-verify", "--static"], stdin=io.StringIO(entries))
    assert result.returncode == 0
    checked = by_name(jsonl(result.stdout))
    assert checked["gog"]["status"] == "ready" and checked["gog"]["verified"] is False
    assert checked["needs-key"]["status"] == "needs-setup"
    assert checked["needs-key"]["missing"]["env"] == ["NOPE_KEY"]
    assert not marker.exists()


def test_static_rejects_bad_input(script_runner):
    result = script_runner.run(["nexus-verify", "--static"], stdin=io.StringIO('{"name": "a"}\nnot json\n'))
    assert result.returncode == 2 and "stdin:2" in result.stderr


def test_listing_and_showing_never_verify(script_runner, gog, marker):
    for argv in (["nexus", "skills", "list"], ["nexus", "skills", "refresh"], ["nexus", "skill", "show", "gog"],
                 ["nexus-discover"], ["nexus", "skills", "list", "--json"]):
        assert script_runner.run(argv).returncode == 0, argv
    assert not marker.exists()


def test_skill_verify_trusts_until_forced(script_runner, gog, marker):
    assert script_runner.run(["nexus", "skill", "verify", "gog"]).returncode == 0
    marker.unlink()
    again = script_runner.run(["nexus", "skill", "verify", "gog"])
    assert "is verified" in again.stdout and not marker.exists()
    forced = script_runner.run(["nexus", "skill", "verify", "gog", "--force", "--json"])
    assert json.loads(forced.stdout)["ok"] is True and marker.exists()


def test_skills_verify_all_stale(script_runner, gog, workspace, bindir, marker):
    make_tool(bindir, "other")
    write_skill(workspace, "other", meta={"tool": "other"})
    first = json.loads(script_runner.run(["nexus", "skills", "verify", "--all", "--json"]).stdout)
    assert {o["skill"] for o in first} >= {"gog", "other"}
    marker.unlink()
    stale = script_runner.run(["nexus", "skills", "verify", "--all", "--stale", "24", "--json"])
    assert stale.returncode == 0 and "gog" not in {o["skill"] for o in json.loads(stale.stdout)}
    assert not marker.exists()
    bad = script_runner.run(["nexus", "skills", "verify", "--all", "--stale", "-1"])
    assert bad.returncode == 2


def test_show_human_json_and_prompt_only(script_runner, gog):
    human = script_runner.run(["nexus", "skill", "show", "gog"])
    assert human.returncode == 0
    for text in ("GOG - Google Workspace CLI.", "Binary: gog ok", "PROMPT", "# gog", "SETUP", "nexus skill verify gog"):
        assert text in human.stdout, text
    assert "📧" not in human.stdout and "\033[" not in human.stdout  # not a terminal
    shown = json.loads(script_runner.run(["nexus", "skill", "show", "gog", "--json"]).stdout)
    assert shown["status"] == "ready" and shown["prompt"] == "# gog\n\nUse it.\n" and shown["tool"] == "gog"
    assert script_runner.run(["nexus", "skill", "show", "gog", "--prompt-only"]).stdout == "# gog\n\nUse it.\n"
    script_runner.run(["nexus-run", "gog"])
    after = script_runner.run(["nexus", "skill", "show", "gog"]).stdout
    assert "Total invocations: 1" in after and "SETUP" not in after


def test_show_unknown_skill(script_runner, gog):
    result = script_runner.run(["nexus", "skill", "show", "gogg"])
    assert result.returncode == 1 and "Did you mean: gog?" in result.stderr


def test_skill_verify_says_when_there_is_nothing_to_run(script_runner, workspace, bindir):
    make_tool(bindir, "plain")
    write_skill(workspace, "plain", meta={"tool": "plain"})
    write_skill(workspace, "notes")
    assert "has no verification command" in script_runner.run(["nexus", "skill", "verify", "plain"]).stdout
    for force in ([], ["--force"]):
        assert "is ready: a prompt skill needs no verification" in script_runner.run(["nexus", "skill", "verify", "notes", *force]).stdout


def test_verify_masks_secrets_in_its_error(script_runner, workspace, bindir, nexus_home):
    from helpers import write_config

    make_tool(bindir, "keyed")
    write_skill(workspace, "keyed", meta={"tool": "keyed", "primaryEnv": "SEC_KEY", "requires": {"env": ["SEC_KEY"]},
                                          "verify": 'echo "bad key $SEC_KEY" >&2; exit 1'})
    write_config(nexus_home, '[skills.entries.keyed]\napiKey = "s3cr3t-value"\n')
    result = script_runner.run(["nexus-verify", "keyed"])
    assert result.returncode == 1 and jsonl(result.stdout)[0]["error"] == "bad key ***"
    assert "s3cr3t" not in (nexus_home / "state/nexus/skills/keyed/state.json").read_text()


def test_verify_is_not_held_open_by_a_background_process(script_runner, workspace, bindir, tmp_path):
    import os
    import signal
    import time

    pidfile = tmp_path / "pid"
    make_tool(bindir, "quick")
    write_skill(workspace, "quick", meta={"tool": "quick", "verify": f'sleep 600 & echo $! > "{pidfile}"; '
                                                                    'echo nope >&2; exit 1'})
    started = time.monotonic()
    try:
        (outcome,) = jsonl(script_runner.run(["nexus-verify", "quick"]).stdout)
        assert outcome["exit"] == 1 and outcome["error"] == "nope"
        assert time.monotonic() - started < 300  # held open by its background process, it would take 600 s
    finally:
        with contextlib.suppress(ProcessLookupError, FileNotFoundError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_static_survives_odd_shapes(script_runner):
    entries = ('{"name": "odd", "type": "tool", "tool": "sh", "requires": null, "os": "linux, darwin",'
               ' "primaryEnv": ["X"]}\n')
    result = script_runner.run(["nexus-verify", "--static"], stdin=io.StringIO(entries))
    assert result.returncode == 0, result.stderr
    (checked,) = jsonl(result.stdout)
    assert checked["missing"] == {"bins": [], "anyBins": [], "env": [], "config": []}
    bad = script_runner.run(["nexus-verify", "--static"], stdin=io.StringIO('{"name": "../x"}\n'))
    assert bad.returncode == 2 and "stdin:1" in bad.stderr


def test_closed_stdin_is_a_clear_error():
    import subprocess

    for command in ("nexus-manifest write", "nexus-verify --static", "nexus-stats --stdin"):
        result = subprocess.run(["sh", "-c", f"{command} 0<&-"], capture_output=True, text=True)
        assert result.returncode == 2, command
        assert "stdin is a terminal or closed" in result.stderr and "Traceback" not in result.stderr
