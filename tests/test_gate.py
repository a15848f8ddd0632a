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
    assert named.returncode == 1 and "1 unreadable line skipped" in named.stderr  # not a log line's shape
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


# -- 6. jobs, report, verify and health tell the truth --------------------------------------------------------


def test_a_trusted_skill_whose_binary_is_gone_does_not_verify(script_runner, workspace, bindir):
    tool = make_tool(bindir, "gone")
    write_skill(workspace, "gone", meta={"tool": "gone", "verify": "gone --version"})
    assert script_runner.run(["nexus", "skill", "verify", "gone"]).returncode == 0
    tool.unlink()
    result = script_runner.run(["nexus", "skill", "verify", "gone", "--json"])
    outcome = json.loads(result.stdout)
    assert result.returncode == 1 and outcome["ok"] is False and not outcome.get("skipped")
    assert "not found" in outcome["error"]


def test_failures_after_a_good_record_make_a_skill_degraded(script_runner, workspace, bindir, tmp_path):
    broken = tmp_path / "broken"
    make_tool(bindir, "feed", f"#!/bin/sh\nif [ -e {broken} ]; then echo 'upstream 503' >&2; exit 1; fi\n")
    write_skill(workspace, "feed", meta={"tool": "feed"})
    for _ in range(20):
        assert script_runner.run(["nexus", "skill", "run", "feed"]).returncode == 0
    broken.touch()
    for _ in range(8):
        assert script_runner.run(["nexus", "skill", "run", "feed", "--no-verify"]).returncode == 1
    check = script_runner.run(["nexus", "status", "--check"])
    assert check.returncode == 1 and check.stdout.startswith("feed: degraded: failing 8 of the last 10 calls"), check.stdout


def test_status_check_reports_an_invalid_skill_md(script_runner, workspace):
    (workspace / "broken").mkdir()
    (workspace / "broken" / "SKILL.md").write_text("---\nname: broken\n---\nno description\n")
    check = script_runner.run(["nexus", "status", "--check"])
    assert check.returncode == 1 and "broken/SKILL.md: invalid: " in check.stdout, check.stdout


def test_an_env_var_of_blanks_is_not_set(script_runner, workspace, bindir, monkeypatch):
    make_tool(bindir, "needy")
    write_skill(workspace, "needy", meta={"tool": "needy", "requires": {"env": ["NEEDY_TOKEN"]}})
    monkeypatch.setenv("NEEDY_TOKEN", "   ")
    listed = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    assert listed["needy"]["status"] == "needs-setup" and listed["needy"]["missing"]["env"] == ["NEEDY_TOKEN"]
    refused = script_runner.run(["nexus", "skill", "run", "needy"])
    assert refused.returncode == 1 and "NEEDY_TOKEN" in refused.stderr


def test_the_report_survives_a_session_id_that_was_not_utf8_and_is_private(script_runner, workspace, nexus_home,
                                                                          tmp_path):
    import time

    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    write_log(nexus_home, "argdump", ['{"ts": "' + now + '", "skill": "argdump", "type": "tool", '
                                      '"ms": 1, "exit": 0, "args": [], "session": "s\\udcff\\u001b[2K"}'])
    target = tmp_path / "report.html"
    result = script_runner.run(["nexus", "report", "-o", str(target)])
    assert result.returncode == 0, result.stderr
    assert "s\\xff\\e[2K" in target.read_text() and target.stat().st_mode & 0o777 == 0o600


def start_job(script_runner, *args):
    result = script_runner.run(["nexus", "skill", "run", *args])
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture
def reaper(nexus_home):
    """What a job test leaves running when it fails is killed: the process group of each job whose tool is
    still the process it started (its start time in /proc, as nexus checks it)."""
    import contextlib
    import os
    import signal

    yield
    for record in (nexus_home / "state" / "nexus" / "jobs").glob("*/job.json"):
        with contextlib.suppress(ValueError, OSError, KeyError, TypeError, IndexError):
            job = json.loads(record.read_text())
            with open(f"/proc/{job['pid']}/stat", "rb") as f:
                started = int(f.read().rpartition(b")")[2].split()[19])
            if started == job["pidStart"]:
                os.killpg(job["pid"], signal.SIGKILL)


@pytest.mark.script_launch_mode("subprocess")
def test_a_job_with_a_long_command_line_is_never_called_lost(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "many", "#!/bin/sh\nexit 7\n")
    write_skill(workspace, "many", meta={"tool": "many"})
    for _ in range(2):
        job = start_job(script_runner, "many", "--background", "--", *["x"] * 150_000)
        waited = script_runner.run(["nexus", "job", "wait", job, "--timeout", "60"])
        assert waited.returncode == 7, waited.stderr
    record = json.loads((nexus_home / "state" / "nexus" / "jobs" / job / "job.json").read_text())
    assert record["truncated"] is True and len(json.dumps(record["args"], separators=(",", ":"))) <= 8192  # bounded as the log is


@pytest.mark.script_launch_mode("subprocess")
def test_a_killed_supervisors_job_is_found_ended_and_recorded(script_runner, reaper, workspace, bindir, nexus_home, tmp_path):
    import os
    import signal
    import time

    pids = tmp_path / "pid"
    make_tool(bindir, "sleepy", f"#!/bin/sh\necho $$ > {pids}\nwhile :; do sleep 0.1; done\n")
    write_skill(workspace, "sleepy", meta={"tool": "sleepy"})
    job = start_job(script_runner, "sleepy", "--background")
    record = nexus_home / "state" / "nexus" / "jobs" / job / "job.json"
    deadline = time.monotonic() + 30
    while json.loads(record.read_text())["status"] != "running" or not pids.exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    tool = int(pids.read_text())
    os.kill(json.loads(record.read_text())["supervisor"], signal.SIGKILL)
    time.sleep(0.5)
    os.kill(tool, 0)  # the tool outlived its supervisor
    listed = json.loads(script_runner.run(["nexus", "jobs", "--json"]).stdout)
    assert listed[0]["status"] == "lost" and listed[0]["toolEnded"] is True
    deadline = time.monotonic() + 10
    while True:
        try:
            os.kill(tool, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the tool is still running"
        time.sleep(0.05)
    (entry,) = read_log(nexus_home, "sleepy")
    assert entry["exit"] == 137 and "supervisor was killed" in entry["error"]
    killed = script_runner.run(["nexus", "job", "kill", job])
    assert killed.returncode == 0 and "lost" in killed.stdout
    assert len(read_log(nexus_home, "sleepy")) == 1  # recorded once


def test_a_malformed_job_record_is_reported_and_rotate_goes_on(script_runner, nexus_home):
    folder = nexus_home / "state" / "nexus" / "jobs" / "20261201-000000-abcdef"
    folder.mkdir(parents=True)
    (folder / "job.json").write_text("{not json")
    listed = script_runner.run(["nexus", "jobs"])
    assert listed.returncode == 0 and "job.json' is not valid JSON" in listed.stderr, listed.stderr
    rotated = script_runner.run(["nexus", "skills", "rotate"])
    assert rotated.returncode == 0 and "Traceback" not in rotated.stderr, rotated.stderr
    shown = script_runner.run(["nexus", "job", "show", "20261201-000000-abcdef"])
    assert shown.returncode == 2 and "not valid JSON" in shown.stderr


@pytest.mark.script_launch_mode("subprocess")
def test_job_kill_is_a_cancel_and_marks_nothing_for_verification(script_runner, reaper, workspace, bindir, nexus_home):
    import time

    make_tool(bindir, "loop", "#!/bin/sh\nwhile :; do sleep 0.1; done\n")
    write_skill(workspace, "loop", meta={"tool": "loop"})
    job = start_job(script_runner, "loop", "--background")
    record = nexus_home / "state" / "nexus" / "jobs" / job / "job.json"
    deadline = time.monotonic() + 30
    while json.loads(record.read_text())["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert script_runner.run(["nexus", "job", "kill", job]).returncode == 0
    state = json.loads((nexus_home / "state" / "nexus" / "skills" / "loop" / "state.json").read_text())
    assert state["configured"] is True and read_log(nexus_home, "loop")[0]["error"] == "cancelled"


# -- 7. the lows ---------------------------------------------------------------------------------------------


def test_every_repair_of_a_state_file_keeps_its_own_copy(script_runner, workspace, bindir, nexus_home):
    import time

    make_tool(bindir, "fix")
    write_skill(workspace, "fix", meta={"tool": "fix"})
    folder = nexus_home / "state" / "nexus" / "skills" / "fix"
    folder.mkdir(parents=True)
    taken = [folder / "state.json.corrupt"]
    for ahead in range(4):  # the names a repair within the next seconds would take
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(time.time() + ahead))
        taken.append(folder / f"state.json.corrupt-{stamp}")
    for n, path in enumerate(taken):
        path.write_text(f"copy {n}")
    (folder / "state.json").write_text("[broken")
    assert script_runner.run(["nexus", "skill", "run", "fix"]).returncode == 0
    assert [path.read_text() for path in taken] == [f"copy {n}" for n in range(len(taken))]
    copies = [p for p in folder.iterdir() if p.name.startswith("state.json.corrupt")]
    assert len(copies) == len(taken) + 1 and "[broken" in [p.read_text() for p in copies]


@pytest.mark.script_launch_mode("subprocess")
def test_the_argument_limit_counts_bytes(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "wide")
    write_skill(workspace, "wide", meta={"tool": "wide"})
    assert script_runner.run(["nexus", "skill", "run", "wide", "--", "\u20ac" * 20_000]).returncode == 0
    line = (nexus_home / "state" / "nexus" / "skills" / "wide" / "usage.log").read_bytes()
    assert len(line) < 8192 + 400 and read_log(nexus_home, "wide")[0]["truncated"] is True


@pytest.mark.script_launch_mode("subprocess")
def test_a_state_that_cannot_be_written_takes_its_log_line_back(script_runner, workspace, bindir, nexus_home):
    import os
    import subprocess

    make_tool(bindir, "full")
    write_skill(workspace, "full", meta={"tool": "full", "verify": "true"})
    assert script_runner.run(["nexus", "skill", "run", "full", "--", "first"]).returncode == 0
    state = nexus_home / "state" / "nexus" / "skills" / "full" / "state.json"
    assert state.stat().st_size > 512  # the limit below lets a log line through, never the state
    # a disk that fills up: no file may grow past 512 bytes (Python ignores SIGXFSZ: the write fails)
    done = subprocess.run(["sh", "-c", 'ulimit -f 1; exec nexus skill run full -- second'], env=os.environ,
                          capture_output=True, text=True)
    assert done.returncode == 0 and "could not record the call" in done.stderr, done.stderr
    recorded = json.loads(state.read_text())["totalInvocations"]
    assert len(read_log(nexus_home, "full")) == recorded == 1


@pytest.mark.script_launch_mode("subprocess")
def test_verify_output_is_not_held_in_memory_without_limit(script_runner, workspace, bindir):
    import os
    import subprocess

    make_tool(bindir, "loud")
    write_skill(workspace, "loud", meta={"tool": "loud", "verify": "head -c 400000000 /dev/zero; exit 3"})
    done = subprocess.run(["sh", "-c", "ulimit -v 300000; exec nexus skill verify loud --json"], env=os.environ,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["ok"] is False


def test_config_edit_leaves_no_copy_behind_when_the_editor_fails(script_runner, nexus_home, tmp_path, monkeypatch):
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setenv("EDITOR", str(make_tool(tmp_path, "bad-editor", "#!/bin/sh\nexit 1\n")))
    write_config(nexus_home, "[skills.log]\nmaxEntries = 3\n")
    failed = script_runner.run(["nexus", "config", "edit"])
    assert failed.returncode == 1 and "exited with 1" in failed.stderr
    assert list(temp.iterdir()) == []


def test_config_set_is_not_quadratic_in_a_long_multiline_string(script_runner, nexus_home):
    import os
    import subprocess

    body = "".join(f"line {n} # = ] not the end\n" for n in range(12_000))
    write_config(nexus_home, f'[notes]\ntext = """\n{body}"""  # kept\n\n[skills.log]\nmaxEntries = 3\n')
    done = subprocess.run(["nexus", "config", "set", "skills.log.maxEntries", "4"], env=os.environ,
                          capture_output=True, text=True, timeout=60)  # liveness: it took minutes
    assert done.returncode == 0, done.stderr
    text = (nexus_home / "nexus.toml").read_text()
    assert "maxEntries = 4" in text and body in text and '"""  # kept' in text


@pytest.mark.once
def test_an_mcp_result_masks_the_secrets_nexus_handed_the_tool(script_runner, deploy, bindir, workspace, nexus_home,
                                                               tmp_path):
    anyio = pytest.importorskip("anyio")
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    import os
    import shutil

    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    make_tool(bindir, "deploy", '#!/bin/sh\necho "token $DEPLOY_TOKEN region $REGION"\necho "$DEPLOY_TOKEN" >&2\n')
    write_config(nexus_home, '[skills]\nallowBundled = []\n[skills.entries.deploy.env]\n'
                             'DEPLOY_TOKEN = "tok-123456"\nREGION = "us-east-1"\n')

    async def main():
        params = StdioServerParameters(command=shutil.which("nexus-mcp"), args=[], env=dict(os.environ))
        with open(tmp_path / "server.err", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await session.call_tool("deploy", {"args": []})

    result = anyio.run(main)
    shown = json.dumps(result.structured_content) + "".join(c.text for c in result.content)
    assert "tok-123456" not in shown and "token *** region us-east-1" in shown


@pytest.mark.script_launch_mode("subprocess")
def test_job_kill_says_when_processes_of_the_tool_outlived_it(script_runner, reaper, workspace, bindir, nexus_home, tmp_path):
    import os
    import signal
    import time

    pids = tmp_path / "pids"
    make_tool(bindir, "stubborn", f"#!/bin/sh\n(trap '' TERM; echo $(sh -c 'echo $PPID') > {pids}; "
                                  "while :; do sleep 0.1; done) &\nwait\n")
    write_skill(workspace, "stubborn", meta={"tool": "stubborn"})
    job = start_job(script_runner, "stubborn", "--background")
    deadline = time.monotonic() + 30
    while not (pids.exists() and pids.read_text().strip()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    child = int(pids.read_text())
    killed = script_runner.run(["nexus", "job", "kill", job])
    deadline = time.monotonic() + 10
    while running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = running(child)
    if left:  # what this test started never outlives it, whatever nexus did
        os.kill(child, signal.SIGKILL)
    assert killed.returncode == 0 and "outlived it: nexus killed them" in killed.stdout, killed.stdout
    assert not left, "a process of the tool was still running"


def running(pid):
    """Whether a process runs (a zombie that an init which does not reap still lists does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_show_and_job_show_keep_each_field_on_its_line(script_runner, workspace, bindir, nexus_home):
    write_skill(workspace, "liar", meta={"tool": "nexus-absent\nStatus:     Ready"})
    shown = script_runner.run(["nexus", "skill", "show", "liar"])
    assert shown.returncode == 0, shown.stderr
    assert "\nStatus:     Ready" not in shown.stdout and "tool: nexus-absent\\nStatus:     Ready" in shown.stdout
    folder = nexus_home / "state" / "nexus" / "jobs" / "20261201-000000-abcdef"
    folder.mkdir(parents=True)
    (folder / "job.json").write_text(json.dumps({"id": "20261201-000000-abcdef", "skill": "liar", "status": "finished",
                                                 "started": "2026-12-01T00:00:00.000Z", "exit": 0,
                                                 "args": ["a\nstatus: killed", "b c"]}))
    job = script_runner.run(["nexus", "job", "show", "20261201-000000-abcdef"])
    assert job.returncode == 0, job.stderr
    assert "args: $'a\\nstatus: killed' 'b c'" in job.stdout and "\nstatus: killed" not in job.stdout
