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
from helpers import by_name, jsonl, make_tool, write_config, write_skill

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
                                                                    'with ~, as ["~/bin"], not "/tmp"'),
    ('[skills]\nbinPath = ["bin"]\n', "skills.binPath", 'a list of folders, each absolute or starting with ~, as '
                                                         '["~/bin"], not "bin"'),
    ("[skills.entries.gog.env]\nTOKEN = 5\n", "skills.entries.gog.env.TOKEN", "text"),  # a secret: not shown
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
