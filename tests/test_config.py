"""The config: validated at load (fail closed), cached by content, and changed from the command line by
`nexus config` and `nexus skill enable|disable|env|key`, in place, atomically, under a lock."""

import io
import json
import os
import pathlib
import stat
import subprocess
import sys
import textwrap

import pytest
from helpers import by_name, make_tool, write_config, write_skill

ROOT = pathlib.Path(__file__).resolve().parent.parent


def run(script_runner, *argv, **how):
    return script_runner.run(["nexus", *argv], **how)


def config_json(script_runner, *argv):
    result = run(script_runner, "config", *argv, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def listed(script_runner):
    result = run(script_runner, "skills", "list", "--json")
    assert result.returncode == 0, result.stderr
    return by_name(json.loads(result.stdout))


# -- failing closed at load ----------------------------------------------------------------------


@pytest.mark.parametrize("text, key, needs", [
    ('[skills.entries.gog]\nenabled = "no"\n', "skills.entries.gog.enabled", 'true or false, not "no"'),
    ('[skills]\nallowBundled = "tmux"\n', "skills.allowBundled", 'a list of skill names, as ["tmux", "github"], not "tmux"'),
    ('[skills.log]\nmaxEntries = "lots"\n', "skills.log.maxEntries", 'a whole number from 1, not "lots"'),
    ("[skills.log]\nmaxBytes = -5\n", "skills.log.maxBytes", "a whole number from 1, not -5"),
    ('[skills.load]\nextraDirs = "/tmp"\n', "skills.load.extraDirs", "a list of folders, each absolute or starting "
                                                                    'with ~ (no . or ..), as ["~/bin"], not "/tmp"'),
    ('[skills]\nbinPath = ["bin"]\n', "skills.binPath", 'a list of folders, each absolute or starting with ~ (no . or ..), as '
                                                         '["~/bin"], not "bin"'),
    ("[skills.entries.gog.env]\nTOKEN = 5\n", "skills.entries.gog.env.TOKEN", "text"),  # a secret: not shown
    ('[capabilities.email_sender]\nprefer = "gog"\n', "capabilities.email_sender.prefer",
     'a list of skill names, as ["tmux", "github"], not "gog"'),
])
def test_a_value_of_the_wrong_type_is_a_one_line_error_and_nothing_runs(script_runner, workspace, bindir, nexus_home,
                                                                          tmp_path, text, key, needs):
    marker = tmp_path / "ran"
    make_tool(bindir, "gog", f"#!/bin/sh\ntouch {marker}\n")
    write_skill(workspace, "gog", meta={"tool": "gog"})
    path = write_config(nexus_home, text)
    for argv in (["skills", "list"], ["skill", "run", "gog"], ["status"]):
        result = run(script_runner, *argv)
        assert result.returncode == 2
        assert result.stderr == f"nexus: config '{path}', line 2: {key} needs {needs}\n"
    assert not marker.exists()


def test_an_unknown_key_under_skills_is_an_error_with_the_closest_known_key(script_runner, nexus_home):
    path = write_config(nexus_home, "# mine\n[skills.entries.gog]\nenabeld = false\n[browser]\nwhatever = 1\n")
    result = run(script_runner, "status")
    assert result.returncode == 2
    assert result.stderr == (f"nexus: config '{path}', line 3: skills.entries.gog.enabeld is not a key nexus knows "
                             "(did you mean skills.entries.gog.enabled?)\n")


def test_a_secret_of_the_wrong_type_is_not_shown(script_runner, nexus_home):
    write_config(nexus_home, "[skills.entries.gog]\napiKey = 123456789\n")
    result = run(script_runner, "status")
    assert result.returncode == 2 and "apiKey needs text" in result.stderr and "123456789" not in result.stderr


def test_a_config_that_is_not_utf8_is_a_one_line_error(script_runner, nexus_home):
    nexus_home.mkdir()
    path = nexus_home / "nexus.toml"
    path.write_bytes(b"[skills]\n# caf\xe9\n")
    result = run(script_runner, "skills", "list")
    assert result.returncode == 2
    assert result.stderr == f"nexus: config '{path}', line 2: not UTF-8 (byte 0xe9)\n"


def test_nexus_config_naming_a_missing_file_is_an_error(script_runner, tmp_path, monkeypatch):
    monkeypatch.setenv("NEXUS_CONFIG", str(tmp_path / "nope.toml"))
    result = run(script_runner, "status")
    assert result.returncode == 2
    assert result.stderr == f"nexus: config '{tmp_path / 'nope.toml'}': no such file (NEXUS_CONFIG names it)\n"


@pytest.mark.parametrize("variable", ["NEXUS_HOME", "NEXUS_CONFIG", "MANAGED_SKILLS_DIR"])
def test_a_relative_path_in_the_environment_is_refused(script_runner, monkeypatch, variable):
    monkeypatch.setenv(variable, "relative/place")
    result = run(script_runner, "skills", "list")
    assert result.returncode == 2
    assert result.stderr == f"nexus: {variable} must be an absolute path (or start with ~), not 'relative/place'\n"


def test_the_cache_notices_an_edit_that_keeps_size_and_mtime(script_runner, workspace, nexus_home):
    write_skill(workspace, "mine")
    path = write_config(nexus_home, "[skills.entries.mine]\nenabled = true \n")
    assert listed(script_runner)["mine"]["status"] == "ready"
    before = path.stat()
    path.write_text("[skills.entries.mine]\nenabled = false\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert listed(script_runner)["mine"]["status"] == "disabled"


def test_the_gateway_reads_the_cached_config_without_tomllib(script_runner, nexus_home, tmp_path):
    write_config(nexus_home, "[skills.log]\nmaxEntries = 50\n")
    probe = ("import sys; from nexus.tools.nexus import main; main(['skill', 'run', 'filesystem']); "
             "print(sorted(m for m in ('tomllib', 'tomli_w', 're') if m in sys.modules), file=sys.stderr)")
    env = {**os.environ, "NEXUS_HOME": str(nexus_home)}
    first = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert "tomllib" in first.stderr  # the first run parses and fills the cache
    again = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert again.stderr.strip().splitlines()[-1] == "[]"


def test_skills_check_checks_the_config(script_runner, workspace, nexus_home):
    write_skill(workspace, "mine")
    path = write_config(nexus_home, '[skills]\nallowBundled = ["tmux", "nonesuch"]\n[skills.entries.gone]\n'
                                    'enabled = false\n[skills.entries.mine]\napiKey = "k"\n')
    result = run(script_runner, "skills", "check", "--json")
    found = [f for f in json.loads(result.stdout) if f["code"] == "config"]
    assert result.returncode == 0, result.stderr
    assert [(f["path"], f["line"], f["severity"], f["message"]) for f in found] == [
        (str(path), 2, "warning", "skills.allowBundled: 'nonesuch' is not a bundled skill"),
        (str(path), 3, "warning", "skills.entries.gone: no skill has this name or skillKey"),
        (str(path), 6, "warning", "skills.entries.mine.apiKey: the skill names no env var for a key (primaryEnv): "
                                  "no tool gets it"),
    ]
    write_config(nexus_home, "[skills.log]\nmaxBytes = 0\n")
    result = run(script_runner, "skills", "check")
    assert result.returncode == 1
    assert f"{path}:2: error: skills.log.maxBytes needs a whole number from 1, not 0\n" in result.stdout


# -- nexus config get, set, unset, list, path ---------------------------------------------------


@pytest.mark.parametrize("key, value, typed, shown", [
    ("skills.log.maxEntries", "2000", 2000, "2000"),
    ("skills.entries.gog.enabled", "false", False, "false"),
    ("skills.allowBundled", '["tmux", "weather"]', ["tmux", "weather"], '["tmux", "weather"]'),
    ("skills.binPath", '["~/bin", "/opt/bin"]', ["~/bin", "/opt/bin"], '["~/bin", "/opt/bin"]'),
    ("skills.entries.gog.env", '{ A = "1", B = "two words" }', {"A": "1", "B": "two words"},
     '{ A = "1", B = "two words" }'),
    ("skills.entries.gog.env.HOST", "true", "true", "true"),  # text: a string key takes VALUE as text
    ("capabilities.email_sender.prefer", '["gog", "sendgrid"]', ["gog", "sendgrid"], '["gog", "sendgrid"]'),
    ("browser.enabled", "true", True, "true"),  # outside nexus's tables: named by a skill's requires.config
])
def test_set_then_get_round_trips_every_type(script_runner, workspace, nexus_home, key, value, typed, shown):
    write_skill(workspace, "browse", meta={"requires": {"config": ["browser.enabled"]}})
    assert run(script_runner, "skills", "refresh").returncode == 0
    result = run(script_runner, "config", "set", key, value)
    assert result.returncode == 0, result.stderr
    got = config_json(script_runner, "get", key)
    assert (got["value"], got["origin"]) == (typed, "file")
    printed = run(script_runner, "config", "get", key).stdout
    assert printed == shown + "\n"
    again = run(script_runner, "config", "set", key, printed.strip())  # what get prints, set reads back
    assert again.returncode == 0 and "already" in again.stdout


def test_get_gives_the_default_and_exit_1_when_there_is_none(script_runner):
    assert config_json(script_runner, "get", "skills.log.maxBytes") == {
        "key": "skills.log.maxBytes", "value": 2097152, "default": 2097152, "origin": "default"}
    assert run(script_runner, "config", "get", "skills.entries.any.enabled").stdout == "true\n"
    result = run(script_runner, "config", "get", "skills.allowBundled")
    assert result.returncode == 1 and result.stderr == "nexus: skills.allowBundled: not set\n"
    typo = run(script_runner, "config", "get", "skills.log.maxEntrie")
    assert typo.returncode == 1 and "(did you mean skills.log.maxEntries?)" in typo.stderr


def test_type_forces_how_value_is_read(script_runner, nexus_home):
    assert run(script_runner, "config", "set", "--force", "other.port", "8080").returncode == 0
    assert run(script_runner, "config", "set", "--force", "other.name", "8080", "--type", "string").returncode == 0
    assert run(script_runner, "config", "set", "--force", "other.word", "hello").returncode == 0
    refused = run(script_runner, "config", "set", "--force", "other.list", "[1,", "--type", "list")
    assert refused.returncode == 2 and "needs a TOML list" in refused.stderr
    assert (nexus_home / "nexus.toml").read_text() == '[other]\nport = 8080\nname = "8080"\nword = "hello"\n'


@pytest.mark.parametrize("argv, message", [
    (["skills.log.maxBytes", "--", "-5"], "skills.log.maxBytes needs a whole number from 1, not -5"),
    (["skills.log.maxBytes", "lots"], 'skills.log.maxBytes needs a whole number from 1, not "lots"'),
    (["skills.entries.gog.enabled", "no"], 'skills.entries.gog.enabled needs true or false, not "no"'),
    (["skills.allowBundled", "tmux"], 'skills.allowBundled needs a list of skill names, as ["tmux", "github"], '
                                      'not "tmux"'),
    (["skills.load.extraDirs", '["here"]'], "skills.load.extraDirs needs a list of folders"),
    (["skills.entries.gog.env.BAD-NAME", "x"], "'BAD-NAME' is not an environment variable name"),
    (["skills.log.maxEntrie", "5"], "skills.log.maxEntrie is not a key nexus knows (did you mean "
                                    "skills.log.maxEntries?)"),
    (["--force", "skills.log.newKey", "5"], "skills.log.newKey is not a key nexus knows"),
    (["browser.enabeld", "true"], "browser.enabeld is not a key nexus knows (did you mean browser.enabled?); "
                                  "--force sets it anyway"),
    (["skills.entries.gog.apiKey", "s3cret"], "a key is never taken from the command line"),
])
def test_an_invalid_set_is_refused_and_the_file_is_untouched(script_runner, workspace, nexus_home, argv, message):
    write_skill(workspace, "browse", meta={"requires": {"config": ["browser.enabled"]}})
    assert run(script_runner, "skills", "refresh").returncode == 0
    path = write_config(nexus_home, "# keep me\n[skills.log]\nmaxBytes = 4096\n")
    before = path.read_bytes(), path.stat().st_mtime_ns
    result = run(script_runner, "config", "set", *argv)
    assert result.returncode == 2 and message in result.stderr and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and "s3cret" not in result.stderr
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


COMMENTED = """\
# My nexus config.   Two spaces after the dot, on purpose.

[skills]
allowBundled = [ "tmux",   # the one I use
                 "weather" ]
binPath=["/opt/bin"]    # no spaces around =

  # an indented comment
[skills.log]
maxEntries   =   5000   # aligned

[skills.entries.gog]
enabled = true
env = { HOST = "a" }  # inline table

[browser]
enabled = false
"""


def test_set_unset_enable_disable_keep_every_other_byte(script_runner, workspace, nexus_home):
    write_skill(workspace, "gog")
    write_skill(workspace, "other")
    path = write_config(nexus_home, COMMENTED)
    steps = [
        (["config", "set", "skills.log.maxEntries", "200"],
         "maxEntries   =   5000   # aligned\n", "maxEntries   =   200   # aligned\n"),
        (["skill", "disable", "gog"], "[skills.entries.gog]\nenabled = true\n", "[skills.entries.gog]\nenabled = false\n"),
        (["skill", "enable", "gog"], "[skills.entries.gog]\nenabled = false\n", "[skills.entries.gog]\nenabled = true\n"),
        (["skill", "env", "gog", "PORT=80"], 'env = { HOST = "a" }  # inline table\n',
         'env = { HOST = "a", PORT = "80" }  # inline table\n'),
        (["config", "unset", "skills.binPath"], 'binPath=["/opt/bin"]    # no spaces around =\n', ""),
        (["config", "set", "skills.log.maxBytes", "4096"], "maxEntries   =   200   # aligned\n",
         "maxEntries   =   200   # aligned\nmaxBytes = 4096\n"),
        (["skill", "disable", "other"], 'env = { HOST = "a", PORT = "80" }  # inline table\n',
         'env = { HOST = "a", PORT = "80" }  # inline table\n\n[skills.entries.other]\nenabled = false\n'),
        (["config", "set", "skills.allowBundled", '["tmux"]'],
         'allowBundled = [ "tmux",   # the one I use\n                 "weather" ]\n',
         'allowBundled = [\n    "tmux",\n]\n'),
    ]
    text = path.read_text()
    for argv, old, new in steps:
        result = run(script_runner, *argv)
        assert result.returncode == 0, (argv, result.stderr)
        assert text.count(old) == 1
        text = text.replace(old, new)
        assert path.read_text() == text, argv
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_changes_read_back_as_the_config_nexus_loads(script_runner, workspace, nexus_home):
    write_skill(workspace, "gog")
    path = write_config(nexus_home, "[skills]\nlog.maxEntries = 9  # dotted\n")
    assert run(script_runner, "config", "set", "skills.log.maxBytes", "999").returncode == 0
    assert run(script_runner, "config", "set", "skills.entries.gog.env", '{ A = "1" }').returncode == 0
    assert run(script_runner, "config", "unset", "skills.entries.gog.env.A").returncode == 0
    assert path.read_text() == ("[skills]\nlog.maxEntries = 9  # dotted\nlog.maxBytes = 999\n\n"
                                "[skills.entries.gog]\nenv = {}\n")
    values = {row["key"]: (row["value"], row["origin"]) for row in config_json(script_runner, "list")}
    assert values["skills.log.maxEntries"] == (9, "file") and values["skills.log.maxBytes"] == (999, "file")
    assert values["skills.binPath"] == ([], "default") and values["skills.allowBundled"] == (None, None)


def test_unset_of_a_key_that_is_not_set_changes_nothing(script_runner, nexus_home):
    path = write_config(nexus_home, "# only a comment\n")
    result = run(script_runner, "config", "unset", "skills.log.maxBytes")
    assert result.returncode == 0 and result.stdout == "skills.log.maxBytes: was not set\n"
    assert path.read_text() == "# only a comment\n"


def test_list_shows_every_key_its_origin_and_hides_secrets(script_runner, workspace, nexus_home):
    write_skill(workspace, "gog", meta={"primaryEnv": "GOG_KEY"})
    write_config(nexus_home, '[skills.entries.gog]\napiKey = "sekrit-key"\nenv = { HOST = "hidden-host" }\n'
                             "[browser]\nenabled = true\n")
    rows = {row["key"]: row for row in config_json(script_runner, "list")}
    from nexus.config import keys

    assert {k.path for k in keys.KEYS if "<" not in k.path} <= set(rows)
    assert rows["skills.log.maxEntries"] == {"key": "skills.log.maxEntries", "value": 5000, "default": 5000,
                                             "origin": "default", "type": "int", "meaning": keys.find(
                                                 ("skills", "log", "maxEntries")).meaning}
    assert rows["skills.entries.gog.apiKey"]["value"] == "***" and rows["skills.entries.gog.env.HOST"]["value"] == "***"
    assert rows["skills.entries.gog.enabled"]["origin"] == "default" and rows["browser.enabled"]["value"] is True
    human = run(script_runner, "config", "list").stdout
    assert "sekrit-key" not in human and "hidden-host" not in human
    assert any(line.split() == ["skills.log.maxEntries", "5000", "default"] for line in human.splitlines())


def test_path_names_the_config_file(script_runner, nexus_home, tmp_path, monkeypatch):
    assert run(script_runner, "config", "path").stdout == f"{nexus_home / 'nexus.toml'}\n"
    monkeypatch.setenv("NEXUS_CONFIG", str(tmp_path / "other.toml"))
    assert config_json(script_runner, "path") == {"path": str(tmp_path / "other.toml"), "exists": False}


def test_set_writes_through_a_symlink_and_keeps_the_file_private(script_runner, nexus_home, tmp_path):
    real = tmp_path / "dotfiles" / "nexus.toml"
    real.parent.mkdir()
    real.write_text("# from my dotfiles\n")
    real.chmod(0o644)
    nexus_home.mkdir()
    (nexus_home / "nexus.toml").symlink_to(real)
    assert run(script_runner, "config", "set", "skills.log.maxEntries", "7").returncode == 0
    assert (nexus_home / "nexus.toml").is_symlink()
    assert real.read_text() == "# from my dotfiles\n\n[skills.log]\nmaxEntries = 7\n"
    assert stat.S_IMODE(real.stat().st_mode) == 0o600


@pytest.mark.once
def test_concurrent_sets_all_land(nexus_home):
    write_config(nexus_home, "# shared\n")
    procs = [subprocess.Popen(["nexus", "config", "set", "--force", f"team.member{i}", str(i)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for i in range(8)]
    assert all(p.wait(timeout=60) == 0 for p in procs), [p.stderr.read() for p in procs]
    import tomllib

    assert tomllib.loads((nexus_home / "nexus.toml").read_text())["team"] == {f"member{i}": i for i in range(8)}


# -- enable, disable, env, key ------------------------------------------------------------------


def test_disable_and_enable_change_list_and_run(script_runner, workspace, bindir, nexus_home, tmp_path):
    marker = tmp_path / "ran"
    make_tool(bindir, "gog", f"#!/bin/sh\necho ran >> {marker}\n")
    write_skill(workspace, "gog", meta={"tool": "gog", "skillKey": "google"})
    assert listed(script_runner)["gog"]["status"] == "ready"
    result = run(script_runner, "skill", "disable", "gog")
    assert (result.returncode, result.stdout) == (0, "gog: disabled\n")
    assert run(script_runner, "skill", "disable", "gog").stdout == "gog: already disabled\n"
    assert (nexus_home / "nexus.toml").read_text() == "[skills.entries.google]\nenabled = false\n"  # its skillKey
    assert listed(script_runner)["gog"]["status"] == "disabled"
    refused = run(script_runner, "skill", "run", "gog")
    assert refused.returncode == 1 and "To enable it: nexus skill enable gog" in refused.stderr
    assert not marker.exists()
    assert json.loads(run(script_runner, "skill", "enable", "gog", "--json").stdout) == {
        "skill": "gog", "key": "skills.entries.google.enabled", "enabled": True, "changed": True}
    assert run(script_runner, "skill", "enable", "gog").stdout == "gog: already enabled\n"
    assert listed(script_runner)["gog"]["status"] == "ready"
    assert run(script_runner, "skill", "run", "gog").returncode == 0 and marker.read_text() == "ran\n"


def test_enabling_a_bundled_skill_left_out_of_allow_bundled_names_the_command(script_runner, nexus_home):
    write_config(nexus_home, '[skills]\nallowBundled = ["filesystem"]\n')
    result = run(script_runner, "skill", "enable", "weather")
    command = """nexus config set skills.allowBundled '["filesystem", "weather"]'"""
    assert result.returncode == 1 and result.stdout == "weather: still disabled: not in skills.allowBundled\n"
    assert f"to enable weather: {command}" in result.stderr
    refused = run(script_runner, "skill", "run", "weather")
    assert refused.returncode == 1 and f"To enable it: {command}" in refused.stderr
    assert run(script_runner, "config", "set", "skills.allowBundled", '["filesystem", "weather"]').returncode == 0
    assert listed(script_runner)["weather"]["status"] != "disabled"
    assert run(script_runner, "skill", "enable", "weather").stdout == "weather: already enabled\n"


@pytest.mark.script_launch_mode("subprocess")
def test_env_sets_and_unsets_what_the_tool_gets(script_runner, workspace, bindir, nexus_home, tmp_path):
    seen = tmp_path / "env"
    make_tool(bindir, "envy", f"#!/bin/sh\nprintf '%s|%s' \"$HOST\" \"$PORT\" > {seen}\n")
    write_skill(workspace, "envy", meta={"tool": "envy"})
    result = run(script_runner, "skill", "env", "envy", "HOST=example.org", "PORT=8080")
    assert (result.returncode, result.stdout) == (0, "envy: set HOST, PORT\n")
    assert run(script_runner, "skill", "run", "envy").returncode == 0 and seen.read_text() == "example.org|8080"
    result = run(script_runner, "skill", "env", "envy", "--unset", "PORT", "--json")
    assert json.loads(result.stdout) == {"skill": "envy", "key": "skills.entries.envy.env", "set": [],
                                         "unset": ["PORT"], "marked": [], "env": ["HOST"], "secret": []}
    assert run(script_runner, "skill", "run", "envy").returncode == 0 and seen.read_text() == "example.org|"
    assert run(script_runner, "skill", "env", "envy").stdout == "envy: env from config: HOST\n"
    bad = run(script_runner, "skill", "env", "envy", "NO-DASH=1")
    assert bad.returncode == 2 and "not VAR=VALUE" in bad.stderr


KEY = "k3y-from-stdin-7f1c"


@pytest.mark.script_launch_mode("subprocess")
def test_a_key_read_from_stdin_appears_in_no_argv_log_or_output(script_runner, workspace, bindir, nexus_home, tmp_path):
    seen = tmp_path / "seen"
    make_tool(bindir, "api", f"#!/bin/sh\nprintf '%s' \"$API_TOKEN\" > {seen}\necho \"args: $*\"\n")
    write_skill(workspace, "api", meta={"tool": "api", "requires": {"env": ["API_TOKEN"]}, "primaryEnv": "API_TOKEN"})
    proc = subprocess.Popen(["nexus", "skill", "key", "api"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    argv_seen = pathlib.Path(f"/proc/{proc.pid}/cmdline").read_bytes() if os.path.exists("/proc") else b""
    out, err = proc.communicate(KEY.encode() + b"\n", timeout=30)
    assert proc.returncode == 0 and out == b"api: key set (given to its tool as API_TOKEN)\n"
    outputs = [argv_seen, out, err]
    for argv in (["skill", "show", "api"], ["skill", "show", "api", "--json"], ["config", "list"],
                 ["config", "list", "--json"], ["skill", "run", "api", "--dry-run"], ["skill", "run", "api", "--json"],
                 ["skill", "run", "api", "--", "a"], ["skill", "key", "api"], ["skills", "list", "--json"]):
        result = run(script_runner, *argv, stdin=io.StringIO(KEY))
        assert result.returncode == 0, (argv, result.stderr)
        outputs += [result.stdout.encode(), result.stderr.encode()]
    assert seen.read_text() == KEY  # the tool got it, in its environment
    logs = [p.read_bytes() for p in (nexus_home / "state").rglob("*") if p.is_file() and "config-cache" not in p.name]
    assert not [text for text in outputs + logs if KEY.encode() in text]
    shown = json.loads(run(script_runner, "skill", "show", "api", "--json").stdout)["fromConfig"]
    assert shown == {"env": [], "apiKey": True, "apiKeyEnv": "API_TOKEN"}
    assert "apiKey: set (as API_TOKEN)" in run(script_runner, "skill", "show", "api").stdout
    assert stat.S_IMODE((nexus_home / "nexus.toml").stat().st_mode) == 0o600
    assert run(script_runner, "skill", "key", "api", "--unset").stdout == "api: key unset\n"
    assert "apiKey" not in (nexus_home / "nexus.toml").read_text()


def test_an_empty_key_is_refused(script_runner, workspace, nexus_home):
    write_skill(workspace, "api", meta={"primaryEnv": "API_TOKEN"})
    result = run(script_runner, "skill", "key", "api", stdin=io.StringIO("\n"))
    assert result.returncode == 2 and "no key given" in result.stderr
    assert not (nexus_home / "nexus.toml").exists()


@pytest.mark.once
def test_on_a_terminal_the_key_is_asked_for_without_echo(workspace, nexus_home):
    import fcntl
    import termios

    write_skill(workspace, "api", meta={"primaryEnv": "API_TOKEN"})
    leader, follower = os.openpty()

    def controlling_terminal():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(["nexus", "skill", "key", "api"], stdin=follower, stdout=follower, stderr=follower,
                            preexec_fn=controlling_terminal)
    os.close(follower)
    shown = b""
    while b"Key for api (API_TOKEN): " not in shown:
        shown += os.read(leader, 1024)
    os.write(leader, KEY.encode() + b"\n")
    proc.wait(timeout=30)
    try:
        while chunk := os.read(leader, 1024):
            shown += chunk
    except OSError:  # EIO: the terminal's other end is gone
        pass
    os.close(leader)
    assert proc.returncode == 0 and KEY.encode() not in shown and b"api: key set" in shown
    assert f'apiKey = "{KEY}"' in (nexus_home / "nexus.toml").read_text()


# -- nexus config edit --------------------------------------------------------------------------


def editor(tmp_path, *texts):
    """An editor that writes the next of `texts` into the file it is given, each time it runs."""
    for i, text in enumerate(texts):
        (tmp_path / f"edit{i}").write_text(text)
    script = tmp_path / "editor"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        for file; do :; done
        n=$(cat {tmp_path}/count 2>/dev/null || echo 0)
        cp {tmp_path}/edit$n "$file"
        echo $((n + 1)) > {tmp_path}/count
    """))
    script.chmod(0o755)
    return f"{script} --wait"  # words: run without a shell


def test_edit_saves_a_valid_config(script_runner, nexus_home, tmp_path, monkeypatch):
    path = write_config(nexus_home, "# before\n")
    monkeypatch.setenv("EDITOR", editor(tmp_path, "# after\n[skills.log]\nmaxEntries = 3\n"))
    result = run(script_runner, "config", "edit")
    assert result.returncode == 0 and result.stdout == f"saved {path}\n"
    assert path.read_text() == "# after\n[skills.log]\nmaxEntries = 3\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_edit_never_saves_an_invalid_config(script_runner, nexus_home, tmp_path, monkeypatch):
    path = write_config(nexus_home, "# before\n")
    monkeypatch.setenv("VISUAL", editor(tmp_path, '[skills.entries.x]\nenabled = "no"\n'))
    result = run(script_runner, "config", "edit", stdin=io.StringIO(""))
    assert result.returncode == 2
    assert "skills.entries.x.enabled needs true or false" in result.stderr and "nothing saved" in result.stderr
    assert path.read_text() == "# before\n"


@pytest.mark.once
def test_edit_offers_to_edit_again_on_a_terminal(nexus_home, tmp_path):
    path = write_config(nexus_home, "# before\n")
    env = {**os.environ, "EDITOR": editor(tmp_path, "[skills\n", "[skills.log]\nmaxBytes = 100\n")}
    leader, follower = os.openpty()
    try:
        os.write(leader, b"y\n")
        done = subprocess.run(["nexus", "config", "edit"], stdin=follower, capture_output=True, text=True,
                              timeout=60, env=env)
    finally:
        os.close(leader)
        os.close(follower)
    assert done.returncode == 0, done.stderr
    assert "Edit it again? [Y/n]" in done.stderr and (tmp_path / "count").read_text() == "2\n"
    assert path.read_text() == "[skills.log]\nmaxBytes = 100\n"


# -- one schema: man page and completion --------------------------------------------------------


def test_the_man_page_has_every_key_and_keys_complete(script_runner, workspace):
    from nexus.config import keys
    from nexus.state import usage_log

    assert keys.find(("skills", "log", "maxEntries")).default == usage_log.MAX_ENTRIES
    assert keys.find(("skills", "log", "maxBytes")).default == usage_log.MAX_BYTES
    man = (ROOT / "man" / "nexus.1").read_text()
    assert ".SH CONFIG" in man
    for key in keys.KEYS:
        assert key.path.replace("-", "\\-") in man, key.path
    write_skill(workspace, "gog")
    assert run(script_runner, "skills", "refresh").returncode == 0
    names = run(script_runner, "--list-keys").stdout.splitlines()
    assert {"skills.log.maxEntries", "skills.allowBundled", "skills.entries.gog.enabled"} <= set(names)
    bash = subprocess.run(["bash", "-c", f'source "{ROOT / "completions" / "nexus.bash"}"; COMP_WORDS=(nexus config '
                                         'get skills.lo); COMP_CWORD=3; _nexus; printf "%s\\n" "${COMPREPLY[@]}"'],
                          capture_output=True, text=True, env={**os.environ})
    assert bash.stdout.split() == ["skills.load.extraDirs", "skills.log.maxEntries", "skills.log.maxBytes"]


def test_setup_steps_name_commands_not_the_file(script_runner, workspace, nexus_home):
    write_skill(workspace, "api", meta={"requires": {"env": ["API_TOKEN", "API_REGION"], "config": ["browser.enabled"]},
                                        "primaryEnv": "API_TOKEN"})
    shown = run(script_runner, "skill", "show", "api").stdout
    assert "Set API_TOKEN: export API_TOKEN=..., or keep it in the config: nexus skill key api" in shown
    assert "Set API_REGION: export API_REGION=..., or keep it in the config: nexus skill env api API_REGION=..." in shown
    assert "Set browser.enabled: nexus config set browser.enabled true" in shown
    assert "nexus.toml" not in shown
