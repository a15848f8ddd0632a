"""Hostile data on every surface a review found one getting through: URLs with credentials in any spelling,
staging left on a full disk, records on disk of the wrong shape (job.json, log lines, the lockfile, client
files), YAML and TOML bombs, masking per occurrence, the modes a copy writes."""

import json
import os

import pytest
from helpers import write_skill


@pytest.fixture
def managed(tmp_path):
    return tmp_path / "managed"


def add(script_runner, *args):
    return script_runner.run(["nexus", "skills", "add", *map(str, args)])


@pytest.mark.parametrize("url", ["HTTPS://ghp_SECRET99@github.com/a/b", "Http://me:SECRET99@host/r",
                                 "https://github.com/a/b.git?access_token=SECRET99",
                                 "https://github.com/a/b.git#SECRET99", "me:SECRET99@host:a/b.git",
                                 "FTP://me:SECRET99@host/r", "SSH://git:SECRET99@host/r"])
def test_a_credential_in_any_spelling_of_a_url_is_refused_and_never_shown(script_runner, managed, url):
    result = add(script_runner, url)
    assert result.returncode == 2 and "credentials" in result.stderr, result.stderr
    assert "SECRET99" not in result.stderr + result.stdout
    assert not (managed / ".nexus-lock.json").exists()


@pytest.mark.parametrize("url", ["FTP://host/r", "Ext::sh -c x"])
def test_a_url_of_another_scheme_is_refused_in_any_case(script_runner, url):
    result = add(script_runner, url)
    assert result.returncode == 1 and "URLs are fetched" in result.stderr, result.stderr


@pytest.fixture
def echo_skill(workspace, bindir):
    from helpers import make_tool

    make_tool(bindir, "echoer", '#!/bin/sh\nprintf "%s\\n" "$*"\n')
    write_skill(workspace, "echoer", "Echo the words.", meta={"tool": "echoer"})
    return workspace


def test_the_telemetry_endpoint_s_credentials_are_never_shown(script_runner, echo_skill, monkeypatch):
    pytest.importorskip("opentelemetry.proto", reason="the otel extra is not installed")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "HTTP://me:SECRET99@127.0.0.1:1/v1/traces?key=SECRET98")
    assert script_runner.run(["nexus", "skill", "run", "echoer", "hi"]).returncode == 0
    dry = script_runner.run(["nexus", "telemetry", "push", "--dry-run", "--json"])
    assert dry.returncode == 0 and "SECRET9" not in dry.stdout + dry.stderr
    assert json.loads(dry.stdout)["endpoint"] == "http://***@127.0.0.1:1/v1/traces?***"
    pushed = script_runner.run(["nexus", "telemetry", "push"])
    assert pushed.returncode == 1 and "cannot send" in pushed.stderr and "SECRET9" not in pushed.stderr + pushed.stdout


def limited(argv, max_bytes):
    """Run a console script unable to write a file past `max_bytes` (EFBIG: as a full disk fails a write)."""
    import resource
    import shutil
    import subprocess

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return subprocess.run([shutil.which(argv[0]), *argv[1:]], capture_output=True, text=True, preexec_fn=limit)


def stray(folder):
    return sorted(n for n in os.listdir(folder) if n.startswith(".") and n.endswith((".new", ".old")))


def test_a_copy_that_fails_leaves_no_staging_and_a_later_add_sweeps_old_ones(tmp_path, managed, script_runner):
    big = write_skill(tmp_path / "team", "big")
    (big / "data.bin").write_bytes(b"x" * 3_000_000)
    write_skill(tmp_path / "other", "small")
    assert add(script_runner, tmp_path / "other", "--copy").returncode == 0  # the folder and its lock exist
    failed = limited(["nexus", "skills", "add", str(tmp_path / "team"), "--copy"], 1_000_000)
    assert failed.returncode == 1 and "cannot place skill 'big'" in failed.stderr, failed.stderr
    assert stray(managed) == [] and not (managed / "big").exists()
    (managed / ".gone.4242.new").mkdir()  # what a run killed mid-copy left
    (managed / ".gone.4242.new" / "file").write_bytes(b"x")
    (managed / ".small.4243.old").mkdir()
    (managed / ".keep.me").mkdir()  # not nexus's: kept
    assert add(script_runner, tmp_path / "other", "--copy").returncode == 0
    assert stray(managed) == [] and (managed / ".keep.me").is_dir() and (managed / "small" / "SKILL.md").is_file()


def test_a_copy_writes_fixed_modes(tmp_path, managed, script_runner):
    skill = write_skill(tmp_path / "team", "modes")
    (skill / "run.sh").write_text("#!/bin/sh\n")
    (skill / "run.sh").chmod(0o4777)
    (skill / "notes.txt").write_text("n\n")
    (skill / "notes.txt").chmod(0o666)
    (skill / "sub").mkdir()
    (skill / "sub" / "x").write_text("x\n")
    (skill / "sub").chmod(0o777)
    result = add(script_runner, tmp_path / "team", "--copy")
    assert result.returncode == 0, result.stderr
    mode = {rel: (managed / "modes" / rel).stat().st_mode & 0o7777 for rel in ("", "run.sh", "notes.txt", "sub", "sub/x")}
    assert mode == {"": 0o755, "run.sh": 0o755, "notes.txt": 0o644, "sub": 0o755, "sub/x": 0o644}


def write_job(nexus_home, job_id, **fields):
    where = nexus_home / "state" / "nexus" / "jobs" / job_id
    where.mkdir(parents=True, exist_ok=True)
    (where / "job.json").write_text(json.dumps({"id": job_id, **fields}))
    for name in ("stdout", "stderr"):
        (where / name).write_bytes(b"")
    return where


GOOD_JOB = {"skill": "echoer", "status": "finished", "started": "2026-01-01T00:00:00Z", "ended": "2026-01-01T00:00:01Z",
            "exit": 0, "ms": 5, "args": []}


@pytest.mark.parametrize("bad", [{"skill": None}, {"supervisor": "x", "status": "running"},
                                 {"supervisor": True, "status": "running"}, {"pid": 0, "status": "running"},
                                 {"status": 7}, {"exit": "0"}, {"args": "rm -rf"}, {"skill": "../x"}])
def test_a_malformed_job_json_is_said_and_skipped_never_a_traceback(script_runner, nexus_home, bad):
    write_job(nexus_home, "aaaa-0001", **GOOD_JOB)
    fields = {k: v for k, v in {**GOOD_JOB, **bad}.items() if v is not None}
    write_job(nexus_home, "aaaa-0002", **fields)
    listed = script_runner.run(["nexus", "jobs", "--json"])
    assert listed.returncode == 0, listed.stderr
    assert [j["id"] for j in json.loads(listed.stdout)] == ["aaaa-0001"]
    assert "aaaa-0002/job.json' is not a job's record" in listed.stderr and "Traceback" not in listed.stderr
    for argv in (["job", "wait", "aaaa-0002", "--timeout", "5"], ["job", "show", "aaaa-0002"],
                 ["job", "kill", "aaaa-0002"], ["job", "logs", "aaaa-0002"]):
        done = script_runner.run(["nexus", *argv])
        assert done.returncode == 2 and "is not a job's record" in done.stderr, (argv, done.stderr)


def test_a_job_started_on_a_full_disk_leaves_no_folder_and_rotate_removes_old_husks(script_runner, echo_skill,
                                                                                     nexus_home):
    assert script_runner.run(["nexus", "skill", "run", "echoer", "warm"]).returncode == 0  # verified, cached
    jobs = nexus_home / "state" / "nexus" / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    failed = limited(["nexus", "skill", "run", "echoer", "--background", "--", "x" * 300], 200)
    assert failed.returncode == 1 and "cannot start a background job" in failed.stderr, failed.stderr
    assert os.listdir(jobs) == []
    husk = jobs / "dead-beef"  # one an older nexus left
    husk.mkdir()
    (husk / "stdout").write_bytes(b"")
    os.utime(husk, (0, 0))
    fresh = jobs / "feed-beef"  # one starting right now: kept
    fresh.mkdir()
    rotated = script_runner.run(["nexus", "skills", "rotate", "--json"])
    assert rotated.returncode == 0 and json.loads(rotated.stdout)["jobsRemoved"] == 1, rotated.stderr
    assert os.listdir(jobs) == ["feed-beef"]


def mcp_config(script_runner, *argv):
    return script_runner.run(["nexus", "mcp", "config", *map(str, argv)])


@pytest.mark.parametrize("servers", ['[[mcp_servers]]\nname = "x"\n', 'mcp_servers = "x"\n', "mcp_servers = 3\n",
                                     "mcp_servers = [1, 2]\n"])
@pytest.mark.parametrize("action", ["--write", "--remove"])
def test_codex_servers_that_are_not_a_table_are_a_clear_error(script_runner, tmp_path, servers, action):
    path = tmp_path / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(servers)
    done = mcp_config(script_runner, "--client", "codex", action, "--dir", tmp_path)
    assert done.returncode == 2 and "'mcp_servers' is" in done.stderr and "not a table of servers" in done.stderr
    assert "Traceback" not in done.stderr and path.read_text() == servers


def test_remove_keeps_a_customised_entry_unless_forced(script_runner, tmp_path):
    path = tmp_path / ".cursor" / "mcp.json"
    path.parent.mkdir()
    mine = '{"mcpServers": {"nexus": {"command": "/opt/my-nexus-mcp", "args": ["--verbose"]}, "o": {}}}\n'
    path.write_text(mine)
    argv = ["--client", "cursor", "--remove", "--dir", tmp_path]
    kept = mcp_config(script_runner, *argv)
    assert kept.returncode == 1 and "--force removes it" in kept.stderr and path.read_text() == mine
    assert '-  "command": "/opt/my-nexus-mcp"' in kept.stderr
    assert mcp_config(script_runner, *argv, "--force").returncode == 0
    assert json.loads(path.read_text()) == {"mcpServers": {"o": {}}}
    assert mcp_config(script_runner, "--client", "cursor", "--write", "--dir", tmp_path).returncode == 0
    removed = mcp_config(script_runner, *argv)  # nexus's own entry goes without --force
    assert removed.returncode == 0 and json.loads(path.read_text()) == {"mcpServers": {"o": {}}}


BOMB = "\n".join(['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'] +
                 [f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]) + "\n"


def test_a_yaml_alias_bomb_is_refused_at_once(script_runner, tmp_path):
    import time

    path = tmp_path / ".continue" / "mcpServers" / "nexus.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(BOMB)
    assert len(BOMB) < 400
    started = time.monotonic()
    for action in ("--write", "--remove"):
        done = mcp_config(script_runner, "--client", "continue", action, "--dir", tmp_path)
        assert done.returncode == 2 and "aliases expand it by more than" in done.stderr, done.stderr
    assert time.monotonic() - started < 30 and path.read_text() == BOMB  # minutes and gigabytes before
    path.write_text("a: &a [x, y]\nb: *a\nc: *a\n")  # an anchor used as anchors are: read
    assert mcp_config(script_runner, "--client", "continue", "--write", "--dir", tmp_path).returncode == 1


@pytest.mark.parametrize("text", ["a = " + "[" * 800 + "]" * 800 + "\n", "[" + ".".join(["a"] * 800) + "]\nx = 1\n",
                                  "a = " + "{b = " * 800 + "1" + "}" * 800 + "\n"])
def test_a_config_nested_800_deep_is_a_one_line_error(script_runner, nexus_home, tmp_path, text):
    nexus_home.mkdir(parents=True, exist_ok=True)
    (nexus_home / "nexus.toml").write_text(text)
    done = script_runner.run(["nexus", "skills", "list"])
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().endswith("nested more than 64 deep") and len(done.stderr.strip().splitlines()) == 1
    codex = tmp_path / "project" / ".codex" / "config.toml"
    codex.parent.mkdir(parents=True)
    codex.write_text(text)
    done = mcp_config(script_runner, "--client", "codex", "--write", "--dir", tmp_path / "project")
    assert done.returncode == 2 and "nested more than 64 deep" in done.stderr and "Traceback" not in done.stderr


def test_a_json_record_nested_100000_deep_is_unreadable_not_a_traceback(script_runner, nexus_home):
    where = write_job(nexus_home, "aaaa-0003", **GOOD_JOB)
    (where / "job.json").write_text("[" * 100000 + "]" * 100000)
    done = script_runner.run(["nexus", "jobs"])
    assert done.returncode == 0 and "nested too deeply" in done.stderr and "Traceback" not in done.stderr


def test_crlf_yaml_keeps_its_line_endings(script_runner, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "xdg" / "goose" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"GOOSE_MODEL: x\r\nextensions:\r\n  other:\r\n    cmd: other\r\n")
    done = mcp_config(script_runner, "--client", "goose", "--write")
    assert done.returncode == 0, done.stderr
    data = path.read_bytes()
    assert b"nexus" in data and data.count(b"\n") == data.count(b"\r\n")
    block = tmp_path / ".continue" / "mcpServers" / "nexus.yaml"
    block.parent.mkdir(parents=True)
    block.write_bytes(b"name: mine\r\n")
    done = mcp_config(script_runner, "--client", "continue", "--write", "--force", "--dir", tmp_path)
    assert done.returncode == 0 and block.read_bytes().count(b"\n") == block.read_bytes().count(b"\r\n")


def test_crystallize_replays_a_literal_star_star_star_next_to_a_masked_secret_as_it_was(
        script_runner, workspace, bindir, tmp_path, nexus_home, monkeypatch):
    import subprocess

    from helpers import make_tool, read_log

    out = tmp_path / "calls.txt"
    make_tool(bindir, "keeper", f'#!/bin/sh\nprintf "%s\\n" "$@" >> {out}\n')
    write_skill(workspace, "keeper", meta={"tool": "keeper", "requires": {"env": ["KEEP_TOKEN"]}})
    monkeypatch.setenv("KEEP_TOKEN", "token-123456789")
    done = subprocess.run(["nexus", "skill", "run", "keeper", "--", "a=***,key=token-123456789,b=***", "***"],
                          env={**os.environ, "NEXUS_SESSION_ID": "s-stars"}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    logged = read_log(nexus_home, "keeper")[-1]
    assert logged["args"] == ["a=***,key=***,b=***", "***"] and logged["maskedAt"] == [[0, 10]]
    made = script_runner.run(["nexus", "session", "crystallize", "s-stars", "--name", "stars", "--var", "key=***"])
    assert made.returncode == 0, made.stderr
    out.unlink()
    replay = script_runner.run(["nexus", "skill", "run", "stars", "--", "--key", "other-secret-1"])
    assert replay.returncode == 0, replay.stderr
    assert out.read_text() == "a=***,key=other-secret-1,b=***\n***\n"


CRAFTED = [{"args": [1, {"a": 2}]}, {"args": "abc"}, {"ms": "z", "exit": "0", "error": 5}, {"skill": "../../x"},
           {"truncated": "yes"}, {"maskedAt": [[0, "x"]]}, {"masked": [[1]]}, {"output": 5}, {"refused": 3}]


def test_crafted_log_lines_are_skipped_as_unreadable_by_session_show_and_crystallize(script_runner, workspace,
                                                                                     nexus_home):
    from helpers import write_log

    write_skill(workspace, "x", meta={"tool": "x"})
    good = {"ts": "2026-01-01T00:00:00Z", "skill": "x", "type": "tool", "ms": 1, "exit": 0, "args": ["ok"],
            "session": "s1"}
    write_log(nexus_home, "x", [good] + [{**good, "ts": "2026-01-01T00:00:01Z", **bad} for bad in CRAFTED]
              + ["[" * 5000, "not json"])
    for argv in (["session", "show", "s1"], ["session", "show", "s1", "--json"], ["sessions"],
                 ["session", "crystallize", "s1", "--name", "y", "--dry-run"]):
        done = script_runner.run(["nexus", *argv])
        assert done.returncode == 0 and "Traceback" not in done.stderr, (argv, done.stderr)
        assert f"{len(CRAFTED) + 2} unreadable lines skipped (line 2 and more)" in done.stderr, done.stderr
    shown = json.loads(script_runner.run(["nexus", "session", "show", "s1", "--json"]).stdout)
    assert [c["args"] for c in shown] == [["ok"]]


@pytest.mark.parametrize("entry", [{"source": 7, "path": "."}, {"source": "/x", "path": ["a"]}, {"sha256": None},
                                   {"audit": "x"}, "text"])
@pytest.mark.parametrize("argv", [["update"], ["remove", "alpha"], ["add", "SRC"]])
def test_a_lockfile_entry_of_the_wrong_shape_is_a_one_line_error(script_runner, tmp_path, managed, entry, argv):
    write_skill(tmp_path / "team", "alpha")
    managed.mkdir()
    text = json.dumps({"version": 1, "skills": {"alpha": entry if isinstance(entry, str) else
                                                {"placement": "link", **entry}}})
    (managed / ".nexus-lock.json").write_text(text)
    done = script_runner.run(["nexus", "skills", *[str(tmp_path / "team") if a == "SRC" else a for a in argv]])
    assert done.returncode == 2 and "is corrupt: skill 'alpha'" in done.stderr and "Traceback" not in done.stderr
    assert (managed / ".nexus-lock.json").read_text() == text


def test_an_old_lockfile_s_credentials_are_never_shown_by_update(script_runner, managed):
    managed.mkdir()
    (managed / ".nexus-lock.json").write_text(json.dumps({"version": 1, "skills": {"alpha": {
        "source": "HTTPS://ghp_SECRET99@github.com/a/b.git", "sourceType": "git", "path": ".", "placement": "copy",
        "sha256": "0" * 64}}}))
    (managed / "alpha").mkdir()
    done = script_runner.run(["nexus", "skills", "update", "--json"])
    assert "SECRET99" not in done.stdout + done.stderr and "credentials" in done.stdout + done.stderr


def test_add_force_never_deletes_a_folder_update_force_keeps(script_runner, tmp_path, managed):
    source = tmp_path / "team"
    write_skill(source, "alpha", description="From the team.")
    assert add(script_runner, source).returncode == 0  # a link
    (managed / "alpha").unlink()
    write_skill(managed, "alpha", description="Mine, where the link was.")
    updated = script_runner.run(["nexus", "skills", "update", "--force"])
    assert "kept" in updated.stdout + updated.stderr and "Mine" in (managed / "alpha" / "SKILL.md").read_text()
    forced = add(script_runner, source, "--force")
    assert forced.returncode == 1 and "a folder where nexus placed a link: kept, even with --force" in forced.stderr
    assert "Mine, where the link was." in (managed / "alpha" / "SKILL.md").read_text()


def test_a_source_s_folder_names_never_reach_the_terminal_raw(script_runner, tmp_path, managed):
    source = tmp_path / "src"
    write_skill(source, "good", folder="evil\n\x1b[31mRED\x1b[0m")
    write_skill(source, "Bad_Name", folder="bad\x1b]0;title\x07\n")
    (source / "link\n\x1b[31m").symlink_to(tmp_path)
    for argv in (["--list"], [], ["--json"]):
        done = add(script_runner, source, *argv)
        text = done.stdout + done.stderr
        assert "evil" in text or "--json" in argv
        if "--json" not in argv:
            assert "\x1b" not in text and "\x07" not in text, text
            assert all(line.startswith(("nexus: ", "added ", "unchanged ", "(invalid)", "good ")) for line in
                       text.splitlines()), text


@pytest.mark.script_launch_mode("subprocess")  # job logs writes to its file descriptors
def test_job_logs_masks_what_nexus_run_json_masks(script_runner, workspace, bindir, monkeypatch):
    from helpers import make_tool

    secret = "s3cr3t-value-42"
    make_tool(bindir, "leaky", '#!/bin/sh\nhead -c 65530 /dev/zero | tr "\\0" x\necho "$LEAK_KEY."\n'
                               'echo "err $LEAK_KEY" >&2\n')
    write_skill(workspace, "leaky", meta={"tool": "leaky", "requires": {"env": ["LEAK_KEY"]}, "primaryEnv": "LEAK_KEY"})
    monkeypatch.setenv("LEAK_KEY", secret)
    direct = script_runner.run(["nexus-run", "leaky", "--json"])
    assert direct.returncode == 0 and secret not in direct.stdout
    started = script_runner.run(["nexus", "skill", "run", "leaky", "--background"])
    job = started.stdout.strip()
    assert script_runner.run(["nexus", "job", "wait", job, "--timeout", "60"]).returncode == 0
    for argv in (["job", "logs", job], ["job", "logs", job, "--follow"]):
        shown = script_runner.run(["nexus", *argv])
        assert shown.returncode == 0 and secret not in shown.stdout + shown.stderr
        assert shown.stdout.endswith("x***.\n") and len(shown.stdout) == 65530 + 5 and shown.stderr == "err ***\n"


def test_a_look_alike_unicode_name_is_refused_by_add_unless_forced(script_runner, tmp_path, managed):
    source = tmp_path / "src"
    write_skill(source, "g\u0456thub", folder="one")  # a Cyrillic і
    write_skill(source, "na\u00efve-g\u0456t", folder="two")
    write_skill(source, "caf\u00e9", folder="three")  # one script, as the spec allows: added
    done = add(script_runner, source)
    assert done.returncode == 1 and "reads as 'github'" in done.stderr and "mixes CYRILLIC and LATIN" in done.stderr
    assert done.stdout == "added caf\u00e9 (link, three)\n"
    forced = add(script_runner, source, "--force")
    assert forced.returncode == 0 and "added g\u0456thub" in forced.stdout


def test_remove_takes_the_skill_s_own_state_and_tmp_folders_with_it(script_runner, tmp_path, managed, nexus_home):
    from helpers import state_dir

    write_skill(tmp_path / "team", "alpha")
    assert add(script_runner, tmp_path / "team").returncode == 0
    for folder in ("data", "tmp"):
        (state_dir(nexus_home, "alpha") / folder).mkdir(parents=True)
        (state_dir(nexus_home, "alpha") / folder / "token.json").write_text("{}")
    assert script_runner.run(["nexus", "skills", "remove", "alpha"]).returncode == 0
    assert not (state_dir(nexus_home, "alpha") / "data").exists()
    assert not (state_dir(nexus_home, "alpha") / "tmp").exists()


def test_a_large_client_file_is_edited_without_reading_it_a_character_at_a_time(script_runner, tmp_path):
    import time

    path = tmp_path / ".cursor" / "mcp.json"
    path.parent.mkdir()
    history = [{"display": "x" * 1000 + str(i), "files": ["a.py", "b.py"]} for i in range(30_000)]
    text = json.dumps({"mcpServers": {"other": {"command": "o"}}, "projects": {"p": {"history": history}}}, indent=2)
    path.write_text(text)
    assert len(text) > 30_000_000
    started = time.monotonic()
    done = mcp_config(script_runner, "--client", "cursor", "--write", "--dir", tmp_path)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert json.loads(path.read_text())["projects"]["p"]["history"] == history
    assert took < 30, took  # 3 s here, 9 s on a busy machine; a reader that went a character at a time: 73 s
