"""nexus-discover: sources, precedence, metadata, and every kind of broken SKILL.md."""

import json
import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest
from helpers import by_name, jsonl, write_config, write_raw, write_skill


def discover(script_runner, *args):
    """The result, and the skills that load by name (broken ones only when asked for with --invalid)."""
    result = script_runner.run(["nexus-discover", *args])
    records = jsonl(result.stdout)
    return result, by_name(r for r in records if "--invalid" in args or r.get("status") != "invalid")


def test_workspace_beats_managed_beats_extra(script_runner, tmp_path, workspace, nexus_home):
    extra, managed = tmp_path / "extra", tmp_path / "managed"
    write_config(nexus_home, f'[skills.load]\nextraDirs = ["{extra}"]\n')
    for root, where in ((extra, "extra"), (managed, "managed"), (workspace, "workspace")):
        write_skill(root, "dup", description=f"from {where}")
    write_skill(extra, "only-extra")
    result, skills = discover(script_runner)
    assert result.returncode == 0, result.stderr
    assert skills["dup"]["description"] == "from workspace"
    assert skills["dup"]["source"] == "nexus-workspace"
    assert skills["only-extra"]["source"] == "nexus-extra"

    _, with_shadowed = discover(script_runner, "--shadowed")
    shadowed = [r for r in jsonl(script_runner.run(["nexus-discover", "--shadowed"]).stdout) if r["name"] == "dup"]
    assert sorted(r.get("shadowedBy", "-") for r in shadowed) == ["-", "nexus-workspace", "nexus-workspace"]
    assert {r["source"] for r in shadowed} == {"nexus-extra", "nexus-managed", "nexus-workspace"}


def test_entry_has_manifest_fields(script_runner, workspace):
    meta = {"emoji": "📧", "os": ["linux", "darwin"], "requires": {"bins": ["gog"], "env": ["GOG_KEY"]},
            "install": [{"id": "brew", "kind": "brew", "formula": "gogcli", "bins": ["gog"]}],
            "primaryEnv": "GOG_KEY"}
    skill_dir = write_skill(workspace, "gog", description="Google Workspace CLI.", meta=meta,
                            extra="homepage: https://gogcli.sh\nlicense: MIT\n")
    _, skills = discover(script_runner)
    entry = skills["gog"]
    assert entry["filePath"] == str(skill_dir / "SKILL.md")
    assert entry["dir"] == str(skill_dir)
    assert len(entry["sha256"]) == 64
    assert entry["emoji"] == "📧" and entry["os"] == ["linux", "darwin"]
    assert entry["requires"] == {"bins": ["gog"], "anyBins": [], "env": ["GOG_KEY"], "config": []}
    assert entry["hasInstall"] is True and entry["install"][0]["formula"] == "gogcli"
    assert entry["homepage"] == "https://gogcli.sh"
    assert entry["extra"] == {"license": "MIT"}
    # gog is a known tool: its type, tool and verify come from the static table.
    assert (entry["type"], entry["tool"]) == ("tool", "gog")
    assert entry["verify"] == "gog gmail labels list --account default"


@pytest.mark.parametrize("meta, expected", [
    ({}, {"type": "prompt"}),
    ({"tool": "mytool", "verify": "mytool --version"}, {"type": "tool", "tool": "mytool", "verify": "mytool --version"}),
    ({"runner": "python3", "script": "scripts/x.py"}, {"type": "script", "runner": "python3", "script": "scripts/x.py"}),
    ({"type": "prompt"}, {"type": "prompt"}),
])
def test_type_resolution_from_metadata(script_runner, workspace, meta, expected):
    write_skill(workspace, "custom", meta=meta)
    _, skills = discover(script_runner)
    assert {k: skills["custom"].get(k) for k in expected} == expected


def test_declared_metadata_wins_over_static_table(script_runner, workspace):
    write_skill(workspace, "tmux", meta={"verify": "tmux list-sessions"})
    _, skills = discover(script_runner)
    assert skills["tmux"]["tool"] == "tmux"
    assert skills["tmux"]["verify"] == "tmux list-sessions"


def test_metadata_forms(script_runner, workspace):
    write_raw(workspace, "yaml-map", "---\nname: yaml-map\ndescription: d\nmetadata:\n  nexus:\n    emoji: x\n    always: yes\n---\nbody\n")
    write_raw(workspace, "commas", '---\nname: commas\ndescription: d\nmetadata: {"nexus": {"requires": {"bins": ["a",],},},}\n---\nbody\n')
    write_raw(workspace, "claw", '---\nname: claw\ndescription: d\nmetadata: {"openclaw": {"requires": {"bins": "a, b"}}}\n---\nbody\n')
    result, skills = discover(script_runner)
    assert result.returncode == 0
    assert skills["yaml-map"]["emoji"] == "x" and skills["yaml-map"]["always"] is True
    assert skills["commas"]["requires"]["bins"] == ["a"]
    assert skills["claw"]["requires"]["bins"] == ["a", "b"]


def test_yaml_1_1_scalars_keep_their_text(script_runner, workspace):
    write_raw(workspace, "off", "---\nname: off\ndescription: yes\nversion: 1.10\n---\nbody\n")
    _, skills = discover(script_runner)
    assert skills["off"]["description"] == "yes"
    assert skills["off"]["extra"]["version"] == "1.10"


def test_bom_and_crlf_load(script_runner, workspace):
    write_raw(workspace, "bom", b"\xef\xbb\xbf---\nname: bom\ndescription: with a BOM\n---\nbody\n")
    write_raw(workspace, "crlf", b"---\r\nname: crlf\r\ndescription: with CRLF\r\n---\r\nbody\r\n")
    result, skills = discover(script_runner)
    assert skills["bom"]["description"] == "with a BOM"
    assert skills["crlf"]["description"] == "with CRLF"
    assert result.stderr == ""


def test_name_falls_back_to_folder_and_mismatch_warns(script_runner, workspace):
    write_raw(workspace, "nameless", "---\ndescription: no name here\n---\nbody\n")
    write_skill(workspace, "real-name", folder="other-folder")
    result, skills = discover(script_runner)
    assert skills["nameless"]["description"] == "no name here"
    assert "nameless/SKILL.md: warning: no name: using the folder's name 'nameless'" in result.stderr
    assert "real-name" in skills and "other-folder" not in skills
    assert "name 'real-name' differs from its folder 'other-folder'" in result.stderr


BROKEN = {
    "no-frontmatter": ("# Just markdown\n", "no frontmatter"),
    "unterminated": ("---\nname: unterminated\ndescription: d\n", "unterminated frontmatter"),
    "not-mapping": ("---\n- a\n- b\n---\nbody\n", "frontmatter is not a mapping"),
    "bad-yaml": ("---\nname: bad-yaml\ndescription: [unclosed\n---\nbody\n", "invalid YAML"),
    "colon": ("---\nname: colon\ndescription: Use it\n  when: now\n---\nbody\n", "must be quoted"),
    "bad-name": ("---\nname: Bad_Name\ndescription: d\n---\nbody\n", "invalid name 'Bad_Name'"),
    "no-description": ("---\nname: no-description\n---\nbody\n", "no description"),
    "empty": ("", "empty file"),
    "latin1": (b"---\nname: latin1\ndescription: caf\xe9\n---\nbody\n", "not UTF-8"),
}


@pytest.mark.parametrize("folder", sorted(BROKEN))
def test_broken_skill_is_reported_and_skipped(script_runner, workspace, folder):
    content, reason = BROKEN[folder]
    path = write_raw(workspace, folder, content)
    write_skill(workspace, "healthy")
    result, skills = discover(script_runner)
    assert result.returncode == 0
    assert folder not in skills and "healthy" in skills
    lines = [line for line in result.stderr.splitlines() if line.startswith(str(path))]
    assert len(lines) == 1 and reason in lines[0], result.stderr


@pytest.mark.parametrize("metadata, reason", [
    ("'{not json'", "metadata is neither a mapping nor valid JSON"), ("[1, 2]", "metadata must be a mapping"),
    ('{"nexus": "tool"}', "metadata.nexus must be a mapping")])
def test_metadata_nexus_cannot_read_is_dropped_with_a_warning_and_the_skill_loads(script_runner, workspace,
                                                                                  metadata, reason):
    path = write_raw(workspace, "odd-meta", f"---\nname: odd-meta\ndescription: d\nmetadata: {metadata}\n---\nb\n")
    result, skills = discover(script_runner)
    assert result.returncode == 0 and skills["odd-meta"]["type"] == "prompt"
    assert f"{path}:4: warning: {reason}: it is ignored" in result.stderr
    check = script_runner.run(["nexus", "skills", "check", str(path)])
    assert check.returncode == 1 and f"{path}:4: error: {reason}" in check.stdout + check.stderr


def test_broken_yaml_names_the_line(script_runner, workspace):
    path = write_raw(workspace, "colon", "---\nname: colon\ndescription: Use it\n  when: now\n---\nbody\n")
    result, _ = discover(script_runner)
    assert f"{path}:4: invalid YAML" in result.stderr


def test_dangling_symlink_and_unreadable_folder(script_runner, workspace, tmp_path):
    dangling = workspace / "dangling"
    dangling.mkdir()
    (dangling / "SKILL.md").symlink_to(tmp_path / "nowhere.md")
    write_skill(workspace, "healthy")
    result, skills = discover(script_runner)
    assert f"{dangling}/SKILL.md: dangling symlink" in result.stderr
    assert list(skills) == [n for n in skills if n != "dangling"] and "healthy" in skills


@pytest.mark.may_skip_in_ci("root reads every folder: test_unreadable_folder_is_reported_as_nobody checks it as nobody")
def test_unreadable_folder_is_reported(script_runner, workspace):
    locked = write_skill(workspace, "locked")
    write_skill(workspace, "healthy")
    locked.chmod(0)
    try:
        result, skills = discover(script_runner)
    finally:
        locked.chmod(0o755)
    if os.geteuid() == 0:
        pytest.skip("root reads every folder: see the test below, which drops to nobody")
    assert "locked" not in skills and "healthy" in skills
    assert f"{locked}/SKILL.md: cannot read folder" in result.stderr


@pytest.mark.once
def test_unreadable_folder_is_reported_as_nobody(nobody):
    """As root every folder is readable, so run nexus-discover as nobody over a world-readable tree."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="nexus-nobody-"))
    try:
        root.chmod(0o755)
        workspace = root / "nexus" / "skills"
        locked = write_skill(workspace, "locked")
        write_skill(workspace, "healthy")
        for folder in (root / "nexus", workspace):
            folder.chmod(0o755)
        locked.chmod(0o700)  # root's, so nobody cannot look inside
        env = {**os.environ, "NEXUS_HOME": str(root / "nexus"), "HOME": str(root), "MANAGED_SKILLS_DIR": str(root / "m")}
        result = nobody.run(["nexus-discover", "--valid", str(workspace)], env)
        names = [json.loads(line)["name"] for line in result.stdout.splitlines()]
        assert names == ["healthy"], result.stderr
        assert f"{locked}/SKILL.md: cannot read folder: Permission denied" in result.stderr
    finally:
        shutil.rmtree(root)


def test_too_large_skill_is_reported(script_runner, workspace):
    path = write_raw(workspace, "huge", "---\nname: huge\ndescription: d\n---\n" + "x" * 300_000)
    result, skills = discover(script_runner)
    assert "huge" not in skills
    assert f"{path}: too large" in result.stderr


def test_broken_skills_are_printed_after_the_rest_unless_valid(script_runner, workspace):
    path = write_raw(workspace, "broken", "no frontmatter\n")
    write_skill(workspace, "zeta")
    for flags in ((), ("--invalid",)):
        records = jsonl(script_runner.run(["nexus-discover", *flags]).stdout)
        assert records[-1]["name"] == "broken" and records[-1]["status"] == "invalid"
        assert records[-1]["filePath"] == str(path) and "no frontmatter" in records[-1]["error"]
        assert "zeta" in by_name(records)
    valid = jsonl(script_runner.run(["nexus-discover", "--valid"]).stdout)
    assert "broken" not in by_name(valid) and "zeta" in by_name(valid)


def test_explicit_folders(script_runner, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_skill(a, "same", description="from a")
    write_skill(b, "same", description="from b")
    _, skills = discover(script_runner, str(a), str(b))
    assert list(skills) == ["same"] and skills["same"]["description"] == "from b"


def test_nothing_readable_exits_2(script_runner, tmp_path):
    result = script_runner.run(["nexus-discover", str(tmp_path / "missing")])
    assert result.returncode == 2
    assert "no skill source could be read" in result.stderr


def test_broken_config_is_a_clear_error(script_runner, nexus_home):
    path = write_config(nexus_home, "[skills\nx = 1\n")
    result = script_runner.run(["nexus-discover"])
    assert result.returncode == 2
    assert str(path) in result.stderr and "line 1" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_metadata_values_are_ignored_with_a_warning(script_runner, workspace, nexus_home):
    write_raw(workspace, "odd", '---\nname: odd\ndescription: d\nmetadata: {"nexus": {"skillKey": ["a"], "tool": 5,'
                                ' "always": "yes", "type": "tool"}}\n---\nbody\n')
    write_config(nexus_home, "[skills.entries.a]\napiKey = 'k'\n")
    result, skills = discover(script_runner)
    assert skills["odd"]["type"] == "prompt" and "skillKey" not in skills["odd"]
    assert "metadata.nexus.skillKey must be text" in result.stderr
    assert "read as prompt" in result.stderr
    listed = script_runner.run(["nexus", "skills", "list", "--json"])
    assert listed.returncode == 0 and by_name(json.loads(listed.stdout))["odd"]["status"] == "ready"


def test_yaml_aliases_are_refused_quickly(script_runner, workspace):
    import time

    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    path = write_raw(workspace, "bomb", "---\nname: bomb\ndescription: d\n" + "\n".join(levels) + "\n---\nbody\n")
    started = time.monotonic()
    result, skills = discover(script_runner)
    assert time.monotonic() - started < 10
    assert "bomb" not in skills and f"{path}: YAML aliases (*name) are not allowed" in result.stderr


def test_a_skill_md_that_is_not_a_file(script_runner, workspace):
    (workspace / "folder" / "SKILL.md").mkdir(parents=True)
    (workspace / "pipe").mkdir()
    os.mkfifo(workspace / "pipe" / "SKILL.md")
    write_skill(workspace, "healthy")
    result, skills = discover(script_runner)
    assert "healthy" in skills and "folder" not in skills and "pipe" not in skills
    assert result.stderr.count("not a regular file") == 2


def test_many_unquoted_colons_are_capped(script_runner, workspace):
    import time

    lines = "".join(f"k{i}: a: b\n" for i in range(3000))
    path = write_raw(workspace, "colons", "---\nname: colons\ndescription: d\n" + lines + "---\nbody\n")
    started = time.monotonic()
    result, skills = discover(script_runner)
    assert time.monotonic() - started < 10
    assert "colons" not in skills and f"{path}:" in result.stderr


def test_a_missing_folder_named_on_the_command_line_is_reported(script_runner, tmp_path):
    write_skill(tmp_path / "real", "one")
    result = script_runner.run(["nexus-discover", str(tmp_path / "real"), str(tmp_path / "gone")])
    assert result.returncode == 0
    assert f"nexus-discover: {tmp_path / 'gone'}: no such folder" in result.stderr


def test_config_values_of_the_wrong_type_are_refused(script_runner, nexus_home):
    path = write_config(nexus_home, "[skills]\nbinPath = 7\n[skills.load]\nextraDirs = 3\n")
    result = script_runner.run(["nexus-discover"])
    assert result.returncode == 2
    assert result.stderr == (f"nexus-discover: config '{path}', line 2: skills.binPath needs a list of folders, "
                             'each absolute or starting with ~ (no . or ..), as ["~/bin"], not 7\n')
