"""What people see says what to do next and never misleads: every refusal and "needs setup" line ends
with the one command that fixes it, and every command names a skill's state in the same words
(issue 25 items 6 and 7). Through the real scripts."""

import json

from helpers import jsonl, make_tool, write_config, write_skill


def listed_line(script_runner, name):
    listing = script_runner.run(["nexus", "skills", "list"]).stdout
    (line,) = [line for line in listing.splitlines() if line.strip().startswith(name + " ")]
    return line


def test_every_refusal_ends_with_the_command_that_fixes_it(script_runner, workspace, nexus_home):
    write_skill(workspace, "sendgrid", meta={"tool": "sh", "implements": ["email_sender"],
                                             "requires": {"env": ["SENDGRID_API_KEY"]}, "primaryEnv": "SENDGRID_API_KEY"})
    write_skill(workspace, "zoo", meta={"tool": "sh", "requires": {"env": ["ZOO_HOST"]}, "primaryEnv": "ZOO_TOKEN"})
    write_skill(workspace, "browse", meta={"tool": "sh", "requires": {"config": ["browser.enabled"]}})
    write_skill(workspace, "digest", meta={"tool": "sh", "requires": {"capabilities": ["email_sender"]}})
    write_skill(workspace, "quiet", meta={"tool": "sh"})
    write_config(nexus_home, "[skills.entries.quiet]\nenabled = false\n")
    fixes = {"sendgrid": "nexus skill key sendgrid", "zoo": "nexus skill env zoo ZOO_HOST=...",
             "browse": "nexus config set browser.enabled true", "digest": "nexus skill show digest",
             "quiet": "nexus skill enable quiet"}
    for name, fix in fixes.items():
        refused = script_runner.run(["nexus", "skill", "run", name])
        assert refused.returncode == 1 and refused.stderr.rstrip().endswith(fix), (name, refused.stderr)
        assert f"({fix})  " in listed_line(script_runner, name), name
    verified = script_runner.run(["nexus", "skill", "verify", "sendgrid"])
    assert verified.returncode == 1 and "To fix: nexus skill key sendgrid" in verified.stdout


def test_one_name_for_one_state(script_runner, workspace, nexus_home, bindir):
    make_tool(bindir, "flaky", "#!/bin/sh\nexit \"${1:-0}\"\n")
    write_skill(workspace, "flaky", meta={"tool": "flaky"})
    write_skill(workspace, "needs-gh", meta={"requires": {"bins": ["no-such-gh"]}})  # a prompt skill
    status = lambda name: script_runner.run(["nexus", "skill", "show", name]).stdout.splitlines()[4]  # noqa: E731
    assert "(not verified yet)" in listed_line(script_runner, "flaky")
    assert status("flaky") == "Status:     Ready, not verified yet"
    assert script_runner.run(["nexus", "skill", "run", "flaky"]).returncode == 0
    assert status("flaky").startswith("Status:     Ready (verified by its first run: ")
    assert script_runner.run(["nexus", "skill", "run", "flaky", "--", "3"]).returncode == 3
    assert "(verifies again on its next run)" in listed_line(script_runner, "flaky")
    assert status("flaky") == "Status:     Ready, verifies again on its next run"
    # a prompt skill whose binary is missing is not installed everywhere, never "always configured"
    assert "not-installed" == json.loads(script_runner.run(["nexus", "skill", "show", "needs-gh", "--json"]).stdout)["status"]
    assert status("needs-gh") == "Status:     Not installed"
    verified = script_runner.run(["nexus", "skill", "verify", "needs-gh"])
    assert verified.returncode == 1 and "always configured" not in verified.stdout and "no-such-gh" in verified.stdout
    (plumbing,) = jsonl(script_runner.run(["nexus-verify", "needs-gh"]).stdout)
    assert plumbing["ok"] is False and plumbing["configured"] is False
    assert "NOT INSTALLED" in script_runner.run(["nexus", "skills", "list"]).stdout  # and verifying changed nothing
    assert listed_line(script_runner, "needs-gh").split()[1] == "missing:"


def test_a_prompt_skill_that_needs_a_binary_is_not_said_to_need_nothing(script_runner, workspace):
    """skill show of a prompt skill whose binary is missing (github without gh): its class says what it is
    (instructions), never "nothing to set up" beside "Not installed"."""
    write_skill(workspace, "uses-bin", meta={"requires": {"bins": ["polish-missing-bin"]}})
    shown = script_runner.run(["nexus", "skill", "show", "uses-bin"]).stdout
    assert "Status:     Not installed" in shown and "nothing to set up" not in shown
    assert "Class:      Prompt (instructions the agent follows: nexus runs nothing)" in shown
