"""nexus-mcp by the letter of the protocol and of the Skills extension (issue 42): every result valid in
both protocol eras, what is published and what is not, names, pages and the server's instructions. The
server runs as a process of its own, driven by the MCP SDK's own client (both eras) or line by line."""

import json
import os
import shutil
import subprocess

import pytest
from helpers import make_tool, write_config, write_skill

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp", reason="the mcp extra is not installed")

import mcp_types as types  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp_types import methods  # noqa: E402
from test_mcp import ask, connected  # noqa: E402

pytestmark = pytest.mark.once  # each test starts its own server, the same in both launch modes

ERAS = ("2025-11-25", "2026-07-28")  # the handshake's latest, and the revision without one


@pytest.fixture
def corpus(workspace, bindir, nexus_home):
    """A tool skill `say`, a prompt skill `guide` with files in a folder and an empty folder, no bundled ones."""
    write_config(nexus_home, "[skills]\nallowBundled = []\n")
    make_tool(bindir, "say", '#!/bin/sh\nprintf "%s\\n" "$*"\n')
    write_skill(workspace, "say", "Say the words.", meta={"tool": "say"})
    folder = write_skill(workspace, "guide", "How to do it.", body="Read references/steps.md.\n")
    (folder / "references").mkdir()
    (folder / "references" / "steps.md").write_text("1. Begin.\n")
    (folder / "assets").mkdir()
    return workspace


async def opened(session, era):
    """The session opened in `era`: a handshake, or the 2026 revision's discover."""
    if era == "2026-07-28":
        await session.discover()
    else:
        assert (await session.initialize()).protocol_version == era


def registered():
    """The request methods the server answers, as its SDK server has them registered."""
    from nexus.mcp import server

    return set(server.Nexus(1000, 0, 1, "each", print).server("")._request_handlers)


# What each registered method is asked, in order; how a method the era does not know is answered is its
# own business (a -32601), so only the methods of the era are checked.
ASKED = (("ping", {}), ("server/discover", {}), ("tools/list", {}),
         ("tools/call", {"name": "say", "arguments": {"args": ["hi"]}}), ("prompts/list", {}),
         ("prompts/get", {"name": "guide"}), ("resources/list", {}), ("resources/templates/list", {}),
         ("resources/read", None), ("skills/list", {}), ("skills/get", {"uri": "skill://guide/SKILL.md"}),
         ("resources/directory/read", {"uri": "skill://guide"}),
         ("resources/directory/read", {"uri": "skill://guide/references"}))
NOT_ASKED = {"subscriptions/listen": "its answer is a stream that ends when the client stops listening "
                                     "(test_mcp.py's listen test)"}
EXTENSION = {"skills/list", "skills/get", "resources/directory/read"}  # the Skills extension's (no SDK type)


def check_extension(method, era, result):
    """An extension's result, by the extension's shapes; in the 2026 revision with what every list of it
    says (resultType, and ttlMs and cacheScope, which hosts check as on the revision's own lists)."""
    if era == "2026-07-28":
        assert result["resultType"] == "complete"
        assert result["ttlMs"] == 0 and result["cacheScope"] == "private"
    if method == "resources/directory/read":
        methods.validate_server_result("resources/list", era, result)
        return
    for entry in result["skills"] if method == "skills/list" else [result["skill"]]:
        assert entry["uri"].startswith("skill://") and entry["uri"].endswith("/SKILL.md")
        assert isinstance(entry["frontmatter"], dict) and isinstance(entry["frontmatter"]["description"], str)
        for resource in entry["resources"]:
            assert set(resource) == {"uri", "digest", "size"} and resource["digest"].startswith("sha256:")


@pytest.mark.parametrize("era", ERAS)
def test_every_method_the_server_registers_answers_a_result_valid_in_the_era(corpus, tmp_path, era):
    asked = {method for method, _ in ASKED}
    assert registered() == asked | set(NOT_ASKED)  # a method added to the server is added here

    async def main():
        async with connected(tmp_path) as session:
            await opened(session, era)
            answers = []
            for method, params in ASKED:
                if (method, era) not in methods.CLIENT_REQUESTS and method not in EXTENSION:
                    continue
                if method == "resources/read":
                    params = {"uri": (await session.list_resources()).resources[0].uri}
                answers.append((method, await ask(session, method, params)))
            return answers

    answers = anyio.run(main)
    assert {m for m, _ in answers} >= asked - {"server/discover", "ping"} - (
        {"ping"} if era == "2026-07-28" else set())
    for method, result in answers:
        if method in EXTENSION:
            check_extension(method, era, result)
        else:
            methods.validate_server_result(method, era, result)


def test_a_directory_read_lists_an_empty_folder_and_names_skill_md_after_the_skill(corpus, tmp_path):
    async def scenario(session):
        return [await ask(session, "resources/directory/read", {"uri": uri})
                for uri in ("skill://guide", "skill://guide/assets", "skill://gu%69de/references")]

    root, empty, encoded = serve(tmp_path, scenario)
    assert root["resources"] == [
        {"uri": "skill://guide/SKILL.md", "name": "guide", "description": "How to do it.", "mimeType": "text/markdown"},
        {"uri": "skill://guide/assets", "name": "assets", "mimeType": "inode/directory"},
        {"uri": "skill://guide/references", "name": "references", "mimeType": "inode/directory"}]
    assert empty["resources"] == [] and "nextCursor" not in empty
    assert [r["uri"] for r in encoded["resources"]] == ["skill://guide/references/steps.md"]


def serve(tmp_path, scenario, era="2025-11-25", *argv):
    async def main():
        async with connected(tmp_path, *argv) as session:
            await opened(session, era)
            return await scenario(session)

    return anyio.run(main)


def mixed(workspace):
    """Skills that nexus reads and hosts read otherwise or reject: each by its name, with what list_skills
    says of it."""
    bad = {
        "octal": ("mode: 0755\n", "'0755' is 493 to YAML 1.1 (PyYAML) but 755 to a YAML 1.2 host"),
        "switch": ("beta: off\n", "'off' is false to YAML 1.1 (PyYAML) but \"off\" to a YAML 1.2 host"),
        "grouped": ("count: 1_000\n", "'1_000' is 1000 to YAML 1.1 (PyYAML) but \"1_000\" to a YAML 1.2 host"),
        "twice": ("description: Again.\n", "the key 'description' is given twice"),
        "textual": ("metadata: just text\n", "its metadata is not a mapping"),
    }
    for name, (extra, _) in bad.items():
        write_skill(workspace, name, "A skill.", extra=extra)
    write_skill(workspace, "long", "x" * 1100)
    bad["long"] = (None, "its description is 1,100 characters, over the Agent Skills limit of 1,024")
    write_skill(workspace, "café", "Not ASCII.")
    bad["café"] = (None, "its name is not ASCII")
    for name, data, why in (("crlf", b"---\r\nname: crlf\r\ndescription: CRLF.\r\n---\r\nBody\r\n", "CRLF"),
                            ("bom", b"\xef\xbb\xbf---\nname: bom\ndescription: BOM.\n---\nBody\n", "byte-order mark")):
        (workspace / name).mkdir()
        (workspace / name / "SKILL.md").write_bytes(data)
        bad[name] = (None, why)
    write_skill(workspace, "quoted", "Fine.", extra="mode: \"0755\"\nbeta: 'off'\nversion: 1.10\n")
    return {name: why for name, (_, why) in bad.items()}


@pytest.mark.parametrize("era", ERAS)
def test_only_what_every_host_reads_alike_is_published_and_list_skills_says_why(corpus, tmp_path, era):
    bad = mixed(corpus)

    async def scenario(session):
        listed = await ask(session, "skills/list")
        refused = []
        for uri in ("skill://caf%C3%A9/SKILL.md", "skill://café/SKILL.md", "skill://octal/SKILL.md"):
            with pytest.raises(MCPError) as caught:
                await ask(session, "skills/get", {"uri": uri})
            refused.append(caught.value.error.message)
        return listed, refused, await session.call_tool("list_skills", {})

    listed, refused, skills = serve(tmp_path, scenario, era)
    assert [s["uri"] for s in listed["skills"]] == ["skill://guide/SKILL.md", "skill://quoted/SKILL.md"]
    assert all("not published: its name is not ASCII" in why for why in refused[:2])  # decoded, then refused
    assert "755 to a YAML 1.2 host" in refused[2]
    why = {s["name"]: s.get("notPublished") for s in skills.structured_content["skills"]}
    for name, reason in bad.items():
        assert reason in why[name], (name, why[name])
    assert why["guide"] is None and why["quoted"] is None


def test_skills_check_names_the_value_a_yaml_1_2_host_sees(corpus, script_runner):
    mixed(corpus)
    checked = script_runner.run(["nexus", "skills", "check", "--json", str(corpus)])
    found = {(f["path"].split("/")[-2], f["code"], f["message"].split(" to a YAML")[0]) for f in json.loads(checked.stdout)}
    assert ("octal", "yaml", "'0755' is 493 to YAML 1.1 (PyYAML) but 755") in found
    assert ("switch", "yaml", "'off' is false to YAML 1.1 (PyYAML) but \"off\"") in found
    assert not any(f[0] == "quoted" for f in found)


def many(workspace, count, prefix="note"):
    for i in range(count):
        write_skill(workspace, f"{prefix}-{i:03d}", f"Note {i}.")


def pages(session, method, key):
    """Every item of a paged list, following its cursors; and how many pages it took."""
    async def follow():
        found, cursor, count = [], None, 0
        while True:
            result = await ask(session, method, {"cursor": cursor} if cursor else {})
            found += result[key]
            count += 1
            cursor = result.get("nextCursor")
            if not cursor:
                return found, count
    return follow()


@pytest.mark.parametrize("era", ERAS)
def test_skills_prompts_and_resources_come_a_page_at_a_time(corpus, tmp_path, era):
    many(corpus, 230)

    async def scenario(session):
        lists = {method: await pages(session, method, key) for method, key in (
            ("skills/list", "skills"), ("prompts/list", "prompts"), ("resources/list", "resources"))}
        with pytest.raises(MCPError) as caught:
            await ask(session, "prompts/list", {"cursor": "nope"})
        return lists, caught.value.error.code

    lists, code = serve(tmp_path, scenario, era)
    notes = {f"note-{i:03d}" for i in range(230)}
    skills, count = lists["skills/list"]
    assert count == 3 and sorted(s["uri"] for s in skills) == sorted(
        f"skill://{name}/SKILL.md" for name in notes | {"guide"})  # say is a tool skill: not published
    prompts, count = lists["prompts/list"]
    assert count == 3 and sorted(p["name"] for p in prompts) == sorted(notes | {"guide", "say"})
    resources, count = lists["resources/list"]
    assert count == 3 and len({r["uri"] for r in resources}) == len(resources) == 230 + 2 + 1  # guide has two files, say one
    assert code == types.INVALID_PARAMS


@pytest.mark.parametrize("mode", ["each", "loader"])
def test_the_first_line_says_what_the_server_is_and_the_whole_fits_what_agents_keep(corpus, tmp_path, mode):
    for i in range(300):  # long names, long descriptions, characters JavaScript counts twice
        name = f"{'long-name-' * 5}{i:05d}"
        (corpus / name).mkdir()
        (corpus / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: 🔧 {'Goes on and on. ' * 40}\n---\nB\n")

    async def main():
        async with connected(tmp_path, "--tools", mode) as session:
            return (await session.initialize()).instructions

    instructions = anyio.run(main)
    first = instructions.split("\n")[0]
    assert len(first) <= 250 and first.startswith("nexus ")
    assert "list_skills" in first and "skills/list" in first
    assert len(instructions.encode("utf-16-le")) // 2 <= 2048
    if mode == "loader":
        assert "- long-name-" in instructions and instructions.endswith(" more: list_skills finds them (query, cursor).\n")


def test_a_skill_with_a_link_out_of_its_folder_is_not_published_and_one_within_is(corpus, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "private.txt").write_text("mine\n")
    for name, link, target in (("file-out", "notes.txt", outside / "private.txt"), ("folder-out", "more", outside),
                               ("within", "again.md", None)):
        folder = write_skill(corpus, name, "Links.")
        (folder / link).symlink_to(target or folder / "SKILL.md")

    async def scenario(session):
        return await ask(session, "skills/list"), await session.call_tool("list_skills", {})

    listed, skills = serve(tmp_path, scenario)
    assert sorted(s["uri"] for s in listed["skills"]) == ["skill://guide/SKILL.md", "skill://within/SKILL.md"]
    why = {s["name"]: s.get("notPublished") for s in skills.structured_content["skills"]}
    assert "notes.txt links out of the skill's folder" in why["file-out"]
    assert "more links out of the skill's folder" in why["folder-out"]
