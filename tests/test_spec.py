"""Issue 26, every line of the specs: each item through the real scripts."""

import json

import pytest
from helpers import by_name, make_tool, read_log, read_state, write_config, write_skill

pytestmark = pytest.mark.script_launch_mode("subprocess")


def run(script_runner, *argv, **kwargs):
    return script_runner.run(["nexus", *argv], **kwargs)


# -- 1. every refusal is logged, with its reason code ------------------------------------------------


def test_a_refusal_for_policy_is_logged_and_counted_but_never_a_failure(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "feed")
    write_skill(workspace, "feed", meta={"tool": "feed"})
    write_skill(workspace, "notes")  # a prompt skill is refused and logged the same way
    assert run(script_runner, "skill", "run", "feed").returncode == 0
    write_config(nexus_home, "[skills.entries.feed]\nenabled = false\n[skills.entries.notes]\nenabled = false\n")
    for _ in range(6):
        refused = run(script_runner, "skill", "run", "feed", "--", "x")
        assert refused.returncode == 1 and "is disabled" in refused.stderr
    assert run(script_runner, "skill", "run", "notes").returncode == 1
    log = read_log(nexus_home, "feed")
    assert len(log) == 7 and {(e["exit"], e["refused"], e["args"][0]) for e in log[1:]} == {(1, "disabled", "x")}
    assert [(e["type"], e["refused"]) for e in read_log(nexus_home, "notes")] == [("prompt", "disabled")]
    state = read_state(nexus_home, "feed")
    assert (state["totalInvocations"], state["successRate"], state["policyRefusals"]) == (7, 1, 6)
    assert "lastError" not in state
    stats = json.loads(run(script_runner, "skill", "stats", "--json").stdout)
    feed = by_name(stats["skills"])["feed"]
    assert (feed["totalInvocations"], feed["successRate"], feed["refusedForPolicy"]) == (7, 1, 6)
    assert stats["recentFailures"] == []
    write_config(nexus_home, "")
    listed = by_name(json.loads(run(script_runner, "skills", "list", "--json").stdout))
    assert listed["feed"]["degraded"] is False
    assert run(script_runner, "status", "--check").returncode == 0


def test_every_refusal_says_why_in_the_log(script_runner, workspace, bindir, nexus_home, tmp_path):
    write_skill(workspace, "absent", meta={"tool": "nosuchtool"})
    make_tool(bindir, "api")
    write_skill(workspace, "api", meta={"tool": "api", "requires": {"env": ["SPEC_TEST_TOKEN"]}})
    make_tool(bindir, "acct")
    write_skill(workspace, "acct", meta={"tool": "acct", "verify": "exit 1"})
    make_tool(bindir, "child")
    write_skill(workspace, "child", meta={"tool": "child", "requires": {"skills": ["absent"]}})
    expected = {"absent": "not-installed", "api": "needs-setup", "acct": "needs-setup", "child": "dependency"}
    for name, code in expected.items():
        result = run(script_runner, "skill", "run", name)
        assert result.returncode == 1, (name, result.stderr)
        (entry,) = read_log(nexus_home, name)
        assert (entry["exit"], entry["refused"]) == (1, code), name
        assert read_state(nexus_home, name)["successRate"] == 0  # not policy: the skill cannot do its job


# -- 15. an apiKey stands for the declared primaryEnv only; blanks are unset -----------------------------


def test_an_api_key_without_primary_env_covers_nothing(script_runner, workspace, bindir, nexus_home, monkeypatch):
    make_tool(bindir, "api")
    write_skill(workspace, "api", meta={"tool": "api", "requires": {"env": ["SPEC_API_TOKEN"]}})
    write_skill(workspace, "keyed", meta={"tool": "api", "requires": {"env": ["SPEC_API_TOKEN"]},
                                          "primaryEnv": "SPEC_API_TOKEN"})
    write_config(nexus_home, '[skills.entries.api]\napiKey = "k-123456"\n[skills.entries.keyed]\napiKey = "k-123456"\n')
    listed = by_name(json.loads(run(script_runner, "skills", "list", "--json").stdout))
    assert (listed["api"]["status"], listed["api"]["missing"]["env"]) == ("needs-setup", ["SPEC_API_TOKEN"])
    assert listed["keyed"]["status"] == "ready"
    check = run(script_runner, "skills", "check")
    assert "skills.entries.api.apiKey: the skill names no env var for a key (primaryEnv)" in check.stdout
    assert "keyed" not in check.stdout
    monkeypatch.setenv("SPEC_API_TOKEN", "  \t")  # blanks are not a value
    listed = by_name(json.loads(run(script_runner, "skills", "list", "--json").stdout))
    assert listed["api"]["status"] == "needs-setup"
    monkeypatch.setenv("SPEC_API_TOKEN", "set")
    listed = by_name(json.loads(run(script_runner, "skills", "list", "--json").stdout))
    assert listed["api"]["status"] == "ready"


# -- 17. what an upgrade changes is said once ----------------------------------------------------------


def test_an_upgrade_says_what_changed_once(script_runner, workspace, nexus_home):
    write_skill(workspace, "api", meta={"requires": {"env": ["SPEC_API_TOKEN"]}})
    write_config(nexus_home, '[skills.entries.api]\napiKey = "k-123456"\n')
    first = run(script_runner, "skills", "list")  # a new user: nothing to upgrade from
    assert first.returncode == 0 and "this version changes" not in first.stderr
    upgrades = nexus_home / "state" / "nexus" / "upgrades.json"
    assert "api-key-primary-env" in json.loads(upgrades.read_text())["done"]
    upgrades.unlink()  # as an earlier nexus left it: a manifest, and no record of upgrades
    said = run(script_runner, "skills", "list")
    assert said.returncode == 0
    assert "nexus: this version changes what works for you" in said.stderr
    assert "primaryEnv only" in said.stderr and "(skills with a key: api)" in said.stderr
    assert "nexus skill env NAME VAR=VALUE" in said.stderr
    again = run(script_runner, "skills", "list")
    assert "this version changes" not in again.stderr
    assert oct(upgrades.stat().st_mode & 0o777) == "0o600"


def test_an_upgrade_that_does_not_concern_the_user_says_nothing(script_runner, workspace, nexus_home):
    write_skill(workspace, "plain")
    run(script_runner, "skills", "list")
    (nexus_home / "state" / "nexus" / "upgrades.json").unlink()
    assert "this version changes" not in run(script_runner, "skills", "list").stderr
