"""The gateway under hostile input: every call is recorded, nothing crashes, nothing runs or is written where
it should not, and state.json says what is true. Through the real scripts, in subprocess mode."""

import json
import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest
from helpers import by_name, make_tool, read_log, read_state, state_dir, write_config, write_skill

pytestmark = pytest.mark.script_launch_mode("subprocess")

ARGV_TOOL = """#!/usr/bin/env python3
import os, sys
with open(os.environ["ARGV_OUT"], "wb") as f:
    f.write(b"\\0".join(os.fsencode(a) for a in sys.argv[1:]))
"""


@pytest.fixture
def argv_tool(workspace, bindir, tmp_path, monkeypatch):
    out = tmp_path / "argv.bin"
    monkeypatch.setenv("ARGV_OUT", str(out))
    make_tool(bindir, "argv", ARGV_TOOL)
    write_skill(workspace, "argv", meta={"tool": "argv"})
    return out


# -- records survive any call ------------------------------------------------------------------------


def test_huge_arguments_are_cut_in_the_log_and_erase_nothing(script_runner, argv_tool, nexus_home):
    write_config(nexus_home, "[skills.log]\nmaxBytes = 20000\n")
    for n in range(3):
        assert script_runner.run(["nexus", "skill", "run", "argv", "--", f"small-{n}"]).returncode == 0
    huge = ["\x01" * 100_000, "x" * 100_000, "y" * 100_000]  # JSON escapes a control character as six bytes
    result = script_runner.run(["nexus", "skill", "run", "argv", "--", *huge])
    assert result.returncode == 0, result.stderr
    assert argv_tool.read_bytes() == "\0".join(huge).encode()  # the tool got every byte
    log = read_log(nexus_home, "argv")
    assert [e["args"] for e in log[:3]] == [["small-0"], ["small-1"], ["small-2"]]
    assert log[3]["truncated"] is True and log[3]["args"][0].startswith("\x01")
    assert len((state_dir(nexus_home, "argv") / "usage.log").read_bytes().splitlines()[3]) <= 9000
    assert read_state(nexus_home, "argv")["totalInvocations"] == len(log) == 4


def test_pruning_skips_a_line_too_big_for_the_log_instead_of_stopping_at_it(script_runner, argv_tool, nexus_home):
    write_config(nexus_home, "[skills.log]\nmaxBytes = 2000\n")
    folder = state_dir(nexus_home, "argv")
    folder.mkdir(parents=True)
    old = [json.dumps({"ts": "2026-01-01T00:00:00.000Z", "skill": "argv", "type": "tool", "ms": 1, "exit": 0,
                       "args": [f"old-{n}"]}) for n in range(3)]
    giant = json.dumps({"ts": "2026-01-01T00:00:00.000Z", "skill": "argv", "type": "tool", "ms": 1, "exit": 0,
                        "args": ["g" * 5000]})
    (folder / "usage.log").write_text("\n".join([old[0], giant, *old[1:]]) + "\n")
    assert script_runner.run(["nexus", "skill", "run", "argv", "--", "new"]).returncode == 0
    assert [e["args"] for e in read_log(nexus_home, "argv")] == [["old-0"], ["old-1"], ["old-2"], ["new"]]


def test_arguments_that_are_not_utf8_reach_the_tool_and_the_log_round_trips(argv_tool, nexus_home):
    argv = [b"nexus", b"skill", b"run", b"argv", b"--", b"caf\xe9", b"\xff\xfe ok"]
    done = subprocess.run(argv, capture_output=True)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert argv_tool.read_bytes() == b"caf\xe9\0\xff\xfe ok"
    (entry,) = read_log(nexus_home, "argv")
    assert [os.fsencode(a) for a in entry["args"]] == [b"caf\xe9", b"\xff\xfe ok"]  # \udcXX escapes, as documented
    dry = subprocess.run([*argv[:4], b"--dry-run", b"--json", b"--", b"\xff"], capture_output=True)
    assert dry.returncode == 0 and os.fsencode(json.loads(dry.stdout)["argv"][-1]) == b"\xff"
    human = subprocess.run([*argv[:4], b"--dry-run", b"--", b"\xff"], capture_output=True)
    assert human.returncode == 0 and b"Traceback" not in human.stderr
    make_tool(pathlib.Path(os.environ["PATH"].split(os.pathsep)[0]), "emit", "#!/bin/sh\nprintf 'a\\377b'\n")
    write_skill(pathlib.Path(os.environ["NEXUS_HOME"]) / "skills", "emit", meta={"tool": "emit"})
    captured = subprocess.run([b"nexus", b"skill", b"run", b"emit", b"--json"], capture_output=True)
    assert captured.returncode == 0, captured.stderr
    assert os.fsencode(json.loads(captured.stdout)["stdout"]) == b"a\xffb"


def test_a_torn_last_line_does_not_swallow_the_next_entry(script_runner, argv_tool, nexus_home):
    assert script_runner.run(["nexus", "skill", "run", "argv", "--", "one"]).returncode == 0
    log = state_dir(nexus_home, "argv") / "usage.log"
    with open(log, "ab") as f:
        f.write(b'{"ts": "2026-01-01T00:00:00.000Z", "skill": "argv", "ty')  # a crash in the middle of a write
    assert script_runner.run(["nexus", "skill", "run", "argv", "--", "two"]).returncode == 0
    lines = log.read_text().splitlines()
    assert json.loads(lines[0])["args"] == ["one"] and json.loads(lines[-1])["args"] == ["two"]
    assert len(lines) == 3


@pytest.mark.parametrize("broken", ['{"totalInvocations": "abc", "configured": true}', "[]", '{"version": 99}',
                                    '{"version": 1, "configured": "yes", "fingerprint": 3}', "{not json"])
def test_state_of_the_wrong_shape_is_repaired_and_kept_beside(script_runner, argv_tool, nexus_home, broken):
    folder = state_dir(nexus_home, "argv")
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(broken)
    result = script_runner.run(["nexus", "skill", "run", "argv", "--", "x"])
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    warning = [line for line in result.stderr.splitlines() if "state.json" in line]
    assert warning and all(str(folder / "state.json") in line for line in warning)
    assert (folder / "state.json.corrupt").read_text() == broken  # the counters can be recovered by hand
    state = read_state(nexus_home, "argv")
    assert state["totalInvocations"] == 1 and state["version"] == 1 and state["configured"] is True
    listed = script_runner.run(["nexus", "skills", "list", "--json"])
    assert listed.returncode == 0 and by_name(json.loads(listed.stdout))["argv"]["status"] == "ready"


def test_a_full_disk_is_named_and_the_exit_status_stands(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "three", "#!/bin/sh\nexit 3\n")
    write_skill(workspace, "three", meta={"tool": "three"})
    assert script_runner.run(["nexus-run", "three"]).returncode == 3
    log = state_dir(nexus_home, "three") / "usage.log"
    log.unlink()
    log.symlink_to("/dev/full")  # every write: No space left on device
    result = script_runner.run(["nexus-run", "three"])
    assert result.returncode == 3
    assert f"could not record the call: {log}: No space left on device" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.once
def test_a_read_only_home_still_runs_verified_skills_and_shows_status(nobody):
    """As root every file is writable, so the home is root's and nexus runs as nobody."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="nexus-readonly-"))
    try:
        bindir, home = root / "bin", root / "nexus"
        bindir.mkdir()
        make_tool(bindir, "hello", "#!/bin/sh\necho hi\n")
        write_skill(home / "skills", "hello", meta={"tool": "hello"})
        env = {**os.environ, "NEXUS_HOME": str(home), "HOME": str(root), "MANAGED_SKILLS_DIR": str(root / "m"),
               "PATH": f"{bindir}:{os.environ['PATH']}"}
        assert subprocess.run(["nexus", "skill", "run", "hello"], env=env, capture_output=True).returncode == 0
        for path in [root, *root.rglob("*")]:  # readable by all, writable by root alone
            path.chmod(0o755 if path.is_dir() or path.parent == bindir else 0o644)
        ran = nobody.run(["nexus", "skill", "run", "hello"], env)
        assert ran.returncode == 0 and ran.stdout == "hi\n", ran.stderr
        assert "could not record the call" in ran.stderr and "Permission denied" in ran.stderr
        write_skill(home / "skills", "fresh")  # as root: the manifest is stale now
        (home / "skills" / "fresh").chmod(0o755)
        (home / "skills" / "fresh" / "SKILL.md").chmod(0o644)
        status = nobody.run(["nexus", "status", "--json"], env)
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["ready"] >= 2 and "cannot keep the manifest" in status.stderr
    finally:
        shutil.rmtree(root)


# -- never a traceback --------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["nexus", "skills", "list"], ["nexus", "--help"], ["nexus-discover"],
                                  ["nexus", "skill", "run", "filesystem"], ["nexus-stats"]])
def test_a_closed_stdout_is_one_line_and_exit_2(argv, workspace):
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          preexec_fn=lambda: os.close(1))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "stdout is closed" in done.stderr


def test_a_reader_closing_the_pipe_is_not_the_tool_failing(workspace, bindir, nexus_home):
    make_tool(bindir, "chatty", "#!/bin/sh\ni=0\nwhile [ $i -lt 20000 ]; do echo line $i; i=$((i+1)); done\n")
    write_skill(workspace, "chatty", meta={"tool": "chatty", "verify": "true"})
    pipeline = "nexus skill run chatty {} | head -c 100 >/dev/null; echo ${{PIPESTATUS[0]}}"
    captured = subprocess.run(["bash", "-c", pipeline.format("--json --")], capture_output=True, text=True)
    assert captured.stdout.strip() == "0" and "Traceback" not in captured.stderr, captured.stderr
    streamed = subprocess.run(["bash", "-c", pipeline.format("--")], capture_output=True, text=True)
    assert streamed.stdout.strip() == "141"  # the tool met the closed pipe itself: as a shell reports it
    log = read_log(nexus_home, "chatty")
    assert [e["exit"] for e in log] == [0, 141] and "reader closed the pipe" in log[1]["error"]
    assert read_state(nexus_home, "chatty")["configured"] is True  # still trusted: the tool did not fail


# -- nothing runs or is written where it should not -----------------------------------------------------


def test_a_relative_tool_is_refused_everywhere(script_runner, workspace, tmp_path, monkeypatch):
    (tmp_path / "evil-tool").write_text("#!/bin/sh\necho pwned\n")
    (tmp_path / "evil-tool").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    write_skill(workspace, "sneaky", meta={"tool": "./evil-tool"})
    ran = script_runner.run(["nexus", "skill", "run", "sneaky"])
    assert ran.returncode == 1 and "pwned" not in ran.stdout and "relative path" in ran.stderr
    listed = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    assert listed["sneaky"]["status"] == "invalid"
    checked = script_runner.run(["nexus", "skills", "check", "--json", str(workspace / "sneaky")])
    assert checked.returncode == 1 and [f["code"] for f in json.loads(checked.stdout)] == ["execution"]


@pytest.mark.parametrize("script", ["../../../evil.py", "/tmp/evil.py", "link/evil.py"])
def test_a_script_outside_its_folder_is_invalid_everywhere(script_runner, workspace, tmp_path, script):
    (tmp_path / "evil.py").write_text("print('escaped')\n")
    skill = write_skill(workspace, "escape", meta={"runner": "python3", "script": script})
    (skill / "link").symlink_to(tmp_path, target_is_directory=True)
    ran = script_runner.run(["nexus", "skill", "run", "escape"])
    assert ran.returncode == 1 and "escaped" not in ran.stdout and "is invalid" in ran.stderr
    listed = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    assert listed["escape"]["status"] == "invalid"
    for command in (["skills", "prompt"], ["skills", "agents-md"], ["skills", "cursor-rules"]):
        assert "escape" not in script_runner.run(["nexus", *command]).stdout
    checked = script_runner.run(["nexus", "skills", "check", "--json", str(skill)])
    assert checked.returncode == 1 and "script" in [f["code"] for f in json.loads(checked.stdout)]


def test_nothing_is_written_through_a_link_out_of_the_project(script_runner, tmp_path):
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "bashrc").write_text("keep me\n")
    (project / "AGENTS.md").symlink_to(outside / "bashrc")
    agents = script_runner.run(["nexus", "skills", "agents-md", "--write", str(project / "AGENTS.md")])
    assert agents.returncode == 1 and str(project / "AGENTS.md") in agents.stderr and "outside" in agents.stderr
    assert (outside / "bashrc").read_text() == "keep me\n"
    (project / ".cursor").symlink_to(outside, target_is_directory=True)
    rules = script_runner.run(["nexus", "skills", "cursor-rules", "--write", str(project)])
    linked = script_runner.run(["nexus", "skills", "link", "--agent", "cursor", "--dir", str(project)])
    assert rules.returncode == 1 and linked.returncode == 1 and "outside" in linked.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["bashrc"]
    (project / "CLAUDE.md").symlink_to(project / "AGENTS.md.real")
    inside = script_runner.run(["nexus", "skills", "agents-md", "--write", str(project / "CLAUDE.md")])
    assert inside.returncode == 0 and "nexus:skills:start" in (project / "AGENTS.md.real").read_text()


def test_masking_hides_whole_secrets_and_leaves_short_values_alone(script_runner, argv_tool, workspace, bindir,
                                                                  nexus_home, monkeypatch):
    write_skill(workspace, "argv", meta={"tool": "argv", "requires": {"env": ["LONG_KEY", "SHORT_KEY"]}})
    monkeypatch.setenv("LONG_KEY", "s3cret-value-123")
    monkeypatch.setenv("SHORT_KEY", "a")
    args = ["--key=s3cret-value-123", "banana", "s3cret-value-123"]
    assert script_runner.run(["nexus", "skill", "run", "argv", "--", *args]).returncode == 0
    (entry,) = read_log(nexus_home, "argv")
    assert entry["args"] == ["--key=***", "banana", "***"]  # "a" is too short to be a secret
    dry = script_runner.run(["nexus", "skill", "run", "argv", "--dry-run", "--", *args])
    assert "s3cret-value-123" not in dry.stdout and "--key=***" in dry.stdout


def test_loose_permissions_are_tightened_when_nexus_writes(script_runner, argv_tool, nexus_home):
    assert script_runner.run(["nexus", "skill", "run", "argv"]).returncode == 0
    folder = state_dir(nexus_home, "argv")
    for path, mode in ((folder, 0o755), (folder / "usage.log", 0o644), (folder / "state.json", 0o644),
                       (folder / ".lock", 0o666), (folder.parent, 0o755)):
        path.chmod(mode)
    assert script_runner.run(["nexus", "skill", "run", "argv"]).returncode == 0
    for path in (folder, folder.parent):
        assert path.stat().st_mode & 0o777 == 0o700, path
    for path in (folder / "usage.log", folder / "state.json", folder / ".lock"):
        assert path.stat().st_mode & 0o777 == 0o600, path


# -- state.json says what is true ----------------------------------------------------------------------


def test_state_says_what_is_true(script_runner, workspace, bindir, nexus_home, tmp_path):
    flag = tmp_path / "fail"
    make_tool(bindir, "flaky", f"#!/bin/sh\nif [ -e {flag} ]; then echo broken >&2; exit 1; fi\n")
    write_skill(workspace, "flaky", meta={"tool": "flaky", "verify": f"test ! -e {flag}"})
    assert script_runner.run(["nexus", "skill", "run", "flaky"]).returncode == 0
    first = read_state(nexus_home, "flaky")["configuredAt"]
    flag.touch()
    assert script_runner.run(["nexus", "skill", "run", "flaky", "--no-verify"]).returncode == 1
    assert read_state(nexus_home, "flaky")["lastError"] == "broken"
    flag.unlink()
    assert script_runner.run(["nexus", "skill", "verify", "flaky"]).returncode == 0
    assert script_runner.run(["nexus", "skill", "run", "flaky"]).returncode == 0
    state = read_state(nexus_home, "flaky")
    assert state["configuredAt"] == first and "lastError" not in state and state["configured"] is True
    write_skill(workspace, "notes")
    assert script_runner.run(["nexus", "skill", "run", "notes"]).returncode == 0
    assert read_state(nexus_home, "notes")["configured"] is True
    write_skill(workspace, "runs", meta={"runner": "python3", "script": "go.py"})
    (workspace / "runs" / "go.py").write_text("print('ok')\n")
    assert script_runner.run(["nexus", "skill", "run", "runs"]).returncode == 0
    assert read_state(nexus_home, "runs")["tool"] == "python3"
