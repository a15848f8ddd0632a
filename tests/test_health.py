"""Health over time: a changed binary is verified again, a changed verify output is drift, recent failures
of a skill that used to work make it degraded; p50 and p95 durations. Through the real scripts."""

import datetime
import json
import os
import subprocess
import time

import pytest
from helpers import by_name, make_tool, read_state, state_dir, write_log, write_skill

pytestmark = pytest.mark.script_launch_mode("subprocess")


def test_a_changed_binary_is_verified_again_before_it_is_trusted(script_runner, workspace, bindir, tmp_path, nexus_home):
    marker = tmp_path / "verified"
    make_tool(bindir, "gog", "#!/bin/sh\necho v1\n")
    write_skill(workspace, "gog", meta={"verify": f"echo x >> {marker}; gog"})
    assert script_runner.run(["nexus", "skill", "run", "gog"]).returncode == 0
    assert script_runner.run(["nexus", "skill", "run", "gog"]).returncode == 0
    assert len(marker.read_text().splitlines()) == 1  # trusted
    binary = read_state(nexus_home, "gog")["fingerprint"]["binary"]
    assert binary["path"] == str(bindir / "gog") and len(binary["sha256"]) == 64
    time.sleep(0.01)
    make_tool(bindir, "gog", "#!/bin/sh\necho v2, upgraded\n")  # replaced: another size, mtime
    ran = script_runner.run(["nexus", "skill", "run", "gog"])
    assert ran.returncode == 0 and "gog changed since it was verified" in ran.stderr
    assert len(marker.read_text().splitlines()) == 2
    assert "its verify command prints something else" in ran.stderr  # v1 -> v2: the output changed too


def test_drift_is_said_everywhere_and_kept_in_a_history(script_runner, workspace, bindir, tmp_path, nexus_home):
    answer = tmp_path / "answer"
    answer.write_text("labels: INBOX\n")
    make_tool(bindir, "mail")
    write_skill(workspace, "mail", meta={"tool": "mail", "verify": f"cat {answer}"})
    assert script_runner.run(["nexus", "skill", "verify", "mail"]).returncode == 0
    answer.write_text("error: token expired; showing cached labels\n")
    forced = script_runner.run(["nexus", "skills", "verify", "--all", "--json"])
    (outcome,) = [o for o in json.loads(forced.stdout) if o["skill"] == "mail"]
    assert outcome["ok"] is True and outcome["drift"]["was"] != outcome["drift"]["now"]
    state = read_state(nexus_home, "mail")
    assert [v["ok"] for v in state["verifications"]] == [True, True] and state["drift"]["since"]
    shown = script_runner.run(["nexus", "skill", "show", "mail"]).stdout
    assert "Drifted: its verify command prints something else since" in shown
    check = script_runner.run(["nexus", "status", "--check"])
    assert check.returncode == 1 and check.stdout.startswith("mail: drifted: ")
    human = script_runner.run(["nexus", "skills", "verify", "--all"]).stdout
    assert "mail: verified" in human and "drifted" not in human  # the same output again: drift over
    assert script_runner.run(["nexus", "status", "--check"]).returncode == 0


def seed_history(nexus_home, name, calls_per_day=3, days=20):
    """A state that says the skill used to work: calls, all of them successful, over past days."""
    today = datetime.date.today()
    path = state_dir(nexus_home, name) / "state.json"
    state = json.loads(path.read_text()) if path.exists() else {"version": 1}
    state["days"] = {(today - datetime.timedelta(days=d)).isoformat(): [calls_per_day, 0] for d in range(1, days + 1)}
    state["recent"] = [0] * 10
    path.write_text(json.dumps(state))


def test_recent_failures_of_a_skill_that_used_to_work_make_it_degraded(script_runner, workspace, bindir, tmp_path,
                                                                       nexus_home):
    broken = tmp_path / "broken"
    make_tool(bindir, "feed", f"#!/bin/sh\nif [ -e {broken} ]; then echo 'upstream 503' >&2; exit 1; fi\n")
    write_skill(workspace, "feed", meta={"tool": "feed"})
    assert script_runner.run(["nexus", "skill", "run", "feed"]).returncode == 0
    seed_history(nexus_home, "feed")
    broken.touch()
    for n in range(5):
        assert script_runner.run(["nexus", "skill", "run", "feed", "--no-verify"]).returncode == 1
        records = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
        assert records["feed"]["degraded"] is (n == 4), n  # at the fifth failure of the last ten
    assert records["feed"]["status"] == "ready" and records["feed"]["degradedReason"] == "failing 5 of the last 10 calls"
    listing = script_runner.run(["nexus", "skills", "list"]).stdout
    assert "FAILING (most of its recent calls fail; not offered to agents) - 1 skill\n   feed" in listing
    assert "[tool: feed] (failing 5 of the last 10 calls)" in listing
    status = script_runner.run(["nexus", "status"]).stdout
    assert " ready, 1 failing, " in status and "degraded" not in status
    check = script_runner.run(["nexus", "status", "--check", "--json"])
    assert check.returncode == 1 and json.loads(check.stdout)["unhealthy"][0][:2] == ["feed", "degraded"]
    shown = script_runner.run(["nexus", "skill", "show", "feed"]).stdout
    assert "Status:     Failing 5 of the last 10 calls\n" in shown and "Offered:    to no agent while it fails" in shown
    assert "Make this succeed" not in shown and "2. Once fixed: nexus skill verify feed" in shown


def test_a_skill_that_never_worked_is_failing_too_and_a_failed_reverification_is_degraded(
        script_runner, workspace, bindir, tmp_path, nexus_home):
    make_tool(bindir, "never", "#!/bin/sh\nexit 1\n")
    write_skill(workspace, "never", meta={"tool": "never"})
    for _ in range(6):
        script_runner.run(["nexus", "skill", "run", "never", "--no-verify"])
    never = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))["never"]
    assert never["degraded"] is True and never["degradedReason"] == "failing 6 of the last 6 calls"
    flag = tmp_path / "logged-out"
    make_tool(bindir, "acct")
    write_skill(workspace, "acct", meta={"tool": "acct", "verify": f"test ! -e {flag}"})
    assert script_runner.run(["nexus", "skill", "verify", "acct"]).returncode == 0
    flag.touch()
    assert script_runner.run(["nexus", "skill", "verify", "acct", "--force"]).returncode == 1
    acct = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))["acct"]
    assert acct["degraded"] is True and "its verification failed" in acct["degradedReason"]
    assert acct["status"] == "needs-setup"  # counted and listed all the same: status and --check agree
    counts = json.loads(script_runner.run(["nexus", "status", "--json"]).stdout)
    assert counts["degraded"] == 2 and counts["failing"] == 1  # never fails; acct needs setup again
    check = script_runner.run(["nexus", "status", "--check"])
    assert check.returncode == 1 and check.stdout.startswith("acct: degraded: its verification failed")


def test_a_degraded_crystallized_skill_names_the_skills_to_fall_back_on(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "step")
    write_skill(workspace, "step", meta={"tool": "step"})
    assert subprocess.run(["nexus", "skill", "run", "step", "--", "go"], env={**os.environ, "NEXUS_SESSION_ID": "s1"},
                          capture_output=True).returncode == 0
    assert script_runner.run(["nexus", "session", "crystallize", "s1", "--name", "replay"]).returncode == 0
    assert script_runner.run(["nexus", "skill", "run", "replay"]).returncode == 0
    seed_history(nexus_home, "replay")
    (bindir / "step").write_text("#!/bin/sh\nexit 1\n")
    for _ in range(5):
        script_runner.run(["nexus", "skill", "run", "replay", "--no-verify"])
    shown = script_runner.run(["nexus", "skill", "show", "replay"]).stdout
    assert "Status:     Failing 5 of the last 10 calls" in shown and "Fall back on the skills it replays: step" in shown


def test_p50_and_p95_come_with_the_average(script_runner, workspace, nexus_home):
    write_skill(workspace, "timed", meta={"tool": "sh"})
    now = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
    durations = list(range(1, 101)) + [5000] * 10  # p50 56, p95 5000 (exact), average 504
    write_log(nexus_home, "timed", [{"ts": now, "skill": "timed", "type": "tool", "ms": ms, "exit": 0} for ms in durations])
    report = json.loads(script_runner.run(["nexus", "skill", "stats", "--json"]).stdout)
    (timed,) = report["skills"]
    assert abs(timed["p50Ms"] - 56) <= 1 and abs(timed["p95Ms"] - 5000) <= 50  # within 1%: a sketch
    assert timed["avgDurationMs"] == round(sum(durations) / len(durations))
    human = script_runner.run(["nexus", "skill", "stats"]).stdout
    assert "p50" in human and "p95" in human and "5.0s" in human


def failing_skill(script_runner, workspace, bindir, tmp_path, name="feed", fails=6):
    """A tool skill whose last `fails` calls failed; the file whose presence breaks it."""
    broken = tmp_path / "broken"
    make_tool(bindir, name, f"#!/bin/sh\nif [ -e {broken} ]; then echo 'upstream 503' >&2; exit 1; fi\necho fine\n")
    write_skill(workspace, name, meta={"tool": name})
    broken.touch()
    for _ in range(fails):
        assert script_runner.run(["nexus", "skill", "run", name, "--no-verify"]).returncode == 1
    return broken


def test_a_failing_skill_is_offered_to_no_agent_and_named_everywhere(script_runner, workspace, bindir, tmp_path):
    failing_skill(script_runner, workspace, bindir, tmp_path)
    write_skill(workspace, "fine", meta={"tool": "sh"})
    for argv in (["nexus", "skills", "prompt"], ["nexus", "skills", "agents-md"]):
        text = script_runner.run(argv).stdout
        assert "fine" in text and "feed" not in text, argv
    check = script_runner.run(["nexus", "status", "--check"])
    assert check.returncode == 1 and "feed: degraded: failing 6 of the last 6 calls\n" in check.stdout


def test_a_passing_verify_brings_a_failing_skill_back_but_the_gateways_first_run_check_does_not(
        script_runner, workspace, bindir, tmp_path, nexus_home):
    failing_skill(script_runner, workspace, bindir, tmp_path)
    assert script_runner.run(["nexus", "skill", "run", "feed"]).returncode == 1  # verifies first: passes, runs, fails
    assert read_state(nexus_home, "feed")["recent"][-7:] == [1] * 7 and "recovered" not in read_state(nexus_home, "feed")
    assert script_runner.run(["nexus", "skill", "verify", "feed", "--force"]).returncode == 0
    state = read_state(nexus_home, "feed")
    assert state["recent"] == [] and state["recovered"]["by"] == "verify"
    records = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    assert records["feed"]["degraded"] is False
    assert "Recovered:  came back at " in script_runner.run(["nexus", "skill", "show", "feed"]).stdout


def test_a_persons_successful_run_brings_a_failing_skill_back_an_agents_does_not(script_runner, workspace, bindir,
                                                                                 tmp_path, nexus_home):
    import pty

    broken = failing_skill(script_runner, workspace, bindir, tmp_path)
    broken.unlink()
    assert script_runner.run(["nexus", "skill", "run", "feed", "--no-verify"]).returncode == 0  # no terminal: an agent
    assert read_state(nexus_home, "feed")["recent"] == [1] * 6 + [0]
    leader, follower = pty.openpty()  # a person: stdin and stderr a terminal
    ran = subprocess.run(["nexus", "skill", "run", "feed", "--no-verify"], stdin=follower, stderr=follower,
                         stdout=subprocess.PIPE, timeout=60)
    os.close(follower)
    os.close(leader)
    assert ran.returncode == 0 and b"fine" in ran.stdout
    state = read_state(nexus_home, "feed")
    assert state["recent"] == [0] and state["recovered"]["by"] == "run"


def test_failures_age_out_of_the_window(script_runner, workspace, bindir, tmp_path, nexus_home):
    failing_skill(script_runner, workspace, bindir, tmp_path)
    shown = script_runner.run(["nexus", "skill", "show", "feed"]).stdout
    today = datetime.date.today()
    assert f"by itself on {(today + datetime.timedelta(days=31)).isoformat()}" in shown
    path = state_dir(nexus_home, "feed") / "state.json"
    state = json.loads(path.read_text())
    state["recentDays"] = [(today - datetime.timedelta(days=31)).isoformat()] * len(state["recent"])
    path.write_text(json.dumps(state))
    records = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    assert records["feed"]["degraded"] is False
    assert "Recovered:  came back: its failures are over 30 days old" in script_runner.run(
        ["nexus", "skill", "show", "feed"]).stdout


def test_a_script_skill_without_its_script_is_not_installed(script_runner, workspace, nexus_home):
    write_skill(workspace, "tidy", meta={"script": "tidy.sh", "runner": "sh"})
    (workspace / "tidy" / "tidy.sh").write_text("echo tidy\n")
    records = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    assert records["tidy"]["status"] == "ready"
    (workspace / "tidy" / "tidy.sh").unlink()
    records = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    assert records["tidy"]["status"] == "not-installed" and records["tidy"]["missing"]["script"] == ["tidy.sh"]
    assert "missing its script: tidy.sh" in script_runner.run(["nexus", "skills", "list"]).stdout
    verified = script_runner.run(["nexus", "skill", "verify", "tidy"])
    assert verified.returncode == 1 and "script 'tidy.sh' is not a file" in verified.stdout
    assert "tidy" not in script_runner.run(["nexus", "skills", "prompt"]).stdout
    (workspace / "tidy" / "tidy.sh").mkdir()  # a folder is no script
    records = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    assert records["tidy"]["status"] == "not-installed"
