"""Capabilities and connectors: who provides what, which provider is chosen, what unlocks a skill."""

import datetime
import json

import pytest
from helpers import by_name, make_tool, write_config, write_log, write_skill


def listed(script_runner, *flags):
    result = script_runner.run(["nexus", "skills", "list", "--json", *flags])
    assert result.returncode == 0, result.stderr
    return by_name(json.loads(result.stdout))


@pytest.fixture
def mail(workspace, bindir):
    """A consumer of email_sender and two providers: gog (its binary installed) and sendgrid (needs a key)."""
    make_tool(bindir, "gog")
    write_skill(workspace, "gog", meta={"implements": ["email_sender", "calendar_read"]})
    make_tool(bindir, "sendgrid")
    write_skill(workspace, "sendgrid", meta={"tool": "sendgrid", "implements": ["email_sender"],
                                             "requires": {"env": ["SENDGRID_API_KEY"]}})
    write_skill(workspace, "newsletter", meta={"requires": {"capabilities": ["email_sender"]}})
    return workspace


def resolve(script_runner, capability, *flags):
    return script_runner.run(["nexus", "capability", "resolve", capability, *flags])


def test_a_consumer_is_ready_while_one_provider_is(script_runner, mail, monkeypatch):
    assert listed(script_runner)["newsletter"]["status"] == "ready"
    resolved = resolve(script_runner, "email_sender")
    assert resolved.returncode == 0 and resolved.stdout == "gog\n"
    monkeypatch.setenv("SENDGRID_API_KEY", "sg-key-123456")
    write_config(mail.parent, '[capabilities.email_sender]\nprefer = ["sendgrid", "gog"]\n')
    assert resolve(script_runner, "email_sender").stdout == "sendgrid\n"  # the preference list first


def test_the_preferred_provider_not_installed_resolves_to_the_other(script_runner, mail, nexus_home, monkeypatch):
    monkeypatch.setenv("SENDGRID_API_KEY", "sg-key-123456")
    write_skill(mail, "gog", meta={"tool": "not-here", "implements": ["email_sender"]})
    write_config(nexus_home, '[capabilities.email_sender]\nprefer = ["gog", "sendgrid"]\n')
    resolved = resolve(script_runner, "email_sender", "--json")
    assert resolved.returncode == 0
    report = json.loads(resolved.stdout)
    assert report["chosen"] == "sendgrid" and [p["name"] for p in report["ranking"]] == ["sendgrid", "gog"]
    explained = resolve(script_runner, "email_sender", "--explain").stdout.splitlines()
    assert explained[0].startswith("1. sendgrid: ready") and "gog not installed" in explained[1]


def test_without_a_ready_provider_the_consumer_needs_setup_and_says_why(script_runner, mail, bindir):
    (bindir / "gog").unlink()
    records = listed(script_runner)
    assert records["newsletter"]["status"] == "needs-setup"
    assert records["newsletter"]["reason"] == ("needs a provider of email_sender: gog not installed, "
                                               "sendgrid needs SENDGRID_API_KEY")
    assert records["newsletter"]["missing"]["capabilities"] == ["email_sender"]
    refused = resolve(script_runner, "email_sender")
    assert refused.returncode == 1 and refused.stdout == "" and "gog not installed" in refused.stderr
    ran = script_runner.run(["nexus", "skill", "run", "newsletter"])
    assert ran.returncode == 1 and "needs a provider of email_sender" in ran.stderr
    shown = script_runner.run(["nexus", "skill", "show", "newsletter"]).stdout
    assert "Capability: email_sender MISSING" in shown and "nexus capability resolve email_sender" in shown
    locked = script_runner.run(["nexus", "skills", "list", "--locked"]).stdout
    assert any(line.split()[:2] == ["make", "a"] and "newsletter" in line for line in locked.splitlines())


def test_success_rate_decides_between_equals_and_the_preference_list_beats_it(script_runner, mail, nexus_home,
                                                                              monkeypatch):
    monkeypatch.setenv("SENDGRID_API_KEY", "sg-key-123456")
    now = datetime.datetime.now(datetime.timezone.utc)
    for name, exits in (("gog", [1, 1, 0]), ("sendgrid", [0, 0, 0])):
        write_log(nexus_home, name, [{"ts": (now - datetime.timedelta(hours=1)).isoformat().replace("+00:00", "Z"),
                                      "skill": name, "type": "tool", "ms": 5, "exit": code} for code in exits])
    assert resolve(script_runner, "email_sender").stdout == "sendgrid\n"  # 100% beats 33%
    write_config(nexus_home, '[capabilities.email_sender]\nprefer = ["gog"]\n')
    assert resolve(script_runner, "email_sender").stdout == "gog\n"


def test_an_added_skill_claiming_a_capability_does_not_take_it_over(script_runner, mail, nexus_home, tmp_path):
    """A skill added from elsewhere ranks after the skills the user has, whatever its name or record;
    the preference list still chooses it."""
    write_skill(tmp_path / "elsewhere", "aaa-mailer", meta={"implements": ["email_sender"]})
    assert script_runner.run(["nexus", "skills", "add", str(tmp_path / "elsewhere")]).returncode == 0
    report = json.loads(resolve(script_runner, "email_sender", "--json").stdout)
    assert report["chosen"] == "gog" and [p["name"] for p in report["ranking"]][:2] == ["gog", "aaa-mailer"]
    assert "added with `nexus skills add`" in report["ranking"][1]["why"]
    write_config(nexus_home, '[capabilities.email_sender]\nprefer = ["aaa-mailer"]\n')
    assert resolve(script_runner, "email_sender").stdout == "aaa-mailer\n"


def test_requirement_cycles_make_the_skills_invalid_and_check_reports_them(script_runner, workspace):
    write_skill(workspace, "alpha", meta={"implements": ["a_cap"], "requires": {"skills": ["beta"]}})
    write_skill(workspace, "beta", meta={"requires": {"capabilities": ["a_cap"]}})
    write_skill(workspace, "gamma", meta={"requires": {"capabilities": ["nobody_has_it"]}})
    records = listed(script_runner)
    for name in ("alpha", "beta"):
        assert records[name]["status"] == "invalid" and records[name]["error"] == "requirement cycle: alpha -> beta -> alpha"
    assert records["gamma"]["reason"] == "needs a provider of nobody_has_it: no skill provides it"
    checked = script_runner.run(["nexus", "skills", "check", "--json", str(workspace)])
    assert checked.returncode == 1
    findings = [(f["path"].split("/")[-2], f["severity"], f["message"]) for f in json.loads(checked.stdout)]
    assert ("alpha", "error", "requirement cycle: alpha -> beta -> alpha") in findings
    assert ("gamma", "warning", "requires.capabilities: nothing provides nobody_has_it (no skill implements it)") in findings


def test_a_required_skill_must_be_ready(script_runner, workspace, bindir):
    write_skill(workspace, "gog", meta={"tool": "gog"})
    write_skill(workspace, "digest", meta={"requires": {"skills": ["gog"]}})
    assert listed(script_runner)["digest"]["reason"] == "needs gog not installed"
    make_tool(bindir, "gog")
    assert listed(script_runner)["digest"]["status"] == "ready"


def test_connectors_turn_from_locked_to_connected_after_a_verify(script_runner, workspace, bindir):
    make_tool(bindir, "gog")
    write_skill(workspace, "gog", meta={"verify": "gog ok"})  # a known tool: it signs in to google
    write_skill(workspace, "notes-sync", meta={"connectors": ["apple"], "tool": "eve"})
    before = by_name(json.loads(script_runner.run(["nexus", "connectors", "--json"]).stdout))
    assert before["google"] == {"name": "google", "skills": ["gog"], "connected": False,
                                "unlock": {"skill": "gog", "step": "nexus skill verify gog"}}
    assert before["apple"]["connected"] is False and before["apple"]["unlock"]["step"].startswith("Install eve")
    assert script_runner.run(["nexus", "skill", "verify", "gog"]).returncode == 0
    after = by_name(json.loads(script_runner.run(["nexus", "connectors", "--json"]).stdout))
    assert after["google"]["connected"] is True and after["google"]["connectedBy"] == "gog"
    assert "Connector: google connected" in script_runner.run(["nexus", "skill", "show", "gog"]).stdout


def test_a_connector_with_a_check_is_connected_only_when_its_check_passes(script_runner, workspace, bindir, tmp_path):
    signed_in = tmp_path / "signed-in"
    make_tool(bindir, "gh", f'#!/bin/sh\nif [ "$1 $2" = "auth status" ] && [ ! -e {signed_in} ]; then\n'
                            '  echo "You are not logged into any GitHub hosts." >&2; exit 1\nfi\n')
    write_skill(workspace, "hub", meta={"tool": "gh"})  # gh signs in to github
    first = by_name(json.loads(script_runner.run(["nexus", "connectors", "--json"]).stdout))["github"]
    assert first["connected"] is False and first["unlock"]["step"].endswith(" (runs gh auth status)")  # before: connected
    verified = script_runner.run(["nexus", "skill", "verify", "hub"])
    assert verified.returncode == 1 and "Connector github: not connected (gh auth status: You are not logged" in verified.stdout
    assert "to connect: gh auth login" in verified.stdout
    found = by_name(json.loads(script_runner.run(["nexus", "connectors", "--json"]).stdout))["github"]
    assert found["connected"] is False and found["checked"]["ok"] is False
    assert found["unlock"]["step"].startswith("gh auth login, then nexus skill verify ")
    assert "Connector: github not connected (to connect: gh auth login" in script_runner.run(
        ["nexus", "skill", "show", "hub"]).stdout
    signed_in.touch()
    verified = script_runner.run(["nexus", "skill", "verify", "hub"])  # verified already: its check runs all the same
    assert verified.returncode == 0 and "Connector github: connected" in verified.stdout
    assert "Running: gh auth status" in verified.stderr
    assert by_name(json.loads(script_runner.run(["nexus", "connectors", "--json"]).stdout))["github"]["connected"] is True


def test_locked_skills_are_grouped_by_what_unlocks_them(script_runner, workspace):
    for name in ("search-a", "search-b", "search-c"):
        write_skill(workspace, name, meta={"requires": {"env": ["BRAVE_API_KEY"]}})
    write_skill(workspace, "other", meta={"requires": {"bins": ["no-such-bin"]}})
    human = script_runner.run(["nexus", "skills", "list", "--locked"]).stdout.splitlines()
    assert sum("set BRAVE_API_KEY" in line for line in human) == 1
    (line,) = [line for line in human if "set BRAVE_API_KEY" in line]
    assert line.endswith("search-a, search-b, search-c")
    records = listed(script_runner, "--locked")
    assert records["other"]["unlock"] == {"kind": "bin", "name": "no-such-bin", "step": "install no-such-bin"}


def test_agents_see_the_ready_capabilities(script_runner, mail):
    prompt = script_runner.run(["nexus", "skills", "prompt"]).stdout
    assert "<name>email_sender</name>\n    <providers>gog</providers>" in prompt
    assert "<name>calendar_read</name>" in prompt
    agents = script_runner.run(["nexus", "skills", "agents-md"]).stdout
    assert "- **email_sender**: gog" in agents and "nexus capability resolve" in agents
    found = by_name(json.loads(script_runner.run(["nexus", "capabilities", "--json"]).stdout))
    assert found["email_sender"]["chosen"] == "gog" and found["email_sender"]["consumers"] == ["newsletter"]
    assert {p["name"]: p["status"] for p in found["email_sender"]["providers"]} == {"gog": "ready",
                                                                                   "sendgrid": "needs-setup"}


def test_skills_without_these_fields_are_read_as_before(script_runner, workspace):
    write_skill(workspace, "plain")
    write_skill(workspace, "claw", meta=None, extra='metadata: {"openclaw": {"requires": {"bins": ["sh"]}}}\n')
    records = listed(script_runner)
    for name in ("plain", "claw"):
        assert not {"implements", "connectors", "reason"} & set(records[name])
        assert set(records[name]["requires"]) == {"bins", "anyBins", "env", "config"}
        assert records[name]["status"] == "ready"
    prompt = script_runner.run(["nexus", "skills", "prompt"]).stdout
    assert "capabilit" not in prompt
    assert "capability resolve" not in script_runner.run(["nexus", "skills", "agents-md"]).stdout
    assert script_runner.run(["nexus", "skills", "check", str(workspace)]).returncode == 0


def test_capability_names_are_checked(script_runner, workspace):
    write_skill(workspace, "bad", meta={"implements": ["Email Sender"], "requires": {"skills": ["Not_A_Name"]}})
    checked = json.loads(script_runner.run(["nexus", "skills", "check", "--json", str(workspace / "bad")]).stdout)
    messages = [f["message"] for f in checked]
    assert any("'Email Sender' is not a valid name" in m for m in messages)
    assert any("'Not_A_Name' is not a valid skill name" in m for m in messages)
    assert "implements" not in listed(script_runner)["bad"]  # the loader drops it, with a warning


@pytest.mark.parametrize("argv, said", [
    (["capability", "resolve"], "nexus: capability resolve: missing CAPABILITY"),
    (["capability", "resolve", "Email/Sender"], "nexus: invalid capability name 'Email/Sender'"),
    (["capability", "resolve", "a", "b"], "nexus: capability resolve: unexpected 'b'"),
    (["capabilities", "--bogus"], "nexus: capabilities: unknown option --bogus"),
    (["connectors", "--bogus"], "nexus: connectors: unknown option --bogus"),
])
def test_bad_input_is_a_usage_error(script_runner, argv, said):
    result = script_runner.run(["nexus", *argv])
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[0].startswith(said) and len(result.stderr.splitlines()) <= 3
