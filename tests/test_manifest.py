"""nexus-manifest and the freshness rules: rebuilt only when something changed."""

import io
import json
import os
import time

import pytest
from helpers import by_name, jsonl, write_config, write_raw, write_skill


def manifest_path(nexus_home):
    return nexus_home / "state" / "nexus" / "skills" / "manifest.json"


def pipeline(script_runner):
    discovered = script_runner.run(["nexus-discover", "--invalid"])
    written = script_runner.run(["nexus-manifest", "write"], stdin=io.StringIO(discovered.stdout))
    assert written.returncode == 0, written.stderr
    return discovered


def touch_later(path):
    later = time.time() + 5
    os.utime(path, (later, later))


def test_pipeline_round_trips(script_runner, workspace, nexus_home):
    write_skill(workspace, "alpha")
    discovered = pipeline(script_runner)
    read = script_runner.run(["nexus-manifest", "read"])
    assert by_name(jsonl(read.stdout))["alpha"] == by_name(jsonl(discovered.stdout))["alpha"]
    manifest = json.loads(manifest_path(nexus_home).read_text())
    assert manifest["version"] == 2 and manifest["generatedAt"].endswith("Z")
    assert script_runner.run(["nexus-manifest", "check"]).returncode == 0


def test_stale_after_changes(script_runner, workspace, nexus_home):
    skill_dir = write_skill(workspace, "alpha")
    assert script_runner.run(["nexus-manifest", "check"]).returncode == 1  # missing
    pipeline(script_runner)
    touch_later(skill_dir / "SKILL.md")
    assert script_runner.run(["nexus-manifest", "check"]).returncode == 1  # edited in place
    pipeline(script_runner)
    write_skill(workspace, "beta")
    assert script_runner.run(["nexus-manifest", "check"]).returncode == 1  # a new folder
    pipeline(script_runner)
    manifest = json.loads(manifest_path(nexus_home).read_text())
    manifest["nexusVersion"] = "0.0.0-other"
    manifest_path(nexus_home).write_text(json.dumps(manifest))
    assert script_runner.run(["nexus-manifest", "check"]).returncode == 1  # another version
    pipeline(script_runner)
    write_config(nexus_home, f'[skills.load]\nextraDirs = ["{workspace.parent / "extra"}"]\n')
    assert script_runner.run(["nexus-manifest", "check"]).returncode == 1  # another set of sources


def test_list_reuses_a_fresh_manifest(script_runner, workspace, nexus_home):
    skill_dir = write_skill(workspace, "alpha")
    script_runner.run(["nexus", "skills", "list"])
    first = json.loads(manifest_path(nexus_home).read_text())["generatedAt"]
    time.sleep(0.01)
    script_runner.run(["nexus", "skills", "list", "--json"])
    assert json.loads(manifest_path(nexus_home).read_text())["generatedAt"] == first
    touch_later(skill_dir / "SKILL.md")
    script_runner.run(["nexus", "skills", "list", "--json"])
    assert json.loads(manifest_path(nexus_home).read_text())["generatedAt"] != first


def test_write_rejects_bad_input_and_keeps_the_old_manifest(script_runner, workspace, nexus_home):
    write_skill(workspace, "alpha")
    pipeline(script_runner)
    before = manifest_path(nexus_home).read_bytes()
    for bad, where in (('{"name": "ok", "filePath": "/x"}\n{broken\n', "stdin:2"),
                       ('{"name": "../evil", "filePath": "/x"}\n', "stdin:1"),
                       ('{"name": "a", "filePath": "/x"}\n{"name": "a", "filePath": "/y"}\n', "appears twice")):
        result = script_runner.run(["nexus-manifest", "write"], stdin=io.StringIO(bad))
        assert result.returncode == 2 and where in result.stderr
    assert manifest_path(nexus_home).read_bytes() == before


def test_read_without_manifest(script_runner):
    result = script_runner.run(["nexus-manifest", "read"])
    assert result.returncode == 1 and "nexus skills refresh" in result.stderr


def test_corrupt_manifest_is_rebuilt(script_runner, workspace, nexus_home):
    write_skill(workspace, "alpha")
    script_runner.run(["nexus", "skills", "refresh"])
    manifest_path(nexus_home).write_text("{not json")
    assert script_runner.run(["nexus-manifest", "check"]).returncode == 1
    listed = script_runner.run(["nexus", "skills", "list", "--json"])
    assert listed.returncode == 0 and "alpha" in by_name(json.loads(listed.stdout))


def test_refresh_reports_counts(script_runner, workspace):
    write_skill(workspace, "alpha")
    (workspace / "broken").mkdir()
    (workspace / "broken" / "SKILL.md").write_text("nope\n")
    result = script_runner.run(["nexus", "skills", "refresh", "--json"])
    summary = json.loads(result.stdout)
    assert summary["invalid"] == 1 and summary["skills"] >= 1
    assert "broken/SKILL.md" in result.stderr


def test_refresh_creates_state_for_tool_skills(script_runner, workspace, nexus_home):
    write_skill(workspace, "gog")
    write_skill(workspace, "notes")
    script_runner.run(["nexus", "skills", "refresh"])
    state = json.loads((nexus_home / "state/nexus/skills/gog/state.json").read_text())
    assert state == {"version": 1, "configured": False, "type": "tool", "tool": "gog",
                     "verify": "gog gmail labels list --account default"}
    assert not (nexus_home / "state/nexus/skills/notes").exists()


def test_a_broken_skill_folder_link_stays_listed(script_runner, workspace, tmp_path):
    (workspace / "dangling").symlink_to(tmp_path / "nowhere", target_is_directory=True)
    for _ in range(2):  # the second list reads the cached manifest: the broken link must still be there
        skills = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
        assert skills["dangling"]["status"] == "invalid" and "broken symlink" in skills["dangling"]["error"]
    write_skill(tmp_path, "nowhere")  # the link now leads to a skill
    skills = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    assert skills["nowhere"]["status"] == "ready"


def test_the_pipeline_and_refresh_write_the_same_manifest(script_runner, workspace, nexus_home, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")  # so that generatedAt agrees too
    write_skill(workspace, "alpha")
    write_skill(tmp_path / "managed", "alpha", description="Hidden by the workspace's alpha.")
    write_raw(workspace, "broken", "no frontmatter\n")
    (workspace / "empty").mkdir()
    assert script_runner.run(["nexus", "skills", "refresh"]).returncode == 0
    refreshed = manifest_path(nexus_home).read_bytes()
    manifest_path(nexus_home).unlink()
    discovered = script_runner.run(["nexus-discover"])
    assert script_runner.run(["nexus-manifest", "write"], stdin=io.StringIO(discovered.stdout)).returncode == 0
    assert manifest_path(nexus_home).read_bytes() == refreshed
    manifest = json.loads(refreshed)
    assert manifest["generatedAt"] == "2026-01-01T00:00:00.000Z"
    assert [r["name"] for r in manifest["invalid"]] == ["broken"]
    assert [f["dir"] for f in manifest["folders"]] == [str(workspace / "empty")]
    assert manifest["skills"]["alpha"]["source"] == "nexus-workspace"
    write_skill(workspace, "empty")  # a SKILL.md in the watched folder is seen at once after the pipeline too
    listed = json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout)
    assert "empty" in {r["name"] for r in listed}


def test_a_cold_refresh_read_in_processes_writes_what_the_pipeline_writes(script_runner, workspace, nexus_home, tmp_path,
                                                                          monkeypatch):
    """Enough folders to be read in a process per CPU (discovery.IN_PROCESSES): the children hand back finished
    lines, and which tool skills have no state yet; the later shares, a child's, hold a warned, a broken and a
    shadowed skill, and tool skills."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    for n in range(1200):
        write_skill(workspace, f"skill-{n:04d}", meta={"tool": f"tool-{n}"} if n % 3 == 0 else None)
    write_skill(workspace, "warned", folder="zz-warned")
    write_raw(workspace, "zz-broken", "no frontmatter\n")
    write_skill(tmp_path / "managed", "skill-0001", description="Hidden by the workspace's.")
    refreshed = script_runner.run(["nexus", "skills", "refresh", "--json"])
    assert refreshed.returncode == 0 and "zz-warned" in refreshed.stderr and "zz-broken" in refreshed.stderr
    assert json.loads(refreshed.stdout)["shadowed"] == 1
    state = nexus_home / "state/nexus/skills"
    assert all((state / f"skill-{n:04d}" / "state.json").exists() == (n % 3 == 0) for n in range(1200))
    assert json.loads((state / "skill-1197/state.json").read_text())["tool"] == "tool-1197"
    manifest = manifest_path(nexus_home).read_bytes()
    manifest_path(nexus_home).unlink()
    pipeline(script_runner)
    assert manifest_path(nexus_home).read_bytes() == manifest
    skills = json.loads(manifest)["skills"]
    assert skills["warned"]["dir"] == str(workspace / "zz-warned") and skills["skill-0001"]["source"] == "nexus-workspace"
    assert [r["name"] for r in json.loads(manifest)["invalid"]] == ["zz-broken"]


def test_a_skill_is_run_from_its_own_line_of_the_manifest(script_runner, workspace, nexus_home):
    write_skill(workspace, "alpha", body="Alpha's prompt.\n")
    write_skill(workspace, "beta")
    script_runner.run(["nexus", "skills", "refresh"])
    path = manifest_path(nexus_home)
    lines = path.read_bytes().split(b"\n")
    beta = next(i for i, line in enumerate(lines) if line.startswith(b'"beta":'))
    lines[beta] = b'"beta":{this is not read},'
    path.write_bytes(b"\n".join(lines))
    before = path.read_bytes()
    ran = script_runner.run(["nexus", "skill", "run", "alpha"])
    assert ran.returncode == 0 and "Alpha's prompt." in ran.stdout, ran.stderr
    assert path.read_bytes() == before  # neither parsed nor rewritten: only the head and alpha's line were read


def write_warned(workspace):
    """A skill that loads with a warning, so that stderr tells whether it was read again."""
    return write_skill(workspace, "warned", folder="warned-folder")


def test_a_stale_manifest_is_refreshed_only_where_things_changed(script_runner, workspace, nexus_home, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    alpha = write_skill(workspace, "alpha")
    write_warned(workspace)
    write_raw(workspace, "broken", "no frontmatter\n")
    (workspace / "empty").mkdir()
    first = script_runner.run(["nexus", "skills", "list", "--json"])
    assert "warned-folder" in first.stderr and "broken" in first.stderr

    touch_later(alpha / "SKILL.md")
    write_skill(workspace, "gamma")
    write_skill(workspace, "empty")
    listed = script_runner.run(["nexus", "skills", "list", "--json"])
    assert listed.returncode == 0 and listed.stderr == ""  # neither warned nor broken was read again
    assert {"alpha", "gamma", "empty", "warned", "broken"} <= {r["name"] for r in json.loads(listed.stdout)}
    incremental = manifest_path(nexus_home).read_bytes()
    assert script_runner.run(["nexus", "skills", "refresh"]).returncode == 0
    assert manifest_path(nexus_home).read_bytes() == incremental  # what a full scan writes, byte for byte

    (workspace / "gamma" / "SKILL.md").unlink()
    (workspace / "gamma").rmdir()
    listed = json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout)
    assert "gamma" not in {r["name"] for r in listed}


def test_another_nexus_or_other_sources_read_everything_again(script_runner, workspace, nexus_home, tmp_path):
    write_skill(workspace, "alpha")
    write_warned(workspace)
    script_runner.run(["nexus", "skills", "refresh"])
    path = manifest_path(nexus_home)
    path.write_bytes(path.read_bytes().replace(b'"nexusVersion":"', b'"nexusVersion":"0.0.0-other', 1))
    assert "warned-folder" in script_runner.run(["nexus", "skills", "list"]).stderr
    assert "warned-folder" not in script_runner.run(["nexus", "skills", "list"]).stderr
    write_config(nexus_home, f'[skills.load]\nextraDirs = ["{tmp_path / "extra"}"]\n')
    assert "warned-folder" in script_runner.run(["nexus", "skills", "list"]).stderr


def test_a_large_manifest_is_read_where_needed(script_runner, workspace, nexus_home, monkeypatch):
    from nexus.catalog import manifest

    for n in range(40):
        write_skill(workspace, f"skill-{n:02d}", body="Lines of a long prompt.\n" * 20)
    assert script_runner.run(["nexus", "skills", "refresh"]).returncode == 0
    monkeypatch.setattr(manifest, "SMALL", 1024)  # every manifest counts as large
    monkeypatch.setattr(manifest._File, "CHUNK", 64)
    large = manifest.load()
    assert isinstance(large.data, manifest._File)
    whole = manifest_path(nexus_home).read_bytes()
    for n in range(40):
        line = next(line for line in whole.split(b"\n") if line.startswith(f'"skill-{n:02d}":'.encode()))
        assert large.find_line(f"skill-{n:02d}") == line.rstrip(b",").partition(b":")[2]
    assert large.find_line("skill-40") is None and large.find_line("aaa") is None and large.find_line("zzz") is None
    assert large.head["version"] == 2 and large.names()[:2] == ["disk-report", "filesystem"]


def test_the_lines_of_the_manifest_are_written_and_read_by_named_functions():
    """The byte splicing behind the manifest and a listing: what is written is read back as it was."""
    import json

    from nexus.catalog import manifest

    entry = {"name": "alpha", "description": 'a "quoted", {braced} text: with colons', "n": 1}
    text = json.dumps(entry, separators=(",", ":")).encode()
    line = manifest.skill_line("alpha", text)
    assert line == b'"alpha":' + text and json.loads(b"{" + line + b"}") == {"alpha": entry}
    for written in (line, line + b","):
        assert manifest.split_line(written) == ("alpha", text) and manifest.entry_text(written) == text
    spliced = manifest.with_members(text, b'"status":"ready","missing":{}')
    assert json.loads(spliced) == {**entry, "status": "ready", "missing": {}}
    head = {"version": 3, "sources": [["x", 1]]}
    assert manifest.read_head(manifest.head_line(head)) == head
    assert manifest.read_head(b'{"version":3}') is None and manifest.read_head(b"[1],") is None


def test_a_status_cache_row_has_named_fields_and_round_trips_through_its_list():
    from nexus.catalog.listing import Row

    values = [1, ["gh"], ["TOKEN"], ["gh"], [], None, "ready", "{}", None, "ready", '{"verified":true}', None]
    row = Row(*values)
    assert (row.key, row.bins, row.status, row.added) == (1, ["gh"], "ready", '{"verified":true}')
    assert row.as_list() == values
    with pytest.raises(TypeError):
        Row(*values[:-1])  # a row of another shape: the cache is read as missing


def test_a_few_edited_skills_are_read_again_in_place_into_the_bytes_a_full_scan_writes(script_runner, workspace,
                                                                                       nexus_home, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    for name in ("alpha", "beta", "gamma", "delta"):
        write_skill(workspace, name)
    write_warned(workspace)
    assert script_runner.run(["nexus", "skills", "list", "--json"]).returncode == 0

    def edited(change):
        change()
        listed = script_runner.run(["nexus", "skills", "list", "--json"])
        assert listed.returncode == 0
        kept = manifest_path(nexus_home).read_bytes()
        assert script_runner.run(["nexus", "skills", "refresh"]).returncode == 0
        assert manifest_path(nexus_home).read_bytes() == kept  # what a full scan writes, byte for byte
        return listed, by_name(json.loads(listed.stdout))

    listed, found = edited(lambda: write_skill(workspace, "alpha", description="Edited in place."))
    assert found["alpha"]["description"] == "Edited in place." and listed.stderr == ""  # warned was not read
    listed, found = edited(lambda: write_skill(workspace, "beta", meta={"tool": "sh"}))  # now a tool: its state made
    assert found["beta"]["type"] == "tool" and (nexus_home / "state/nexus/skills/beta/state.json").exists()
    # What ties a line to others: read again as a whole
    listed, found = edited(lambda: write_skill(workspace, "gamma", meta={"aliases": ["gee"]}))
    assert json.loads(manifest_path(nexus_home).read_bytes().split(b"\n")[0][:-1] + b"}")["aliases"] == {
        "gee": "gamma"}
    listed, found = edited(lambda: write_raw(workspace, "delta", "no frontmatter\n"))  # now broken
    assert found["delta"]["status"] == "invalid"
    listed, found = edited(lambda: write_skill(workspace, "omega", folder="alpha"))  # another name
    assert "omega" in found and "alpha" not in found
