"""Profiles: [profiles.NAME] in the config, chosen by --profile, NEXUS_PROFILE or skills.defaultProfile;
what an agent is not given it cannot see or run."""

import json

import pytest
from helpers import bundled_names, write_config, write_skill

PROFILES = """\
[skills]
defaultProfile = "coder"

[profiles.coder.skills]
allow = ["git-*", "capability:email_sender"]
deny = ["git-danger"]

[profiles.mail.skills]
allow = ["mailer"]
"""


@pytest.fixture
def catalogue(workspace, nexus_home):
    for name in ("git-log", "git-danger", "notes"):
        write_skill(workspace, name)
    write_skill(workspace, "mailer", meta={"implements": ["email_sender"]})
    write_config(nexus_home, PROFILES)
    return workspace


def test_profiles_lists_each_with_its_skills(script_runner, catalogue):
    result = script_runner.run(["nexus", "profiles", "--json"])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        {"name": "coder", "default": True, "allow": ["git-*", "capability:email_sender"], "deny": ["git-danger"],
         "skills": ["git-log", "mailer"]},
        {"name": "mail", "default": False, "allow": ["mailer"], "deny": [], "skills": ["mailer"]},
    ]
    human = script_runner.run(["nexus", "profiles"]).stdout
    assert "coder (default)\n  allow: git-*, capability:email_sender\n  deny: git-danger\n" in human
    assert "  skills (2): git-log, mailer\n" in human


def test_without_profiles_it_says_how_to_add_one(script_runner, workspace):
    result = script_runner.run(["nexus", "profiles"])
    assert result.returncode == 0 and result.stdout.startswith("No profiles: every agent sees every skill.")
    assert json.loads(script_runner.run(["nexus", "profiles", "--json"]).stdout) == []


@pytest.mark.parametrize("text, problem", [
    ('[profiles.coder.skills]\nallow = ["Git Log"]\n', "profiles.coder.skills.allow needs a list of skill names"),
    ('[profiles.coder.skills]\nallow = ["capability:Bad Name"]\n', "profiles.coder.skills.allow needs"),
    ('[profiles.coder.skills]\nallwo = ["x"]\n', "profiles.coder.skills.allwo is not a key nexus knows "
                                                   "(did you mean profiles.coder.skills.allow?)"),
    ('[profiles.Coder.skills]\nallow = ["x"]\n', "profiles.Coder: 'Coder' is not a profile name"),
    ('[skills]\ndefaultProfile = "Not A Name"\n', "skills.defaultProfile needs the name of a [profiles.NAME] table"),
])
def test_profile_keys_are_validated(script_runner, nexus_home, workspace, text, problem):
    write_config(nexus_home, text)
    result = script_runner.run(["nexus", "profiles"])
    assert result.returncode == 2 and problem in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_config_set_writes_a_profile(script_runner, nexus_home, workspace):
    write_skill(workspace, "notes")
    result = script_runner.run(["nexus", "config", "set", "profiles.reader.skills.allow", '["notes", "weather"]'])
    assert result.returncode == 0, result.stderr
    listed = json.loads(script_runner.run(["nexus", "profiles", "--json"]).stdout)
    assert listed == [{"name": "reader", "default": False, "allow": ["notes", "weather"], "deny": [],
                       "skills": ["notes", "weather"]}]
    assert "weather" in bundled_names()
