"""`nexus mcp config` (issue 16): the entry that registers nexus-mcp with a client, and --write, which adds
it to the client's project file and touches nothing else."""

import json
import os
import tomllib

import pytest

CLIENT_FILES = {"claude-code": ".mcp.json", "cursor": ".cursor/mcp.json", "vscode": ".vscode/mcp.json",
                "codex": ".codex/config.toml", "gemini": ".gemini/settings.json"}


def servers(path):
    text = path.read_text()
    if path.suffix == ".toml":
        return tomllib.loads(text)["mcp_servers"]
    document = json.loads(text)
    return document["servers" if path.name == "mcp.json" and path.parent.name == ".vscode" else "mcpServers"]


@pytest.mark.parametrize("client", CLIENT_FILES)
def test_the_entry_is_what_the_client_reads_and_write_puts_it_in_place(script_runner, tmp_path, client):
    shown = script_runner.run(["nexus", "mcp", "config", "--client", client])
    assert shown.returncode == 0 and CLIENT_FILES[client] in shown.stderr
    written = script_runner.run(["nexus", "mcp", "config", "--client", client, "--write", "--dir", str(tmp_path)])
    path = tmp_path / CLIENT_FILES[client]
    assert written.returncode == 0 and written.stdout == f"{path}\n"
    assert path.read_text() == shown.stdout  # a new file is the entry printed
    entry = servers(path)["nexus"]
    assert entry["command"] == "nexus-mcp" and entry["args"] == []
    assert entry["env"]["NEXUS_HOME"] == os.environ["NEXUS_HOME"]  # a client may not start it from this shell


def test_write_keeps_every_other_server_and_is_idempotent(script_runner, tmp_path):
    path = tmp_path / ".cursor" / "mcp.json"
    path.parent.mkdir()
    other = {"command": "npx", "args": ["-y", "other-server"], "env": {"TOKEN": "t"}}
    path.write_text(json.dumps({"mcpServers": {"other": other, "nexus": {"command": "old"}}, "extra": 1}))
    argv = ["nexus", "mcp", "config", "--client", "cursor", "--write", "--dir", str(tmp_path)]
    assert script_runner.run(argv).returncode == 0
    document = json.loads(path.read_text())
    assert document["mcpServers"]["other"] == other and document["extra"] == 1
    assert document["mcpServers"]["nexus"]["command"] == "nexus-mcp"
    before = path.stat().st_mtime_ns, path.read_text()
    assert script_runner.run(argv).returncode == 0
    assert (path.stat().st_mtime_ns, path.read_text()) == before


def test_write_keeps_every_other_line_of_a_codex_config(script_runner, tmp_path):
    path = tmp_path / ".codex" / "config.toml"
    path.parent.mkdir()
    head = '# my settings\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "other"  # keep me\n'
    tail = '\n[profiles.fast]\nmodel = "mini"\n'
    path.write_text(head + '\n[mcp_servers.nexus]\ncommand = "old"\n\n[mcp_servers.nexus.env]\nA = "1"\n' + tail)
    argv = ["nexus", "mcp", "config", "--client", "codex", "--write", "--dir", str(tmp_path)]
    assert script_runner.run(argv).returncode == 0
    text = path.read_text()
    assert text.startswith(head) and text.endswith(tail) and 'command = "old"' not in text and 'A = "1"' not in text
    assert tomllib.loads(text)["mcp_servers"]["nexus"]["command"] == "nexus-mcp"
    path.write_text(head)
    assert script_runner.run(argv).returncode == 0
    assert path.read_text().startswith(head) and "[mcp_servers.nexus]" in path.read_text()


def test_write_never_goes_through_a_symlink_out_of_the_project(script_runner, tmp_path):
    project, outside = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    outside.mkdir()
    (outside / "mcp.json").write_text("{}")
    (project / ".mcp.json").symlink_to(outside / "mcp.json")
    (project / ".cursor").symlink_to(outside)
    for client in ("claude-code", "cursor"):
        result = script_runner.run(["nexus", "mcp", "config", "--client", client, "--write", "--dir", str(project)])
        assert result.returncode == 1 and "leads outside" in result.stderr
    assert (outside / "mcp.json").read_text() == "{}" and sorted(p.name for p in outside.iterdir()) == ["mcp.json"]


def test_a_file_it_cannot_read_or_an_unknown_client_is_left_alone(script_runner, tmp_path):
    path = tmp_path / ".vscode" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{\n  // my servers\n  "servers": {}\n}\n')
    result = script_runner.run(["nexus", "mcp", "config", "--client", "vscode", "--write", "--dir", str(tmp_path)])
    assert result.returncode == 2 and "not JSON" in result.stderr and "// my servers" in path.read_text()
    result = script_runner.run(["nexus", "mcp", "config", "--client", "emacs"])
    assert result.returncode == 2 and "claude-code, cursor" in result.stderr
