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
