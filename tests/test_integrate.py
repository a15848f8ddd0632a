"""nexus skills prompt|cursor-rules|agents-md: the ready skills, for agents and editors; --write is idempotent."""

import os
import re
import xml.etree.ElementTree as ET

import pytest
from helpers import bundled_names, make_tool, write_config, write_skill


@pytest.fixture
def skills(workspace, bindir, nexus_home, monkeypatch):
    """One skill of every status; the ready ones are zeta, alpha-tool and (high priority) omega."""
    make_tool(bindir, "alphatool")
    monkeypatch.delenv("NEXUS_TEST_UNSET_KEY", raising=False)
    write_skill(workspace, "zeta", description="Prompt only: <b>bold</b> & more.")
    write_skill(workspace, "alpha-tool", description="Uses alphatool.", meta={"tool": "alphatool"})
    write_skill(workspace, "omega", description="Loads early.", meta={"priority": "high"})
    write_skill(workspace, "gone", description="Binary missing.", meta={"requires": {"bins": ["no-such-bin-x"]}})
    write_skill(workspace, "keyless", description="Needs a key.", meta={"requires": {"env": ["NEXUS_TEST_UNSET_KEY"]}})
    write_skill(workspace, "off", description="Switched off.")
    # allowBundled = []: the bundled skills are disabled, so the ready set is exactly the three above
    write_config(nexus_home, "[skills]\nallowBundled = []\n[skills.entries.off]\nenabled = false\n")
    return workspace


READY = ["omega", "alpha-tool", "zeta"]


def test_prompt_xml_lists_exactly_the_ready_skills_in_order(script_runner, skills):
    result = script_runner.run(["nexus", "skills", "prompt"])
    assert result.returncode == 0, result.stderr
    block = ET.fromstring(result.stdout)  # well-formed XML despite the <b> and & in a description
    assert block.tag == "available_skills"
    names = [s.findtext("name") for s in block]
    assert names == READY
    zeta = block[2]
    assert zeta.findtext("description") == "Prompt only: <b>bold</b> & more."
    assert zeta.findtext("location") == str(skills / "zeta" / "SKILL.md")
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; more" in result.stdout


def test_prompt_markdown(script_runner, skills):
    result = script_runner.run(["nexus", "skills", "prompt", "--format", "markdown"])
    assert result.returncode == 0, result.stderr
    items = re.findall(r"^- \*\*(\S+)\*\*: (.*) \((/.*)\)$", result.stdout, re.M)
    assert [name for name, _, _ in items] == READY
    assert items[2][1:] == ("Prompt only: &lt;b&gt;bold&lt;/b&gt; &amp; more.", str(skills / "zeta" / "SKILL.md"))


def test_prompt_rejects_unknown_format(script_runner, skills):
    result = script_runner.run(["nexus", "skills", "prompt", "--format", "html"])
    assert result.returncode == 2
    assert result.stderr.startswith("nexus: skills prompt: --format needs xml or markdown, not 'html'")
    assert result.stdout == ""


def test_prompt_with_no_ready_skills_is_an_empty_block(script_runner, workspace, nexus_home):
    write_config(nexus_home, "[skills]\nallowBundled = []\n")
    result = script_runner.run(["nexus", "skills", "prompt"])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "<available_skills>\n</available_skills>\n"


def listed(text):
    return re.findall(r"^- \*\*(\S+)\*\*", text, re.M)


def test_cursor_rules_prints_the_design_text_and_ready_skills(script_runner, skills):
    result = script_runner.run(["nexus", "skills", "cursor-rules"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("---\n") and "alwaysApply: true" in result.stdout
    assert "# Nexus Skills" in result.stdout and "nexus skill run <skill-name> [-- args]" in result.stdout
    assert listed(result.stdout.split("## Configured Skills")[1]) == READY


def test_cursor_rules_write_creates_folders_and_is_idempotent(script_runner, skills, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    result = script_runner.run(["nexus", "skills", "cursor-rules", "--write", str(project)])
    assert result.returncode == 0, result.stderr
    rules = project / ".cursor" / "rules" / "nexus-skills.mdc"
    assert result.stdout.strip() == str(rules)
    assert rules.stat().st_mode & 0o777 == 0o644  # as an editor writes a file, never 0666
    agents = project / "AGENTS.md"
    assert script_runner.run(["nexus", "skills", "agents-md", "--write", str(agents)]).returncode == 0
    assert agents.stat().st_mode & 0o777 == 0o644
    printed = script_runner.run(["nexus", "skills", "cursor-rules"]).stdout
    assert rules.read_text() == printed
    before = rules.stat()
    again = script_runner.run(["nexus", "skills", "cursor-rules", "--write", str(project)])
    assert again.returncode == 0 and rules.read_text() == printed
    assert rules.stat().st_mtime_ns == before.st_mtime_ns  # unchanged text: not even rewritten


def test_cursor_rules_write_defaults_to_the_current_folder(script_runner, skills, tmp_path):
    result = script_runner.run(["nexus", "skills", "cursor-rules", "--write"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert listed((tmp_path / ".cursor" / "rules" / "nexus-skills.mdc").read_text()) == READY


def test_cursor_rules_refuses_a_missing_folder_or_a_folder_without_write(script_runner, skills, tmp_path):
    missing = script_runner.run(["nexus", "skills", "cursor-rules", "--write", str(tmp_path / "nope")])
    assert missing.returncode == 2 and "nope" in missing.stderr
    assert not (tmp_path / "nope").exists()
    bare = script_runner.run(["nexus", "skills", "cursor-rules", str(tmp_path)])
    assert bare.returncode == 2 and "--write" in bare.stderr
    assert not (tmp_path / ".cursor").exists()


START, END = "<!-- nexus:skills:start -->", "<!-- nexus:skills:end -->"


def test_agents_md_prints_the_marked_section(script_runner, skills):
    result = script_runner.run(["nexus", "skills", "agents-md"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(START + "\n") and result.stdout.endswith(END + "\n")
    assert "## Skills" in result.stdout and "nexus skill run <name> [-- arguments]" in result.stdout
    assert listed(result.stdout) == READY


def test_agents_md_write_appends_then_updates_only_its_section(script_runner, skills, tmp_path):
    agents = tmp_path / "AGENTS.md"
    mine = "# My Workspace\n\n## Identity\n\nBe kind.\n"
    agents.write_text(mine)
    agents.chmod(0o640)
    result = script_runner.run(["nexus", "skills", "agents-md", "--write", str(agents)])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(agents)
    section = script_runner.run(["nexus", "skills", "agents-md"]).stdout
    assert agents.read_text() == mine + "\n" + section
    assert agents.stat().st_mode & 0o777 == 0o640

    # the user adds text on both sides; a skill stops being ready; only the section changes
    agents.write_text("Preface.\n\n" + agents.read_text() + "\n## Memories\n\nDaily notes.\n")
    (skills / "omega" / "SKILL.md").unlink()
    os.rmdir(skills / "omega")
    assert script_runner.run(["nexus", "skills", "agents-md", "--write", str(agents)]).returncode == 0
    text = agents.read_text()
    assert text.startswith("Preface.\n\n" + mine + "\n" + START)
    assert text.endswith(END + "\n\n## Memories\n\nDaily notes.\n")
    assert listed(text) == ["alpha-tool", "zeta"]

    before = agents.read_bytes()
    assert script_runner.run(["nexus", "skills", "agents-md", "--write", str(agents)]).returncode == 0
    assert agents.read_bytes() == before


def test_agents_md_write_creates_the_file_and_writes_through_a_symlink(script_runner, skills, tmp_path):
    agents, link = tmp_path / "AGENTS.md", tmp_path / "CLAUDE.md"
    link.symlink_to(agents.name)
    result = script_runner.run(["nexus", "skills", "agents-md", "--write", str(link)])
    assert result.returncode == 0, result.stderr
    assert link.is_symlink()
    assert agents.read_text() == script_runner.run(["nexus", "skills", "agents-md"]).stdout


def test_agents_md_keeps_crlf_line_endings(script_runner, skills, tmp_path):
    agents = tmp_path / "AGENTS.md"
    agents.write_bytes(b"# Mine\r\n")
    assert script_runner.run(["nexus", "skills", "agents-md", "--write", str(agents)]).returncode == 0
    data = agents.read_bytes()
    assert data.startswith(b"# Mine\r\n\r\n" + START.encode() + b"\r\n")
    assert b"\n" not in data.replace(b"\r\n", b"")


@pytest.mark.parametrize("broken", [START + "\nno end\n", "end first\n" + END + "\n" + START + "\n",
                                    START + "\n" + END + "\n" + START + "\n" + END + "\n"])
def test_agents_md_refuses_broken_markers_and_loses_nothing(script_runner, skills, tmp_path, broken):
    agents = tmp_path / "AGENTS.md"
    agents.write_text(broken)
    result = script_runner.run(["nexus", "skills", "agents-md", "--write", str(agents)])
    assert result.returncode == 2
    assert result.stderr.startswith(f"nexus: '{agents}': expected one {START} line")
    assert agents.read_text() == broken


def test_list_skills_prints_manifest_names_only(script_runner, skills):
    assert script_runner.run(["nexus", "--list-skills"]).stdout == ""  # no manifest yet: nothing, quickly
    assert script_runner.run(["nexus", "skills", "refresh"]).returncode == 0
    result = script_runner.run(["nexus", "--list-skills"])
    assert result.returncode == 0
    assert result.stdout.split() == sorted(["zeta", "alpha-tool", "omega", "gone", "keyless", "off"] + bundled_names())
