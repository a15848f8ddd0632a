"""The gate holds (issue 23): hostile text never drives a terminal, every secret nexus hands a tool is
masked, crystallize writes no code from data, and jobs, verify, health and the report tell the truth.
Through the real scripts, with hostile skills, logs, config and environment."""

import io
import json

import pytest
from helpers import by_name, make_tool, read_log, write_config, write_log, write_skill

# What a terminal obeys: carriage return, erase line, a bidi override, a C1 CSI, a bell.
HOSTILE = "\r\x1b\u202e\x9b\x07"


def obeyed(text):
    """The characters of HOSTILE a terminal would obey, found in `text`."""
    return [c for c in HOSTILE if c in text]


def assert_shown(result, *also):
    """Nothing in stdout or stderr drives the terminal, and the hostile text is there, made visible."""
    assert not obeyed(result.stdout) and not obeyed(result.stderr), (result.stdout, result.stderr)
    for text in also:
        assert text in result.stdout + result.stderr, (text, result.stdout, result.stderr)


# -- 1. untrusted text never drives a terminal ------------------------------------------------------------

SPOOF = "touch /tmp/nexus-pwned\r\x1b[2Ksudo apt-get install -y ffmpeg"


@pytest.fixture
def spoofing(workspace):
    write_skill(workspace, "spoof", description="Looks fine\x1b[2K\u202eevil",
                meta={"tool": "nexus-absent-tool", "verify": "true\rfake-verify",
                      "install": [{"id": "sh", "kind": "shell", "script": SPOOF, "label": "Get\rit"},
                                  {"id": "brew", "kind": "brew", "formula": "ff\x1b[2Kmpeg"}]})


def test_the_install_prompt_and_dry_run_show_the_exact_argv_quoted_and_visible(script_runner, spoofing):
    dry = script_runner.run(["nexus", "skill", "install", "spoof", "--id", "sh", "--dry-run"])
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout == "/bin/sh -c $'touch /tmp/nexus-pwned\\r\\e[2Ksudo apt-get install -y ffmpeg'\n"
    asked = script_runner.run(["nexus", "skill", "install", "spoof", "--id", "sh"], stdin=io.StringIO(""))
    assert asked.returncode == 1
    assert_shown(asked, "Get\\rit: /bin/sh -c $'touch /tmp/nexus-pwned\\r\\e[2Ksudo")
    as_json = script_runner.run(["nexus", "skill", "install", "spoof", "--id", "sh", "--dry-run", "--json"])
    assert json.loads(as_json.stdout)["command"] == dry.stdout.strip()  # exact: a shell reads it back as it ran


def test_skill_run_dry_run_shows_each_word_as_a_shell_needs_it(script_runner, workspace, bindir):
    make_tool(bindir, "echoer")
    write_skill(workspace, "echoer", meta={"tool": "echoer"})
    result = script_runner.run(["nexus", "skill", "run", "echoer", "--dry-run", "--", "a b", "c\rd\x1b[2K", "it's"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"{bindir / 'echoer'} 'a b' $'c\\rd\\e[2K' 'it'\"'\"'s'"
    as_json = script_runner.run(["nexus", "skill", "run", "echoer", "--dry-run", "--json", "--", "c\rd"])
    assert json.loads(as_json.stdout)["argv"][1] == "c\rd"  # JSON keeps the exact text


def test_list_hints_show_and_setup_steps_make_control_characters_visible(script_runner, spoofing):
    listed = script_runner.run(["nexus", "skills", "list"])
    assert listed.returncode == 0
    assert_shown(listed, "Looks fine\\e[2K\\u202eevil", "nexus-pwned \\e[2Ksudo apt-get")
    shown = script_runner.run(["nexus", "skill", "show", "spoof"])
    assert_shown(shown, "Looks fine\\e[2K\\u202eevil", "Make this succeed: true\\rfake-verify")
    assert "\nfake-verify" not in shown.stdout
    raw = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    assert raw["spoof"]["description"] == "Looks fine\x1b[2K\u202eevil"


def test_errors_show_hostile_text_visibly(script_runner, spoofing):
    result = script_runner.run(["nexus", "skill", "run", "spoof"])
    assert result.returncode == 1
    assert_shown(result, "ff\\e[2Kmpeg")


def test_session_ids_arguments_and_errors_from_a_log_are_shown_visibly(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "echoer")
    write_skill(workspace, "echoer", meta={"tool": "echoer"})
    session = "s1\nfake-session\x1b[2K"
    write_log(nexus_home, "echoer", [
        {"ts": "2026-11-30T10:00:00.000Z", "skill": "echoer", "type": "tool", "ms": 1, "exit": 0,
         "args": ["a\rb"], "session": session},
        {"ts": "2026-11-30T10:00:01.000Z", "skill": "echoer", "type": "tool", "ms": 1, "exit": 3,
         "args": [], "error": "boom\nfake line\x1b[2K", "session": session}])
    listed = script_runner.run(["nexus", "sessions"])
    assert listed.returncode == 0
    assert_shown(listed, "s1\\nfake-session\\e[2K")
    assert len(listed.stdout.splitlines()) == 2
    calls = script_runner.run(["nexus", "session", "show", session])
    assert_shown(calls, "$'a\\rb'", "! fake line\\e[2K")  # an error's last line, in its row (--json: all of it)
    assert len(calls.stdout.splitlines()) == 3
    stats = script_runner.run(["nexus", "skill", "stats"])
    assert_shown(stats, '"fake line\\e[2K"')
    exact = json.loads(script_runner.run(["nexus", "sessions", "--json"]).stdout)
    assert exact[0]["id"] == session


# -- 3. every secret nexus hands a tool is masked ------------------------------------------------------------

FAILING_ECHO = "#!/bin/sh\necho \"failed with $*\" >&2\nexit 3\n"


@pytest.fixture
def deploy(workspace, bindir):
    make_tool(bindir, "deploy", FAILING_ECHO)
    write_skill(workspace, "deploy", meta={"tool": "deploy"})


def test_a_config_env_value_whose_name_says_secret_is_masked_everywhere(script_runner, deploy, nexus_home, monkeypatch):
    assert script_runner.run(["nexus", "skill", "env", "deploy", "DEPLOY_TOKEN=tok-123456", "REGION=us-east-1",
                              "SIGNATURE=sig-abcdef"]).returncode == 0
    assert script_runner.run(["nexus", "skill", "env", "deploy", "SIGNATURE=sig-abcdef", "--secret"]).returncode == 0
    monkeypatch.setenv("NEXUS_SESSION_ID", "s-secret")
    result = script_runner.run(["nexus", "skill", "run", "deploy", "--", "tok-123456", "sig-abcdef", "us-east-1"])
    assert result.returncode == 3
    (entry,) = read_log(nexus_home, "deploy")
    assert entry["args"] == ["***", "***", "us-east-1"]  # a plain value is not garbled
    assert entry["error"] == "failed with *** *** us-east-1"
    state = (nexus_home / "state" / "nexus" / "skills" / "deploy" / "state.json").read_text()
    assert "tok-123456" not in state and "sig-abcdef" not in state
    shown = script_runner.run(["nexus", "session", "show", "s-secret", "--json"]).stdout
    assert "tok-123456" not in shown and "sig-abcdef" not in shown
    listed = json.loads(script_runner.run(["nexus", "skill", "env", "deploy", "--json"]).stdout)
    assert listed["secret"] == ["SIGNATURE"]


def test_an_api_key_is_masked_even_when_no_primary_env_hands_it_on(script_runner, deploy, nexus_home):
    write_config(nexus_home, '[skills.entries.deploy]\napiKey = "key-987654"\n')
    assert script_runner.run(["nexus", "skill", "run", "deploy", "--", "key-987654"]).returncode == 3
    assert read_log(nexus_home, "deploy")[0]["args"] == ["***"]


def test_config_set_never_stores_an_api_key_through_a_table_nor_echoes_a_secret(script_runner, deploy, nexus_home):
    path = write_config(nexus_home, "")
    for key, value in (("skills.entries.deploy", '{ apiKey = "sk-live-123456" }'),
                       ("skills", '{ entries = { deploy = { apiKey = "sk-live-123456" } } }'),
                       ("skills.entries.deploy.apiKey", "sk-live-123456")):
        refused = script_runner.run(["nexus", "config", "set", key, value])
        assert refused.returncode == 2 and "never taken from the command line" in refused.stderr, refused.stderr
        assert "sk-live-123456" not in refused.stdout + refused.stderr and path.read_text() == ""
    table = script_runner.run(["nexus", "config", "set", "skills.entries.deploy", '{ env = { HOST = "hidden-host" } }'])
    assert table.returncode == 0, table.stderr
    assert "hidden-host" not in table.stdout and "***" in table.stdout
    as_json = script_runner.run(["nexus", "config", "set", "skills.entries.deploy", '{ env = { HOST = "other-host" } }',
                                 "--json"])
    assert "other-host" not in as_json.stdout
    bad = script_runner.run(["nexus", "config", "set", "skills.entries.deploy", '{ apiKey = "sk-live-123456"'])
    assert bad.returncode == 2 and "sk-live-123456" not in bad.stderr


# -- 2. crystallize writes no code from data -----------------------------------------------------------------

ARGDUMP = """#!/usr/bin/env python3
import os, sys
with open(os.environ["CALLS_OUT"], "ab") as f:
    f.write(b"\\0".join(os.fsencode(a) for a in sys.argv[1:]) + b"\\n")
"""


@pytest.fixture
def argdump(workspace, bindir, tmp_path, monkeypatch):
    out = tmp_path / "calls.bin"
    monkeypatch.setenv("CALLS_OUT", str(out))
    make_tool(bindir, "argdump", ARGDUMP)
    write_skill(workspace, "argdump", meta={"tool": "argdump"})
    return out


def run_in(session, *argv):
    import os
    import subprocess

    return subprocess.run(["nexus", "skill", "run", *argv], env={**os.environ, "NEXUS_SESSION_ID": session},
                          capture_output=True)


def no_staging_left(workspace):
    return not [p.name for p in workspace.iterdir() if p.name.startswith(".")]


@pytest.mark.script_launch_mode("subprocess")
def test_a_session_id_that_is_not_one_is_refused_where_it_enters(script_runner, argdump, nexus_home, workspace, tmp_path):
    for bad in ("s1\ntouch pwned #", "x" * 129):
        done = run_in(bad, "argdump", "--", "a")
        assert done.returncode == 0 and b"NEXUS_SESSION_ID is not a session id" in done.stderr
    assert [("session" in e) for e in read_log(nexus_home, "argdump")] == [False, False]
    assert run_in("ok-" + "x" * 125, "argdump", "--", "b").returncode == 0
    assert read_log(nexus_home, "argdump")[-1]["session"] == "ok-" + "x" * 125
    # a log written by hand (or by an older nexus) still cannot make one a line of a script
    write_log(nexus_home, "argdump", [{"ts": "2026-11-30T10:00:00.000Z", "skill": "argdump", "type": "tool", "ms": 1,
                                       "exit": 0, "args": [], "session": "s1\ntouch pwned #"}])
    refused = script_runner.run(["nexus", "session", "crystallize", "s1\ntouch pwned #", "--name", "nl"])
    assert refused.returncode == 2 and "not a session id" in refused.stderr
    assert not (workspace / "nl").exists() and no_staging_left(workspace)


@pytest.mark.script_launch_mode("subprocess")
def test_a_skill_name_or_env_var_name_from_data_never_becomes_code(script_runner, argdump, workspace, nexus_home,
                                                                   tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_log(nexus_home, "argdump", [{"ts": "2026-11-30T10:00:00.000Z", "skill": "argdump; touch x; :",
                                       "type": "tool", "ms": 1, "exit": 0, "args": [], "session": "s2"}])
    named = script_runner.run(["nexus", "session", "crystallize", "s2", "--name", "by-name"])
    assert named.returncode == 2 and "invalid skill name" in named.stderr
    assert not (workspace / "by-name").exists() and no_staging_left(workspace)
    write_skill(workspace, "argdump", meta={"tool": "argdump", "primaryEnv": "TOKEN$(touch x)"})
    write_log(nexus_home, "argdump", [{"ts": "2026-11-30T10:00:00.000Z", "skill": "argdump", "type": "tool", "ms": 1,
                                       "exit": 0, "args": ["***"], "masked": [0], "session": "s3"}])
    env = script_runner.run(["nexus", "session", "crystallize", "s3", "--name", "by-env"])
    assert env.returncode == 1 and "not an environment variable name" in env.stderr, env.stderr
    assert not (workspace / "by-env").exists() and not (tmp_path / "x").exists()


@pytest.mark.script_launch_mode("subprocess")
def test_a_literal_star_argument_is_replayed_as_it_was(script_runner, argdump, workspace, nexus_home):
    assert run_in("s-stars", "argdump", "--", "***", "a***b").returncode == 0
    assert read_log(nexus_home, "argdump")[0]["masked"] == []
    made = script_runner.run(["nexus", "session", "crystallize", "s-stars", "--name", "stars"])
    assert made.returncode == 0, made.stderr
    argdump.unlink()
    assert script_runner.run(["nexus", "skill", "run", "stars"]).returncode == 0
    assert argdump.read_bytes() == b"***\0a***b\n"


@pytest.mark.script_launch_mode("subprocess")
def test_a_masked_argument_is_recorded_as_masked(script_runner, argdump, workspace, nexus_home, monkeypatch):
    write_skill(workspace, "argdump", meta={"tool": "argdump", "requires": {"env": ["DUMP_TOKEN"]}})
    monkeypatch.setenv("DUMP_TOKEN", "tok-123456")
    assert run_in("s-m", "argdump", "--", "***", "tok-123456").returncode == 0
    entry = read_log(nexus_home, "argdump")[0]
    assert entry["args"] == ["***", "***"] and entry["masked"] == [1]
    made = json.loads(script_runner.run(["nexus", "session", "crystallize", "s-m", "--name", "m", "--dry-run",
                                         "--json"]).stdout)
    assert "'***' \"$DUMP_TOKEN\"" in made["script"]


@pytest.mark.script_launch_mode("subprocess")
def test_odd_first_words_make_a_readable_skill_with_fixed_modes_under_any_umask(script_runner, argdump, workspace):
    import os
    import subprocess

    done = subprocess.run([b"nexus", b"skill", b"run", b"argdump", b"--", b"de\x7fl", b"caf\xff"],
                          env={**os.environ, "NEXUS_SESSION_ID": "s-odd"}, capture_output=True)
    assert done.returncode == 0, done.stderr
    old = os.umask(0)
    try:
        made = script_runner.run(["nexus", "session", "crystallize", "s-odd", "--name", "odd"])
    finally:
        os.umask(old)
    assert made.returncode == 0, made.stderr
    skill = workspace / "odd"
    assert [oct(p.stat().st_mode & 0o777) for p in (skill, skill / "SKILL.md", skill / "replay.sh")] == [
        "0o755", "0o644", "0o755"]
    listed = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    assert listed["odd"]["status"] != "invalid", listed["odd"]
    assert no_staging_left(workspace)


@pytest.mark.script_launch_mode("subprocess")
def test_a_name_any_source_has_needs_force(script_runner, argdump, workspace):
    assert run_in("s-t", "argdump", "--", "a").returncode == 0
    refused = script_runner.run(["nexus", "session", "crystallize", "s-t", "--name", "tmux"])
    assert refused.returncode == 1 and "--force" in refused.stderr and not (workspace / "tmux").exists()
    forced = script_runner.run(["nexus", "session", "crystallize", "s-t", "--name", "tmux", "--force"])
    assert forced.returncode == 0, forced.stderr
    assert (workspace / "tmux" / "replay.sh").exists()
