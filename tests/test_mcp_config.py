"""`nexus mcp config` (issues 16 and 30): the entry that registers nexus-mcp with each client, and --write,
which puts it in the client's own file, project or user, as an editor would: only the entry's bytes
change, a customised entry is kept, a read-only file refused, a hard link kept, the old file kept as .bak."""

import json
import os
import tomllib

import pytest
import yaml

from nexus.mcp import jsonc

JSON, JSONC, TOML, YAML = "json", "jsonc", "toml", "yaml"

# client -> (format, key of its servers, project file, user file under the home folder)
CLIENTS = {
    "claude-code": (JSON, "mcpServers", ".mcp.json", ".claude.json"),
    "claude-desktop": (JSON, "mcpServers", None, ".config/Claude/claude_desktop_config.json"),
    "cursor": (JSON, "mcpServers", ".cursor/mcp.json", ".cursor/mcp.json"),
    "vscode": (JSONC, "servers", ".vscode/mcp.json", ".config/Code/User/mcp.json"),
    "windsurf": (JSON, "mcpServers", None, ".codeium/windsurf/mcp_config.json"),
    "zed": (JSONC, "context_servers", None, ".config/zed/settings.json"),
    "codex": (TOML, "mcp_servers", ".codex/config.toml", ".codex/config.toml"),
    "gemini": (JSON, "mcpServers", ".gemini/settings.json", ".gemini/settings.json"),
    "goose": (YAML, "extensions", None, ".config/goose/config.yaml"),
    "cline": (JSON, "mcpServers", None,
              ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"),
    "roo-code": (JSON, "mcpServers", ".roo/mcp.json",
                 ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json"),
    "kiro": (JSON, "mcpServers", ".kiro/settings/mcp.json", ".kiro/settings/mcp.json"),
    "copilot-cli": (JSON, "mcpServers", None, ".copilot/mcp-config.json"),
    "opencode": (JSONC, "mcp", "opencode.json", ".config/opencode/opencode.json"),
}
CASES = [(client, scope) for client, (_, _, project, user) in CLIENTS.items()
         for scope, where in (("project", project), ("user", user)) if where]

# A file of each format as people keep them: comments (where the format has them), other servers, odd
# spacing, a number JSON cannot hold, a key given twice. Everything but the nexus entry must survive.
ORIGINAL = {
    JSON: '{\n    "theme": "dark",\n    "KEY": {\n        "other": {"command": "npx", "args": ["-y", "other"]}\n'
          '    },\n    "huge": 1e400,\n    "twice": 1, "twice": 2\n}\n',
    JSONC: '// settings\n{\n  "theme": "dark", /* inline */\n  "KEY": {\n    // the servers I use\n'
           '    "other": {\n      "command": "npx",\n      "args": ["-y", "other",],\n    },  // keep me\n  },\n'
           '  "huge": 1e400,\n}\n',
    TOML: '# my settings\nmodel = "o3"   # aligned\n\n[KEY.other]\ncommand = "npx"  # keep me\n'
          'args = ["-y", "other"]\n\n[profiles.fast]\nmodel = "mini"\n',
    YAML: '# goose\nGOOSE_PROVIDER: openai   # aligned\nKEY:\n  developer:\n    enabled: true\n'
          '    type: builtin\n  # about other\n  other:\n    cmd: npx\n    args: [-y, other]\n\n'
          'GOOSE_MODEL: gpt-4o\n',
}


def read(fmt, text):
    if fmt == JSON:
        return json.loads(text)  # strict JSON: the client's own parser accepts what was written
    if fmt == JSONC:
        return jsonc.loads(text)
    if fmt == TOML:
        return tomllib.loads(text)
    return yaml.safe_load(text)


def servers(fmt, key, text):
    return read(fmt, text)[key]


@pytest.fixture
def home(tmp_path, monkeypatch):
    for name in ("XDG_CONFIG_HOME", "CODEX_HOME", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


def target(client, scope, home, project):
    _, _, in_project, in_home = CLIENTS[client]
    return project / in_project if scope == "project" else home / in_home


def run(script_runner, *argv):
    return script_runner.run(["nexus", "mcp", "config", *argv])


def inserted(old, new):
    """What `new` adds to `old` when it is `old` with text put in at one place (None otherwise): every
    byte of the old file kept, in order and together."""
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < len(old) - start and old[len(old) - 1 - end] == new[len(new) - 1 - end]:
        end += 1
    return new[start:len(new) - end] if start + end == len(old) else None


@pytest.mark.parametrize("client, scope", CASES)
def test_every_client_s_file_gets_the_entry_and_keeps_every_other_byte(script_runner, tmp_path, home, client, scope):
    fmt, key, _, _ = CLIENTS[client]
    project = tmp_path / "project"
    project.mkdir()
    path = target(client, scope, home, project)
    argv = ["--client", client, "--scope", scope, "--dir", str(project)]
    # a new file is the entry printed
    shown = run(script_runner, *argv)
    assert shown.returncode == 0, shown.stderr
    written = run(script_runner, *argv, "--write")
    assert written.returncode == 0, written.stderr
    assert written.stdout == f"{path}\n" and path.read_text() == shown.stdout
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    entry = servers(fmt, key, path.read_text())["nexus"]
    command = entry.get("command") or entry.get("cmd")
    command = command[0] if isinstance(command, list) else command
    assert os.path.isabs(command) and os.access(command, os.X_OK) and command.endswith("nexus-mcp")
    # an existing file, as people keep it: the entry goes in, every other byte stays, --remove restores it
    original = ORIGINAL[fmt].replace("KEY", key)
    path.write_text(original)
    before = read(fmt, original)
    assert run(script_runner, *argv, "--write").returncode == 0
    text = path.read_text()
    assert "nexus" in inserted(original, text)
    after = read(fmt, text)
    assert after[key].pop("nexus") == entry and after == before
    assert (path.parent / (path.name + ".bak")).read_text() == original
    again = run(script_runner, *argv, "--write")  # nothing to change: the file is not touched
    assert again.returncode == 0 and path.read_text() == text and "unchanged" in again.stderr
    removed = run(script_runner, *argv, "--remove")
    assert removed.returncode == 0 and "nexus removed" in removed.stderr
    assert path.read_text() == original


def test_continue_gets_a_file_of_its_own(script_runner, tmp_path):
    blocks = tmp_path / ".continue" / "mcpServers"
    blocks.mkdir(parents=True)
    (blocks / "other.yaml").write_text("name: other\n")
    argv = ["--client", "continue", "--dir", str(tmp_path)]
    assert run(script_runner, *argv, "--write").returncode == 0
    block = yaml.safe_load((blocks / "nexus.yaml").read_text())
    assert block["schema"] == "v1" and block["mcpServers"][0]["name"] == "nexus"
    assert block["mcpServers"][0]["command"].endswith("nexus-mcp")
    assert run(script_runner, *argv, "--remove").returncode == 0
    assert sorted(p.name for p in blocks.iterdir()) == ["nexus.yaml.bak", "other.yaml"]
    result = run(script_runner, "--client", "continue", "--scope", "user")
    assert result.returncode == 2 and "no user file" in result.stderr


def test_a_customised_entry_is_kept_unless_forced_and_the_difference_shown(script_runner, tmp_path):
    path = tmp_path / ".cursor" / "mcp.json"
    path.parent.mkdir()
    mine = '{"mcpServers": {"nexus": {"command": "/opt/my-nexus-mcp", "args": ["--verbose"]}}}\n'
    path.write_text(mine)
    argv = ["--client", "cursor", "--write", "--dir", str(tmp_path)]
    kept = run(script_runner, *argv)
    assert kept.returncode == 1 and "--force" in kept.stderr and path.read_text() == mine
    assert '-  "command": "/opt/my-nexus-mcp"' in kept.stderr and '+    "--verbose"' not in kept.stderr
    assert '-    "--verbose"' in kept.stderr
    forced = run(script_runner, *argv, "--force")
    assert forced.returncode == 0 and ".bak" in forced.stderr
    assert json.loads(path.read_text())["mcpServers"]["nexus"]["args"] == []
    assert (tmp_path / ".cursor" / "mcp.json.bak").read_text() == mine


def test_codex_entry_replaced_in_place_with_its_timeouts(script_runner, tmp_path):
    path = tmp_path / ".codex" / "config.toml"
    path.parent.mkdir()
    head = '# my settings\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "other"  # keep me\n'
    tail = '\n[profiles.fast]\nmodel = "mini"\n'
    path.write_text(head + '\n[mcp_servers.nexus]\ncommand = "old"\n\n[mcp_servers.nexus.env]\nA = "1"\n' + tail)
    argv = ["--client", "codex", "--write", "--force", "--dir", str(tmp_path)]
    assert run(script_runner, *argv).returncode == 0
    text = path.read_text()
    assert text.startswith(head) and text.endswith(tail) and 'command = "old"' not in text and 'A = "1"' not in text
    entry = tomllib.loads(text)["mcp_servers"]["nexus"]
    assert entry["command"].endswith("nexus-mcp") and entry["startup_timeout_sec"] >= 30
    assert entry["tool_timeout_sec"] > 60  # above Codex's own default
    path.write_text(head)
    assert run(script_runner, *argv).returncode == 0
    assert path.read_text().startswith(head) and "[mcp_servers.nexus]" in path.read_text()


def test_a_read_only_file_is_refused_and_a_hard_link_kept(script_runner, tmp_path, home):
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('model = "o3"\n')
    path.chmod(0o400)
    argv = ["--client", "codex", "--scope", "user", "--write"]
    refused = run(script_runner, *argv)
    assert refused.returncode == 1 and "read-only" in refused.stderr
    assert path.read_text() == 'model = "o3"\n' and not (path.parent / "config.toml.bak").exists()
    path.chmod(0o600)
    dotfiles = tmp_path / "dotfiles-config.toml"
    os.link(path, dotfiles)
    assert run(script_runner, *argv).returncode == 0
    assert os.path.samefile(path, dotfiles) and "[mcp_servers.nexus]" in dotfiles.read_text()


def test_a_project_file_carries_no_path_of_the_home_folder(script_runner, tmp_path, home, monkeypatch):
    monkeypatch.setenv("NEXUS_HOME", str(home / "nexus"))
    command = str(home / ".local" / "bin" / "nexus-mcp")
    argv = ["--command", command, "--dir", str(tmp_path)]
    shown = {client: run(script_runner, "--client", client, *argv) for client in ("claude-code", "vscode", "opencode")}
    claude = json.loads(shown["claude-code"].stdout)["mcpServers"]["nexus"]
    assert claude["command"] == "${HOME}/.local/bin/nexus-mcp" and claude["env"]["NEXUS_HOME"] == "${HOME}/nexus"
    vscode = json.loads(shown["vscode"].stdout)["servers"]["nexus"]
    assert vscode["command"] == "${userHome}/.local/bin/nexus-mcp"
    assert json.loads(shown["opencode"].stdout)["mcp"]["nexus"]["command"] == ["{env:HOME}/.local/bin/nexus-mcp"]
    refused = run(script_runner, "--client", "codex", *argv, "--write")
    assert refused.returncode == 1 and "--scope user" in refused.stderr and str(home) in refused.stderr
    assert not (tmp_path / ".codex").exists()
    user = run(script_runner, "--client", "codex", *argv, "--scope", "user", "--write")
    assert user.returncode == 0
    entry = tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"]["nexus"]
    assert entry["command"] == command and entry["env"]["NEXUS_HOME"] == str(home / "nexus")


def test_command_overrides_and_a_temporary_folder_is_warned_about(script_runner, tmp_path):
    from nexus.mcp.clients import looks_temporary

    plain = run(script_runner, "--client", "cursor")  # the running nexus-mcp: temporary where the checkout is
    command = json.loads(plain.stdout)["mcpServers"]["nexus"]["command"]
    assert plain.returncode == 0 and ("looks temporary" in plain.stderr) == looks_temporary(command)
    steady = run(script_runner, "--client", "cursor", "--command", "/usr/local/bin/nexus-mcp")
    assert steady.returncode == 0 and "temporary" not in steady.stderr
    chosen = run(script_runner, "--client", "cursor", "--command", "/tmp/pip-run-x/bin/nexus-mcp")
    assert json.loads(chosen.stdout)["mcpServers"]["nexus"]["command"] == "/tmp/pip-run-x/bin/nexus-mcp"
    assert "looks temporary" in chosen.stderr


def test_list_clients_names_each_with_its_files(script_runner):
    listed = run(script_runner, "--list-clients")
    assert listed.returncode == 0
    for client, (_, _, project, user) in CLIENTS.items():
        line = next(line for line in listed.stdout.splitlines() if line.split()[0] == client)
        assert (project or "-") in line and "~/" + user in line
    rows = json.loads(run(script_runner, "--list-clients", "--json").stdout)
    assert {row["client"] for row in rows} == set(CLIENTS) | {"continue"}


def test_write_never_goes_through_a_symlink_out_of_the_project(script_runner, tmp_path):
    project, outside = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    outside.mkdir()
    (outside / "mcp.json").write_text("{}")
    (project / ".mcp.json").symlink_to(outside / "mcp.json")
    (project / ".cursor").symlink_to(outside)
    for client in ("claude-code", "cursor"):
        result = run(script_runner, "--client", client, "--write", "--dir", str(project))
        assert result.returncode == 1 and "leads outside" in result.stderr
    assert (outside / "mcp.json").read_text() == "{}" and sorted(p.name for p in outside.iterdir()) == ["mcp.json"]


def test_a_file_it_cannot_read_or_an_unknown_client_is_left_alone(script_runner, tmp_path, home):
    path = tmp_path / ".vscode" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{\n  // my servers\n  "servers": {\n}\n')
    result = run(script_runner, "--client", "vscode", "--write", "--dir", str(tmp_path))
    assert result.returncode == 2 and "is not JSON" in result.stderr and "line 5" in result.stderr
    assert path.read_text() == '{\n  // my servers\n  "servers": {\n}\n'
    path.write_text('{"servers": ' + "[" * 100000 + "]" * 100000 + "}")
    result = run(script_runner, "--client", "vscode", "--write", "--dir", str(tmp_path))
    assert result.returncode == 2 and "nested too deeply" in result.stderr
    for client, text in (("codex", "a = " + "[" * 100000 + "]" * 100000), ("goose", "a: " + "[" * 100000)):
        result = run(script_runner, "--client", client, "--scope", "user", "--write")
        assert result.returncode == 0
        target = next(p for p in home.rglob("*") if p.suffix in (".toml", ".yaml") and client in str(p))
        target.write_text(text)
        result = run(script_runner, "--client", client, "--scope", "user", "--write")
        assert result.returncode == 2 and "left as it is" in result.stderr and target.read_text() == text
    result = run(script_runner, "--client", "emacs")
    assert result.returncode == 2 and "claude-code, claude-desktop" in result.stderr


def test_the_help_names_each_client_s_files_and_no_longer_appends_to_a_codex_config(script_runner):
    shown = run(script_runner, "--help")
    assert shown.returncode == 0 and ">>" not in shown.stdout and "--scope" in shown.stdout
    rows = {line.split()[0]: line for line in shown.stdout.splitlines() if line.startswith("  ") and line.split()}
    for client, (_, _, project, user) in CLIENTS.items():
        assert (not project or f"project {project}" in rows[client]) and os.path.basename(user) in rows[client]


@pytest.mark.parametrize("client, original", [
    ("gemini", '{\n  "theme": "GitHub",\n  "ui": {"hideBanner": true}\n}\n'),
    ("zed", '// Zed settings\n{\n  "vim_mode": true,  // yes\n}\n'),
    ("opencode", '{"$schema": "https://opencode.ai/config.json"}'),
    ("codex", 'model = "o3"\n'),
    ("goose", 'GOOSE_PROVIDER: openai\n'),
    ("goose", 'extensions:\nGOOSE_MODEL: gpt-4o\n'),
    ("goose", 'extensions: {}\nGOOSE_MODEL: gpt-4o\n'),
])
def test_a_file_without_servers_yet_gets_them_and_keeps_the_rest(script_runner, home, client, original):
    fmt, key, _, in_home = CLIENTS[client]
    path = home / in_home
    path.parent.mkdir(parents=True)
    path.write_text(original)
    assert run(script_runner, "--client", client, "--scope", "user", "--write").returncode == 0
    text = path.read_text()
    assert "nexus" in (inserted(original, text) or inserted(original.replace(" {}", ""), text))
    document = read(fmt, text)
    assert "nexus" in document[key]
    del document[key]
    assert document == {k: v for k, v in (read(fmt, original) or {}).items() if k != key}


def test_an_entry_given_twice_is_left_for_a_person(script_runner, tmp_path):
    path = tmp_path / ".mcp.json"
    twice = '{"mcpServers": {"nexus": {"command": "a"}, "nexus": {"command": "b"}}}'
    path.write_text(twice)
    result = run(script_runner, "--client", "claude-code", "--write", "--force", "--dir", str(tmp_path))
    assert result.returncode == 2 and "given 2 times" in result.stderr and path.read_text() == twice


def test_opencode_s_jsonc_file_is_the_one_edited_when_it_is_the_only_one(script_runner, tmp_path):
    path = tmp_path / "opencode.jsonc"
    original = '{\n  // mine\n  "theme": "opencode",\n}\n'
    path.write_text(original)
    result = run(script_runner, "--client", "opencode", "--write", "--dir", str(tmp_path))
    assert result.returncode == 0 and result.stdout == f"{path}\n" and not (tmp_path / "opencode.json").exists()
    assert "nexus" in inserted(original, path.read_text()) and "nexus" in jsonc.loads(path.read_text())["mcp"]


# client -> the HTTP entry --url https://box.example:8765/mcp --token-env NEXUS_TOKEN writes, in its own shape
URL = "https://box.example:8765/mcp"
HTTP_ENTRIES = {
    "claude-code": {"type": "http", "url": URL, "headers": {"Authorization": "Bearer ${NEXUS_TOKEN}"}},
    "cursor": {"url": URL, "headers": {"Authorization": "Bearer ${env:NEXUS_TOKEN}"}},
    "vscode": {"type": "http", "url": URL, "headers": {"Authorization": "Bearer ${env:NEXUS_TOKEN}"}},
    "windsurf": {"serverUrl": URL, "headers": {"Authorization": "Bearer ${env:NEXUS_TOKEN}"}},
    "gemini": {"httpUrl": URL, "headers": {"Authorization": "Bearer ${NEXUS_TOKEN}"}},
    "codex": {"url": URL, "bearer_token_env_var": "NEXUS_TOKEN", "startup_timeout_sec": 30, "tool_timeout_sec": 600},
    "opencode": {"type": "remote", "url": URL, "headers": {"Authorization": "Bearer {env:NEXUS_TOKEN}"},
                 "enabled": True},
}


@pytest.mark.parametrize("client", CLIENTS)
def test_url_writes_an_http_entry_in_each_client_s_shape_with_the_token_from_the_environment(
        script_runner, tmp_path, home, monkeypatch, client):
    monkeypatch.setenv("NEXUS_TOKEN", "nx-the-secret-itself")
    fmt, key, project_file, _ = CLIENTS[client]
    scope = "project" if project_file else "user"
    project = tmp_path / "project"
    project.mkdir()
    argv = ["--client", client, "--url", URL, "--token-env", "NEXUS_TOKEN", "--scope", scope, "--dir", str(project)]
    written = run(script_runner, *argv, "--write")
    if client not in HTTP_ENTRIES:
        assert written.returncode == 2 and "takes no HTTP entry" in written.stderr
        return
    assert written.returncode == 0, written.stderr
    path = target(client, scope, home, project)
    text = path.read_text()
    assert "nx-the-secret-itself" not in text  # the variable's name, never its value
    assert servers(fmt, key, text)["nexus"] == HTTP_ENTRIES[client]
    bare = run(script_runner, "--client", client, "--url", "http://127.0.0.1:8765/mcp")  # --no-auth: no header
    assert bare.returncode == 0 and "Authorization" not in bare.stdout and "bearer" not in bare.stdout


@pytest.mark.parametrize("argv, said", [
    (["--url", "ftp://box/mcp"], "--url needs the http(s) URL"),
    (["--url", "https://me:pw@box/mcp"], "no user or password"),
    (["--url", URL, "--token-env", "NOT-A-NAME"], "--token-env needs the name of an environment variable"),
])
def test_a_bad_url_or_variable_is_a_usage_error(script_runner, home, argv, said):
    result = run(script_runner, "--client", "claude-code", *argv)
    assert result.returncode == 2 and said in result.stderr and result.stdout == ""


def test_a_token_over_plain_http_elsewhere_is_warned_about(script_runner, home, monkeypatch):
    monkeypatch.setenv("NEXUS_TOKEN", "x")
    result = run(script_runner, "--client", "claude-code", "--url", "http://box.example:8765/mcp",
                 "--token-env", "NEXUS_TOKEN")
    assert result.returncode == 0 and "in the clear" in result.stderr
