"""Sessions, crystallization and background runs, through the real scripts (subprocess mode: the gateway
and the job supervisor hand tools real file descriptors)."""

import json
import os
import subprocess
import time

import pytest
from helpers import make_tool, read_log, write_log, write_skill

pytestmark = pytest.mark.script_launch_mode("subprocess")

RECORDER = """#!/usr/bin/env python3
import os, sys
if sys.argv[1:] == ["fail"]:
    sys.exit(1)
with open(os.environ["CALLS_OUT"], "ab") as f:
    f.write(b"\\0".join(os.fsencode(a) for a in sys.argv[1:]) + b"\\n--end--\\n")
"""


def recorded(path):
    return [call.split(b"\0") for call in path.read_bytes().split(b"\n--end--\n") if call] if path.exists() else []


@pytest.fixture
def mailer(workspace, bindir, tmp_path, monkeypatch):
    out = tmp_path / "calls.bin"
    monkeypatch.setenv("CALLS_OUT", str(out))
    make_tool(bindir, "mailer", RECORDER)
    write_skill(workspace, "mailer", meta={"tool": "mailer"})
    return out


def test_sessions_from_interleaved_logs_of_several_skills(script_runner, workspace, nexus_home):
    def call(ts, skill, session=None, code=0):
        entry = {"ts": f"2026-11-30T10:00:{ts:02d}.000Z", "skill": skill, "type": "tool", "ms": 3, "exit": code,
                 "args": [f"at-{ts}"]}
        return {**entry, "session": session} if session else entry

    write_log(nexus_home, "alpha", [call(1, "alpha", "s1"), call(3, "alpha", "s2"), call(5, "alpha", "s1", 2),
                                    call(7, "alpha")])
    write_log(nexus_home, "beta", [call(2, "beta", "s1"), call(4, "beta", "s2"), call(6, "beta", "s1")])
    found = {s["id"]: s for s in json.loads(script_runner.run(["nexus", "sessions", "--json"]).stdout)}
    assert found["s1"] == {"id": "s1", "first": "2026-11-30T10:00:01.000Z", "last": "2026-11-30T10:00:06.000Z",
                           "calls": 4, "skills": ["alpha", "beta"], "failures": 1, "refused": 0, "clients": [],
                           "profiles": []}
    assert found["s2"]["calls"] == 2 and found["-"]["calls"] == 1  # calls without a session are kept, as "-"
    shown = json.loads(script_runner.run(["nexus", "session", "show", "s1", "--json"]).stdout)
    assert [(c["n"], c["skill"], c["args"]) for c in shown] == [
        (1, "alpha", ["at-1"]), (2, "beta", ["at-2"]), (3, "alpha", ["at-5"]), (4, "beta", ["at-6"])]
    human = script_runner.run(["nexus", "session", "show", "s1"]).stdout
    assert "at-5" in human and "at-3" not in human
    missing = script_runner.run(["nexus", "session", "show", "nope"])
    assert missing.returncode == 1 and "no call of session 'nope'" in missing.stderr
    stats = json.loads(script_runner.run(["nexus", "skill", "stats", "--days", "36500", "--session", "s2", "--json"]).stdout)
    assert stats["totalInvocations"] == 2 and stats["session"] == "s2"
    plumbing = json.loads(script_runner.run(["nexus-stats", "--days", "36500", "--session", "s1", "--json"]).stdout)
    assert plumbing["totalInvocations"] == 4 and plumbing["successRate"] == 0.75
    nosuch = script_runner.run(["nexus", "skill", "stats", "--days", "36500", "--session", "nosuch"])
    assert nosuch.returncode == 1 and nosuch.stdout == ""
    assert "no call of session 'nosuch' in the usage logs of the past 36500 days" in nosuch.stderr


def test_a_refused_call_counts_as_refused_and_is_never_replayed(script_runner, workspace, nexus_home):
    write_skill(workspace, "mailer", meta={"tool": "mailer"})
    def call(second, args, **fields):
        return {"ts": f"2026-11-30T10:00:0{second}.000Z", "skill": "mailer", "type": "tool", "ms": 3, "exit": 0,
                "args": args, "session": "s-refused", **fields}

    write_log(nexus_home, "mailer", [
        call(1, ["send", "one"]),
        call(2, ["send", "two"], exit=1, ms=0, refused="needs-setup", error="needs: MAILER_KEY"),
        call(3, ["send", "three"], exit=1, error="smtp: connection refused"),
        call(4, ["send", "four"], exit=1, ms=0, refused="disabled", error="Skill 'mailer' is disabled")])
    found = json.loads(script_runner.run(["nexus", "sessions", "--json"]).stdout)
    assert [(s["id"], s["calls"], s["failures"], s["refused"]) for s in found] == [("s-refused", 4, 1, 2)]
    table = script_runner.run(["nexus", "sessions"]).stdout.splitlines()
    assert table[0].split()[3:6] == ["CALLS", "FAILED", "REFUSED"] and table[1].split()[5:8] == ["4", "1", "2"]
    shown = json.loads(script_runner.run(["nexus", "session", "show", "s-refused", "--json"]).stdout)
    assert [c.get("refused") for c in shown] == [None, "needs-setup", None, "disabled"]
    human = script_runner.run(["nexus", "session", "show", "s-refused"]).stdout.splitlines()
    assert "refused (needs-setup): needs: MAILER_KEY  send two" in human[2] and "! smtp" in human[3]
    made = script_runner.run(["nexus", "session", "crystallize", "s-refused", "--name", "resend", "--dry-run", "--json"])
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["calls"] == [1]  # neither the failure nor either refusal is replayed


def test_session_new_gives_fresh_ids(script_runner):
    ids = {script_runner.run(["nexus", "session", "new"]).stdout.strip() for _ in range(3)}
    assert len(ids) == 3 and all(len(i) > 16 and "\n" not in i for i in ids)


def run_in_session(session, *argv, env=None):
    return subprocess.run(["nexus", "skill", "run", *argv], env={**os.environ, "NEXUS_SESSION_ID": session, **(env or {})},
                          capture_output=True)


def test_a_crystallized_session_replays_with_another_value(script_runner, mailer, workspace, nexus_home):
    assert run_in_session("s-mail", "mailer", "--", "send", "--to", "mom@example.com", "hello mom@example.com").returncode == 0
    assert run_in_session("s-mail", "mailer", "--", "fail").returncode == 1  # left out of the replay
    assert run_in_session("s-mail", "mailer", "--", "archive", "mom@example.com").returncode == 0
    made = script_runner.run(["nexus", "session", "crystallize", "s-mail", "--name", "mail-mom",
                              "--var", "to=mom@example.com"])
    assert made.returncode == 0, made.stderr
    skill = workspace / "mail-mom"
    assert "requires" in (skill / "SKILL.md").read_text() and os.access(skill / "replay.sh", os.X_OK)
    assert script_runner.run(["nexus", "skills", "check", str(skill)]).returncode == 0
    state = json.loads((nexus_home / "state" / "nexus" / "skills" / "mail-mom" / "state.json").read_text())
    assert state["crystallizedFrom"] == {"session": "s-mail", "calls": [1, 3]}
    mailer.unlink()
    replay = script_runner.run(["nexus", "skill", "run", "mail-mom", "--", "--to", "dad@example.com"])
    assert replay.returncode == 0, replay.stderr
    assert recorded(mailer) == [[b"send", b"--to", b"dad@example.com", b"hello dad@example.com"],
                                [b"archive", b"dad@example.com"]]
    assert [e["args"] for e in read_log(nexus_home, "mailer")[-2:]] == [
        ["send", "--to", "dad@example.com", "hello dad@example.com"], ["archive", "dad@example.com"]]
    assert read_log(nexus_home, "mail-mom")[-1]["exit"] == 0  # the new skill's own call, and its steps as theirs
    positional = script_runner.run(["nexus", "skill", "run", "mail-mom", "--", "sis@example.com"])
    assert positional.returncode == 0 and recorded(mailer)[-1] == [b"archive", b"sis@example.com"]
    missing = script_runner.run(["nexus", "skill", "run", "mail-mom"])
    assert missing.returncode == 2 and "missing --to" in missing.stderr
    again = script_runner.run(["nexus", "session", "crystallize", "s-mail", "--name", "mail-mom"])
    assert again.returncode == 1 and "--force" in again.stderr


def test_arguments_survive_the_round_trip_byte_for_byte(script_runner, mailer, workspace):
    odd = [b"two words", b"it's \"quoted\"", b"line\nbreak", b"caf\xe9 \xff", b"$HOME `id` \\n", b""]
    done = subprocess.run([b"nexus", b"skill", b"run", b"mailer", b"--", *odd],
                          env={**os.environ, "NEXUS_SESSION_ID": "s-odd"}, capture_output=True)
    assert done.returncode == 0, done.stderr
    dry = script_runner.run(["nexus", "session", "crystallize", "s-odd", "--name", "odd-args", "--dry-run"])
    assert dry.returncode == 0 and not (workspace / "odd-args").exists()
    assert script_runner.run(["nexus", "session", "crystallize", "s-odd", "--name", "odd-args"]).returncode == 0
    mailer.unlink()
    assert script_runner.run(["nexus", "skill", "run", "odd-args"]).returncode == 0
    assert recorded(mailer) == [odd]


def test_a_masked_argument_needs_a_variable_or_the_env_var_that_held_it(script_runner, workspace, bindir, mailer,
                                                                       monkeypatch):
    write_skill(workspace, "mailer", meta={"tool": "mailer", "requires": {"env": ["MAIL_TOKEN", "MAIL_USER"]}})
    monkeypatch.setenv("MAIL_TOKEN", "token-123456789")
    monkeypatch.setenv("MAIL_USER", "user-abcdefgh")
    assert run_in_session("s-secret", "mailer", "--", "--token=token-123456789").returncode == 0
    refused = script_runner.run(["nexus", "session", "crystallize", "s-secret", "--name", "with-secret"])
    assert refused.returncode == 1 and "call 1 (mailer --token=***)" in refused.stderr and "--var" in refused.stderr
    assert not (workspace / "with-secret").exists()
    made = script_runner.run(["nexus", "session", "crystallize", "s-secret", "--name", "with-secret",
                              "--var", "token=***"])
    assert made.returncode == 0, made.stderr
    assert "token-123456789" not in (workspace / "with-secret" / "replay.sh").read_text()
    mailer.unlink()
    assert script_runner.run(["nexus", "skill", "run", "with-secret", "--", "--token", "other-secret-1"]).returncode == 0
    assert recorded(mailer) == [[b"--token=other-secret-1"]]
    write_skill(workspace, "mailer", meta={"tool": "mailer", "primaryEnv": "MAIL_TOKEN"})
    from_env = script_runner.run(["nexus", "session", "crystallize", "s-secret", "--name", "from-env", "--dry-run",
                                  "--json"])
    made = json.loads(from_env.stdout)
    assert made["env"] == ["MAIL_TOKEN"] and '"$MAIL_TOKEN"' in made["script"]


def test_a_background_job_outlives_its_starter_and_is_logged_once(script_runner, workspace, bindir, nexus_home,
                                                                  tmp_path):
    gate = tmp_path / "go"
    make_tool(bindir, "slow", f"#!/bin/sh\nwhile [ ! -e {gate} ]; do sleep 0.05; done\necho done; echo oops >&2; exit 3\n")
    write_skill(workspace, "slow", meta={"tool": "slow"})
    started = time.monotonic()
    result = script_runner.run(["nexus", "skill", "run", "slow", "--background"])
    assert result.returncode == 0 and time.monotonic() - started < 20
    job = result.stdout.strip()
    shown = json.loads(script_runner.run(["nexus", "job", "show", job, "--json"]).stdout)
    assert shown["status"] == "running" and read_log(nexus_home, "slow") == []  # the starter is gone, the job is not
    gate.touch()
    waited = script_runner.run(["nexus", "job", "wait", job, "--timeout", "30"])
    assert waited.returncode == 3
    (entry,) = read_log(nexus_home, "slow")
    assert entry["exit"] == 3 and entry["error"] == "oops"
    logs = script_runner.run(["nexus", "job", "logs", job])
    assert logs.stdout == "done\n" and logs.stderr == "oops\n"
    assert json.loads(script_runner.run(["nexus", "jobs", "--json"]).stdout)[0]["status"] == "finished"


def test_job_kill_leaves_no_process_behind(script_runner, workspace, bindir, tmp_path):
    pids = tmp_path / "pids"
    make_tool(bindir, "forks", f"#!/bin/sh\nsleep 300 &\necho $! > {pids}\necho $$ >> {pids}\nsleep 300\n")
    write_skill(workspace, "forks", meta={"tool": "forks"})
    job = script_runner.run(["nexus", "skill", "run", "forks", "--background"]).stdout.strip()
    for _ in range(200):
        if pids.exists() and len(pids.read_text().split()) == 2:
            break
        time.sleep(0.05)
    killed = json.loads(script_runner.run(["nexus", "job", "kill", job, "--json"]).stdout)
    assert killed["status"] == "killed" and killed["exit"] == 128 + 15
    assert not [pid for pid in map(int, pids.read_text().split()) if running(pid)]


def running(pid):
    """Whether a process runs: one that has ended is gone, or a zombie that an init which reaps late still lists."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_timed_out_job_is_logged_as_such(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "hangs", "#!/bin/sh\nsleep 300\n")
    write_skill(workspace, "hangs", meta={"tool": "hangs"})
    job = script_runner.run(["nexus", "skill", "run", "hangs", "--background", "--timeout", "0.5"]).stdout.strip()
    assert script_runner.run(["nexus", "job", "wait", job, "--timeout", "30"]).returncode == 124
    assert json.loads(script_runner.run(["nexus", "job", "show", job, "--json"]).stdout)["status"] == "timed-out"
    (entry,) = read_log(nexus_home, "hangs")
    assert entry["exit"] == 124 and entry["error"] == "timed out after 0.5 s"


def test_bad_job_ids_and_prompt_skills_in_the_background_are_refused(script_runner, workspace):
    assert script_runner.run(["nexus", "job", "show", "../etc"]).returncode == 2
    assert script_runner.run(["nexus", "job", "show", "0123-abc"]).returncode == 1
    write_skill(workspace, "notes")
    refused = script_runner.run(["nexus", "skill", "run", "notes", "--background"])
    assert refused.returncode == 2 and "nothing to run in the background" in refused.stderr


def test_a_replay_says_when_a_steps_output_differs_from_its_session(script_runner, workspace, bindir, nexus_home,
                                                                    tmp_path, monkeypatch):
    """skills spec 9.2: a call whose output nexus held (--json here) keeps a fingerprint; its replay compares
    the step's output with it and says on stderr and in the log when it differs. A streamed call is not read."""
    answer = tmp_path / "answer"
    answer.write_text("42\n")
    monkeypatch.setenv("ANSWER_FILE", str(answer))
    make_tool(bindir, "answer", '#!/bin/sh\ncat "$ANSWER_FILE"\n')
    write_skill(workspace, "answer", meta={"tool": "answer"})
    assert run_in_session("s-fp", "answer", "--json", "--", "held").returncode == 0
    assert run_in_session("s-fp", "answer", "--", "streamed").returncode == 0
    held = read_log(nexus_home, "answer")[0]["output"]
    assert script_runner.run(["nexus", "session", "crystallize", "s-fp", "--name", "ask-again"]).returncode == 0
    same = subprocess.run(["nexus", "skill", "run", "ask-again"], capture_output=True, text=True)
    assert (same.returncode, same.stdout) == (0, "42\n42\n") and "differs" not in same.stderr, same.stderr
    compared, streamed = read_log(nexus_home, "answer")[-2:]
    assert compared["output"] == held and "outputDiffers" not in compared and "output" not in streamed
    answer.write_text("43!\n")
    other = subprocess.run(["nexus", "skill", "run", "ask-again"], capture_output=True, text=True)
    assert (other.returncode, other.stdout) == (0, "43!\n43!\n")  # shown as it is: a difference is said, not a failure
    assert other.stderr.count("differs") == 1
    assert "answer: its output differs from the one the crystallized session saw (3 bytes then, 4 now)" in other.stderr
    compared, streamed = read_log(nexus_home, "answer")[-2:]
    assert compared["outputDiffers"] == held and compared["output"]["bytes"] == 4 and "outputDiffers" not in streamed


def test_sessions_show_the_newest_twenty_at_80_columns_and_say_how_to_see_the_rest(script_runner, workspace,
                                                                                   nexus_home):
    import datetime

    from helpers import on_terminal, write_log

    write_skill(workspace, "feed", meta={"tool": "sh"})
    now = datetime.datetime.now(datetime.timezone.utc)
    write_log(nexus_home, "feed", [
        {"ts": (now - datetime.timedelta(minutes=30 - n)).strftime("%Y-%m-%dT%H:%M:%S.000Z"), "skill": "feed",
         "type": "tool", "ms": 5, "exit": 0, "session": f"s{n:02d}", "client": "claude-code/2.1.3"}
        for n in range(25)])
    code, shown, _ = on_terminal(["nexus", "sessions"], 80)
    lines = shown.splitlines()
    assert code == 0 and len(lines) == 22 and all(len(line) <= 80 for line in lines), shown
    assert lines[0].split() == ["SESSION", "LAST", "CALLS", "FAILED", "REFUSED", "CLIENT", "SKILLS"]  # FIRST gave way
    assert lines[1].startswith("s24 ") and "claude-code/2.1.3  feed" in lines[1]  # whole, the year left out
    assert lines[-1] == "... and 5 older sessions: nexus sessions --all, or --limit N"
    assert len(script_runner.run(["nexus", "sessions", "--all"]).stdout.splitlines()) == 26
    assert len(script_runner.run(["nexus", "sessions", "--limit", "3"]).stdout.splitlines()) == 5
    assert len(json.loads(script_runner.run(["nexus", "sessions", "--json"]).stdout)) == 25  # data: every one


@pytest.mark.once
def test_large_logs_summed_in_processes_give_the_sessions_of_one_pass(script_runner, nexus_home):
    """Over 16 MB of logs are summed by a process per CPU and merged (sessions.summary): every figure is
    what one pass over the lines gives, and each log's unreadable lines are said in the logs' order."""
    import random

    rng, expected, logs = random.Random(44), {}, []
    for n, name in enumerate(("alpha", "beta", "gamma")):
        lines = []
        for i in range(30_000 + n * 5_000):
            entry = {"ts": f"2026-11-{rng.randint(1, 30):02d}T{rng.randint(0, 23):02d}:00:00.000Z", "skill": name,
                     "type": "tool", "ms": 5, "args": ["x" * 120, str(i)], "exit": rng.choice([0, 0, 1]),
                     "session": f"s{i % 97}", **({"client": f"c{i % 3}"} if i % 5 == 0 else {}),
                     **({"refused": "disabled"} if i % 11 == 0 else {})}
            lines.append(entry)
            item = expected.setdefault(entry["session"], {"id": entry["session"], "first": entry["ts"], "last": entry["ts"],
                                                          "calls": 0, "skills": set(), "failures": 0, "refused": 0,
                                                          "clients": set(), "profiles": []})
            item["calls"] += 1
            item["first"], item["last"] = min(item["first"], entry["ts"]), max(item["last"], entry["ts"])
            item["skills"].add(name)
            item["clients"] |= {entry["client"]} if "client" in entry else set()
            item["refused" if "refused" in entry else "failures"] += bool("refused" in entry or entry["exit"])
        lines.insert(n * 7, "{torn")
        logs.append(write_log(nexus_home, name, lines))
    assert sum(path.stat().st_size for path in logs) > 16 * 1024 * 1024
    done = script_runner.run(["nexus", "sessions", "--json"])
    assert done.returncode == 0, done.stderr
    found = {s["id"]: s for s in json.loads(done.stdout)}
    assert found == {id: {**s, "skills": sorted(s["skills"]), "clients": sorted(s["clients"])}
                     for id, s in expected.items()}
    assert done.stderr.splitlines() == [f"nexus: {path}: 1 unreadable line skipped (line {n * 7 + 1})"
                                        for n, path in enumerate(logs)]
