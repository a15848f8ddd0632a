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
