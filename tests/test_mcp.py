"""nexus-mcp (issue 16) through a real MCP client: the MCP SDK's own stdio client drives the server as a
subprocess; what the gateway records is read from the usage logs it writes."""

import contextlib
import hashlib
import json
import mimetypes
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time

import pytest
from helpers import make_tool, read_log, wait_for, write_config, write_skill

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp", reason="the mcp extra is not installed")

import mcp_types as types  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

pytestmark = pytest.mark.once  # each test starts its own server, the same in both launch modes


@pytest.fixture
def skills(workspace, bindir, nexus_home):
    """A ready tool skill `say`, and no bundled skills, so that the tools are known exactly."""
    write_config(nexus_home, "[skills]\nallowBundled = []\n")
    make_tool(bindir, "say", '#!/bin/sh\nprintf "%s\\n" "$*"\n')
    write_skill(workspace, "say", "Say the words.", meta={"tool": "say"})
    return workspace


def alive(pid):
    """True while `pid` runs (a zombie nobody reaped does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 0)
            return True
        return False


@contextlib.asynccontextmanager
async def connected(tmp_path, *argv, command=("nexus-mcp",)):
    """A ClientSession on a server started by the SDK's stdio client; its notifications in .notes."""
    notes = []

    async def on_message(message):
        notes.append(message)

    with open(tmp_path / "server.err", "w") as errlog:
        params = StdioServerParameters(command=shutil.which(command[0]), args=[*command[1:], *argv],
                                       env=dict(os.environ))
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, message_handler=on_message) as session:
                session.notes = notes
                yield session


def serve(tmp_path, scenario, *argv, **how):
    """Run `scenario(session)` against an initialized server; what it returns."""

    async def main():
        async with connected(tmp_path, *argv, **how) as session:
            session.initialized = await session.initialize()
            return await scenario(session)

    return anyio.run(main)


def session_id(tmp_path):
    return (tmp_path / "server.err").read_text().split("nexus-mcp: session ")[1].split()[0]


def initialize(tmp_path, version):
    """The server's answer to an initialize that offers `version`."""

    async def main():
        async with connected(tmp_path) as session:
            request = types.InitializeRequest(params=types.InitializeRequestParams(
                protocol_version=version, capabilities=types.ClientCapabilities(),
                client_info=types.Implementation(name="probe", version="1")))
            return await session.send_request(request, types.InitializeResult)

    return anyio.run(main)


def test_initialize_offers_tools_prompts_resources_and_negotiates_the_version(skills, tmp_path):
    async def scenario(session):
        return session.initialized

    result = serve(tmp_path, scenario)
    assert result.protocol_version == "2025-11-25"
    assert result.server_info.name == "nexus"
    caps = result.capabilities
    assert caps.tools.list_changed and caps.prompts.list_changed and caps.resources.list_changed
    assert "list_skills" in result.instructions
    assert initialize(tmp_path, "2025-03-26").protocol_version == "2025-03-26"  # one it speaks: agreed on
    assert initialize(tmp_path, "1999-01-01").protocol_version == "2025-11-25"  # one it does not: its latest


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "1999-01-01"])
def test_initialize_is_answered_before_the_sdk_loads_as_the_sdk_answers_it(skills, tmp_path, version):
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    with open(tmp_path / "server.err", "w") as err:
        server = subprocess.Popen([shutil.which("nexus-mcp")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                  text=True)
    lines = ({"jsonrpc": "2.0", "id": "first", "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    server.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
    server.stdin.flush()
    answers = [json.loads(server.stdout.readline()) for _ in range(2)]  # the SDK has had the initialize too
    server.stdin.close()
    assert server.wait(30) == 0 and server.stdout.read() == ""  # no second answer to initialize
    assert [a["id"] for a in answers] == ["first", 2] and "say" in [t["name"] for t in answers[1]["result"]["tools"]]
    result = answers[0]["result"]
    assert result["protocolVersion"] == (version if version in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION)
    assert result["serverInfo"]["name"] == "nexus" and "list_skills" in result["instructions"]
    assert result["capabilities"]["tools"] == {"listChanged": True}
    assert "differs" not in (tmp_path / "server.err").read_text()  # what the SDK answered is what was sent


def test_initialize_is_answered_while_the_sdk_is_still_loading(skills, tmp_path, monkeypatch):
    # the SDK's types (most of its import) take a minute to load here: the answer must not wait for them
    (tmp_path / "slow").mkdir()
    (tmp_path / "slow" / "sitecustomize.py").write_text(
        "import sys, time\n\n\nclass Slow:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'mcp_types._types':\n            time.sleep(60)\n\n\nsys.meta_path.insert(0, Slow())\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "slow"))
    server = subprocess.Popen([shutil.which("nexus-mcp")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}) + "\n")
        server.stdin.flush()
        assert select.select([server.stdout], [], [], 30)[0], "initialize waited for the SDK"
        answer = json.loads(server.stdout.readline())
        assert answer["id"] == 0 and answer["result"]["protocolVersion"] == "2025-11-25"
        assert server.poll() is None  # still loading the rest
    finally:
        server.kill()
        server.wait(30)


def test_a_client_of_the_2026_revision_without_a_handshake_gets_the_same(skills, nexus_home, tmp_path):
    async def main():
        async with connected(tmp_path) as session:
            discovered = await session.discover()
            return (discovered, await session.list_tools(), await session.call_tool("say", {"args": ["modern"]}),
                    await session.get_prompt("say"))

    discovered, tools, result, prompt = anyio.run(main)
    assert "2026-07-28" in discovered.supported_versions
    assert [t.name for t in tools.tools] == ["say", "list_skills", "read_skill"] and tools.ttl_ms == 0
    assert result.content[0].text == "modern\n" and prompt.messages[0].content.text.startswith("# Body")
    assert [line["type"] for line in read_log(nexus_home, "say")] == ["tool", "prompt"]
    assert all(line["client"].startswith("mcp/") for line in read_log(nexus_home, "say"))  # from each request


def test_only_ready_tool_and_script_skills_are_tools(skills, bindir, nexus_home, tmp_path):
    write_skill(skills, "gone", "Its tool is missing.", meta={"tool": "no-such-tool-anywhere"})
    write_skill(skills, "keyed", "Needs a key.", meta={"tool": "say", "requires": {"env": ["KEYED_TOKEN"]}})
    write_skill(skills, "off", "Disabled.", meta={"tool": "say"})
    write_skill(skills, "advice", "Only instructions.")
    make_tool(bindir, "runner", '#!/bin/sh\nexec "$@"\n')
    folder = write_skill(skills, "scripted", "A script.", meta={"runner": "runner", "script": "go.sh"})
    make_tool(folder, "go.sh", "#!/bin/sh\necho scripted\n")
    write_skill(skills, "fetch-page", "Fetches.", meta={"tool": "say", "sandbox": {"network": True}}, body="Fetch.\n")
    write_config(nexus_home, "[skills]\nallowBundled = []\n[skills.entries.off]\nenabled = false\n"
                             '[skills.sandbox]\nmode = "all"\n')

    async def scenario(session):
        return await session.list_tools(), await session.list_prompts()

    tools, prompts = serve(tmp_path, scenario)
    assert [t.name for t in tools.tools] == ["fetch-page", "say", "scripted", "list_skills", "read_skill"]
    fetch, say, scripted = tools.tools[:3]
    assert say.description.startswith("Say the words.") and say.input_schema["properties"]["args"]["type"] == "array"
    assert {p.name for p in prompts.prompts} == {"advice", "fetch-page", "say", "scripted"}
    # Titles: the instructions' first heading, else the name as words; hints: what the sandbox holds it to.
    assert (say.title, fetch.title) == ("Body", "Fetch page")
    assert fetch.annotations is None  # it has the network, and writes its caller's folder: the protocol's defaults
    assert say.annotations.open_world_hint is False and not say.annotations.read_only_hint  # writes its caller's folder
    assert scripted.annotations.open_world_hint is False and scripted.annotations.read_only_hint


def test_a_call_runs_the_tool_and_logs_one_line_with_the_session(skills, nexus_home, tmp_path, script_runner):
    async def scenario(session):
        return await session.call_tool("say", {"args": ["hello", "wide world"]})

    result = serve(tmp_path, scenario)
    assert not result.is_error
    assert result.content[0].text == "hello wide world\n"
    assert result.structured_content["exit"] == 0 and len(result.content) == 1  # the output once, as text
    [line] = read_log(nexus_home, "say")
    assert line["args"] == ["hello", "wide world"] and line["exit"] == 0
    assert line["session"] == session_id(tmp_path) and line["session"].startswith("mcp-")
    assert line["client"].startswith("mcp/")  # the Python SDK's client says so in initialize: name/version
    listed = json.loads(script_runner.run(["nexus", "sessions", "--json"]).stdout)
    assert [(s["id"], s["calls"], s["clients"]) for s in listed] == [(line["session"], 1, [line["client"]])]
    assert line["client"] in script_runner.run(["nexus", "sessions"]).stdout


def test_the_session_is_nexus_session_id_when_set(skills, nexus_home, tmp_path, monkeypatch):
    monkeypatch.setenv("NEXUS_SESSION_ID", "review-42")

    async def scenario(session):
        await session.call_tool("say", {"args": ["one"]})
        await session.call_tool("say", {"args": ["two"]})

    serve(tmp_path, scenario)
    assert [line["session"] for line in read_log(nexus_home, "say")] == ["review-42", "review-42"]


def test_stdin_reaches_the_tool_and_a_failure_or_timeout_is_an_error_result(skills, bindir, workspace, nexus_home, tmp_path):
    make_tool(bindir, "grumpy", '#!/bin/sh\ncat\necho "no way" >&2\nexit 3\n')
    write_skill(workspace, "grumpy", "Always fails.", meta={"tool": "grumpy"})

    make_tool(bindir, "dozy", "#!/bin/sh\nsleep 30\n")
    write_skill(workspace, "dozy", "Sleeps.", meta={"tool": "dozy"})

    async def scenario(session):
        return (await session.call_tool("grumpy", {"stdin": "fed in\n"}), await session.call_tool("dozy", {"timeout": 0.5}),
                await session.call_tool("grumpy", {}))

    result, dozed, unfed = serve(tmp_path, scenario)
    assert unfed.content[0].text == "stderr:\nno way\n"  # no stdin given: it reads none, never the protocol's
    assert dozed.is_error and dozed.structured_content["timedOut"] and dozed.structured_content["exit"] == 124
    assert dozed.content[-1].text == "timed out after 0.5 s; exit status 124"
    assert result.is_error
    assert result.structured_content == {"exit": 3, "truncated": False, "timedOut": False,
                                         "ms": result.structured_content["ms"]}
    assert [c.text for c in result.content] == ["fed in\n", "stderr:\nno way\n", "exit status 3"]
    line = read_log(nexus_home, "grumpy")[0]
    assert line["exit"] == 3 and line["error"] == "no way"


def test_an_unknown_tool_is_a_protocol_error_and_one_that_cannot_run_now_a_tool_error(skills, nexus_home, tmp_path):
    write_skill(skills, "keyed", "Needs a key.", meta={"tool": "say", "requires": {"env": ["KEYED_TOKEN"]}})
    write_skill(skills, "failing", "Fails its check.", meta={"tool": "say", "verify": "echo 'no licence' >&2; exit 1"})

    async def scenario(session):
        with pytest.raises(MCPError) as unknown:
            await session.call_tool("nope", {})
        return (unknown.value, await session.list_tools(), await session.call_tool("keyed", {}),
                await session.call_tool("failing", {}), await session.call_tool("say", {"args": ["still here"]}))

    unknown, listed, keyed, failing, result = serve(tmp_path, scenario)
    assert unknown.code == types.INVALID_PARAMS and "nope" in unknown.message
    assert "failing" in [t.name for t in listed.tools]  # listed: its first verification comes with its first call
    assert keyed.is_error and "KEYED_TOKEN" in keyed.content[0].text
    assert failing.is_error and "no licence" in failing.content[0].text
    assert "nexus skill show failing" in failing.content[0].text  # the setup step
    assert result.content[0].text == "still here\n"
    assert read_log(nexus_home, "keyed")[0]["exit"] == 1  # the refusal is recorded, as `nexus skill run` records it


def test_arguments_of_the_wrong_type_are_rejected_and_nothing_runs(skills, nexus_home, tmp_path):
    wrong = [{"args": "hello"}, {"args": [1, 2]}, {"stdin": 5}, {"timeout": "soon"}, {"timeout": -1},
             {"timeout": True}, {"verbose": True}, {"args": ["a\0b"]}]

    async def scenario(session):
        return [await session.call_tool("say", arguments) for arguments in wrong]

    for arguments, result in zip(wrong, serve(tmp_path, scenario)):
        assert result.is_error and result.content[0].text.startswith("say: "), arguments
    assert read_log(nexus_home, "say") == []


def test_a_prompt_and_a_resource_are_read_and_logged_as_prompt_calls(skills, nexus_home, tmp_path):
    folder = write_skill(skills, "guide", "How to do it.", body="Read {baseDir}/notes/steps.md first.\n")
    (folder / "notes").mkdir()
    (folder / "notes" / "steps.md").write_text("1. Begin.\n")
    (folder / ".hidden").write_text("secret\n")
    steps = (folder / "notes" / "steps.md").as_uri()

    async def scenario(session):
        prompt = await session.get_prompt("guide")
        listed = await session.list_resources()
        read = await session.read_resource(steps)
        for elsewhere in (folder / ".." / ".." / "nexus.toml", folder / ".hidden"):
            with pytest.raises(MCPError):
                await session.read_resource(elsewhere.as_uri())
        return prompt, listed, read

    prompt, listed, read = serve(tmp_path, scenario)
    assert prompt.messages[0].content.text == f"Read {folder}/notes/steps.md first.\n"
    names = [r.name for r in listed.resources]
    assert "guide" in names and "guide/notes/steps.md" in names and "guide/.hidden" not in names  # SKILL.md: the skill
    assert read.contents[0].text == "1. Begin.\n"
    lines = read_log(nexus_home, "guide")
    assert [(line["type"], line.get("args")) for line in lines] == [("prompt", None), ("prompt", ["notes/steps.md"])]


def test_list_skills_and_read_skill_serve_clients_that_have_only_tools(skills, nexus_home, tmp_path):
    write_skill(skills, "keyed", "Needs a key.", meta={"tool": "say", "requires": {"env": ["KEYED_TOKEN"]}})

    async def scenario(session):
        return (await session.call_tool("list_skills", {}), await session.call_tool("read_skill", {"name": "keyed"}),
                await session.call_tool("read_skill", {"name": "nope"}))

    listed, read, missing = serve(tmp_path, scenario)
    skills_by_name = {s["name"]: s for s in listed.structured_content["skills"]}
    assert skills_by_name["say"]["status"] == "ready" and "reason" not in skills_by_name["say"]
    keyed = skills_by_name["keyed"]
    assert keyed["status"] == "needs-setup" and keyed["reason"] == "needs: KEYED_TOKEN. To fix: nexus skill env keyed KEYED_TOKEN=..."
    assert any("KEYED_TOKEN" in step for step in keyed["setup"])
    assert skills_by_name["tmux"]["status"] == "disabled"
    assert "Do the thing." in read.content[0].text and not read.is_error
    assert missing.is_error
    assert [line["type"] for line in read_log(nexus_home, "keyed")] == ["prompt"]


def test_list_changed_arrives_when_a_skill_is_added_leaves_or_is_disabled(skills, bindir, nexus_home, tmp_path):
    async def changes(session, count):
        with anyio.fail_after(15):
            while sum(isinstance(n, types.ToolListChangedNotification) for n in session.notes) < count:
                await anyio.sleep(0.05)

    async def scenario(session):
        await session.list_tools()
        await session.list_prompts()
        await session.list_resources()
        make_tool(bindir, "late", "#!/bin/sh\necho late\n")
        write_skill(skills, "late", "Came late.", meta={"tool": "late"})
        await changes(session, 1)
        added = await session.list_tools()
        shutil.rmtree(skills / "late")
        await changes(session, 2)
        removed = await session.list_tools()
        write_config(nexus_home, "[skills]\nallowBundled = []\n[skills.entries.say]\nenabled = false\n")
        await changes(session, 3)
        return added, removed, await session.list_tools(), session.notes

    added, removed, disabled, notes = serve(tmp_path, scenario, "--watch", "0.1")
    assert "late" in [t.name for t in added.tools] and "late" not in [t.name for t in removed.tools]
    assert "say" in [t.name for t in removed.tools] and "say" not in [t.name for t in disabled.tools]
    kinds = {type(n) for n in notes}
    assert {types.PromptListChangedNotification, types.ResourceListChangedNotification} <= kinds


def test_a_cancelled_call_leaves_no_process_behind_and_is_logged_as_cancelled(skills, bindir, workspace, nexus_home,
                                                                              tmp_path):
    pidfile = tmp_path / "pid"
    make_tool(bindir, "slow", f'#!/bin/sh\nsleep 600 &\necho $! > "{pidfile}"\nwait\n')
    write_skill(workspace, "slow", "Takes its time.", meta={"tool": "slow"})

    async def scenario(session):
        with anyio.move_on_after(20) as waited:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(session.call_tool, "slow", {})
                while not pidfile.exists() or not pidfile.read_text().strip():
                    await anyio.sleep(0.05)
                tasks.cancel_scope.cancel()  # the SDK tells the server: notifications/cancelled
        assert not waited.cancelled_caught
        return await session.call_tool("say", {"args": ["after"]})

    after = serve(tmp_path, scenario)
    assert after.content[0].text == "after\n"
    sleeper = int(pidfile.read_text())
    assert wait_for(lambda: not alive(sleeper)), "the tool's child outlived the cancellation"
    assert wait_for(lambda: len(read_log(nexus_home, "slow")) == 1)
    [line] = read_log(nexus_home, "slow")
    assert line["error"] == "cancelled" and line["exit"] == 137
    state = json.loads((nexus_home / "state" / "nexus" / "skills" / "slow" / "state.json").read_text())
    assert state["configured"] is True  # a cancelled call is not the tool failing: it stays verified


def test_eight_concurrent_calls_run_side_by_side_and_are_logged_once_each(skills, bindir, workspace, nexus_home,
                                                                          tmp_path):
    met = tmp_path / "met"
    met.mkdir()
    # Each call waits (a minute at most) until all eight have started, and fails unless they all did: the
    # calls pass only when run side by side, however slow the machine.
    make_tool(bindir, "meet", f'#!/bin/sh\ntouch "{met}/$1"; i=0\n'
                              f'while [ $(ls "{met}" | wc -l) -lt 8 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n'
                              f'[ $(ls "{met}" | wc -l) -ge 8 ] && echo "$1"\n')
    write_skill(workspace, "meet", "Meets.", meta={"tool": "meet"})

    async def scenario(session):
        await session.call_tool("say", {"args": ["warm"]})
        results = {}

        async def call(i):
            results[i] = await session.call_tool("meet", {"args": [str(i)]})

        async with anyio.create_task_group() as tasks:
            for i in range(8):
                tasks.start_soon(call, i)
        return results

    results = serve(tmp_path, scenario)
    assert {i: r.content[0].text for i, r in results.items()} == {i: f"{i}\n" for i in range(8)}
    lines = read_log(nexus_home, "meet")
    assert sorted(line["args"][0] for line in lines) == [str(i) for i in range(8)]
    assert all(line["exit"] == 0 for line in lines)


def test_a_tool_that_floods_stdout_is_cut_and_the_stream_stays_clean(skills, bindir, workspace, tmp_path, nexus_home):
    make_tool(bindir, "flood", "#!/bin/sh\nhead -c 20000000 /dev/zero | tr '\\0' a\necho done >&2\n")
    write_skill(workspace, "flood", "Says a lot.", meta={"tool": "flood"})

    async def scenario(session):
        return await session.call_tool("flood", {}), await session.call_tool("say", {"args": ["next"]})

    flooded, after = serve(tmp_path, scenario, "--max-output", "100000")
    assert flooded.content[0].text == "a" * 100000
    assert flooded.structured_content["truncated"] and flooded.content[1].text == "stderr:\ndone\n"
    assert flooded.content[-1].text == "output cut at 100,000 bytes per stream" and not flooded.is_error
    assert after.content[0].text == "next\n"
    # a cut output is not the output: no fingerprint for a replay to compare with (issue 26 item 10)
    assert "output" not in read_log(nexus_home, "flood")[-1] and "output" in read_log(nexus_home, "say")[-1]


def test_nexus_mcp_serves_the_same(skills, tmp_path):
    async def scenario(session):
        return await session.call_tool("say", {"args": ["porcelain"]})

    assert serve(tmp_path, scenario, command=("nexus", "mcp")).content[0].text == "porcelain\n"


class RawClient:
    """nexus-mcp spoken to line by line, for what the SDK's client does not do: close stdin mid-call."""

    def __init__(self):
        self.process = subprocess.Popen([shutil.which("nexus-mcp")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True)
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        assert json.loads(self.process.stdout.readline())["id"] == 0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()


@pytest.mark.parametrize("stop", ["close stdin", "SIGTERM"])
def test_the_server_ends_cleanly_and_ends_the_calls_in_flight(skills, bindir, workspace, nexus_home, tmp_path, stop):
    pidfile = tmp_path / "pid"
    make_tool(bindir, "slow", f'#!/bin/sh\nsleep 600 &\necho $! > "{pidfile}"\nwait\n')
    write_skill(workspace, "slow", "Takes its time.", meta={"tool": "slow"})
    client = RawClient()
    client.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow", "arguments": {}}})
    assert wait_for(lambda: pidfile.exists() and pidfile.read_text().strip())
    if stop == "SIGTERM":
        client.process.send_signal(signal.SIGTERM)
    else:
        client.process.stdin.close()
    code = client.process.wait(30)
    assert code == (0 if stop == "close stdin" else -signal.SIGTERM)
    assert not alive(int(pidfile.read_text()))
    [line] = read_log(nexus_home, "slow")
    assert line["error"] == "cancelled"


def test_without_the_mcp_extra_nexus_mcp_says_how_to_install_it(tmp_path):
    probe = ("import sys; sys.modules['mcp'] = None; from nexus.tools.nexus import main; "
             "sys.exit(main(['mcp']))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert "pip install 'nexus-skills[mcp]'" in done.stderr and len(done.stderr.splitlines()) == 1


def test_nothing_but_the_mcp_server_imports_the_sdk():
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent
    sources = [*(root / "lib").rglob("*.py"), *(root / "tools").rglob("*.py")]
    importers = [str(p.relative_to(root)) for p in sources for line in p.read_text().splitlines()
                 if line.lstrip().startswith(("import mcp", "from mcp ", "from mcp.", "from mcp_types", "import anyio"))]
    assert sorted(set(importers)) == ["lib/mcp/http.py", "lib/mcp/server.py"]


class Lines:
    """What a RawClient's server answers, by id, read as it comes by a thread of its own."""

    def __init__(self, client):
        import queue
        import threading

        self.answers, self.queue = {}, queue.Queue()
        threading.Thread(target=lambda: [self.queue.put(line) for line in client.process.stdout], daemon=True).start()

    def wait(self, ident, seconds=30):
        """The answer to request `ident` (None: an error about a line without one)."""
        import queue

        deadline = time.monotonic() + seconds
        while ident not in self.answers:
            try:
                message = json.loads(self.queue.get(timeout=max(0.01, deadline - time.monotonic())))
            except queue.Empty:
                raise AssertionError(f"no answer to {ident}") from None
            if "id" in message:
                self.answers[message["id"]] = message
        return self.answers.pop(ident)


def test_sixty_long_calls_leave_the_server_answering_pings_cancels_and_eof_and_nothing_running(
        skills, bindir, workspace, nexus_home, tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    make_tool(bindir, "long", f'#!/bin/sh\nsleep 600 &\necho $! > "{pids}/$1"\nwait\n')
    write_skill(workspace, "long", "Takes long.", meta={"tool": "long"})
    client = RawClient()
    answers = Lines(client)
    for i in range(1, 61):
        client.send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                     "params": {"name": "long", "arguments": {"args": [str(i)]}}})
    refused = [answers.wait(i) for i in range(17, 61)]  # --max-calls is 16 by default
    assert all(r["result"]["isError"] and "--max-calls" in r["result"]["content"][0]["text"] for r in refused)
    assert wait_for(lambda: len(list(pids.iterdir())) == 16)
    client.send({"jsonrpc": "2.0", "id": 100, "method": "ping"})
    assert answers.wait(100)["result"] == {}
    sleeper = int((pids / "1").read_text())
    client.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    assert wait_for(lambda: not alive(sleeper)), "the cancel went unread"
    client.send({"jsonrpc": "2.0", "id": 101, "method": "tools/call",
                 "params": {"name": "say", "arguments": {"args": ["a slot is free"]}}})
    assert answers.wait(101)["result"]["content"][0]["text"] == "a slot is free\n"
    client.process.stdin.close()
    assert client.process.wait(30) == 0
    assert not [p.name for p in pids.iterdir() if alive(int(p.read_text()))]
    lines = read_log(nexus_home, "long")
    ran = [line for line in lines if not line.get("refused")]
    assert len(ran) == 16 and all(line["error"] == "cancelled" for line in ran)
    assert [line["refused"] for line in lines if line.get("refused")] == ["busy"] * 44  # each refusal logged


def test_lines_that_are_not_json_rpc_are_answered_with_their_error(skills, tmp_path):
    client = RawClient()
    answers = Lines(client)
    client.process.stdin.write("{this is not json\n")
    client.send({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": [1, 2]})
    client.send([1, 2])
    client.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": "no"})  # never answered
    client.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
    assert answers.wait(None)["error"]["code"] == -32700
    assert answers.wait(7)["error"]["code"] == -32602
    assert answers.wait(None)["error"]["code"] == -32600
    assert answers.wait(8)["result"] == {}
    client.process.stdin.close()
    assert client.process.wait(30) == 0


def test_a_file_name_that_is_not_utf8_is_skipped_with_a_warning(skills, tmp_path):
    folder = write_skill(skills, "guide", "How to do it.")
    os.close(os.open(bytes(folder) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY, 0o644))
    (folder / "notes.md").write_text("Notes.\n")

    async def scenario(session):
        return await session.list_resources(), await session.call_tool("say", {"args": ["still here"]})

    listed, after = serve(tmp_path, scenario)
    assert "guide/notes.md" in [r.name for r in listed.resources]
    assert after.content[0].text == "still here\n"
    assert (tmp_path / "server.err").read_text().count("skipped: its name is not UTF-8") == 1


def test_disable_model_invocation_keeps_a_skill_from_every_list_and_call_over_mcp(skills, workspace, tmp_path):
    write_skill(workspace, "secret-tool", "Only for people.", meta={"tool": "say"},
                extra="disable-model-invocation: true\n")
    write_skill(workspace, "secret-note", "Only for people.", extra="disable-model-invocation: true\n")

    async def scenario(session):
        listed = await session.call_tool("list_skills", {})
        read = await session.call_tool("read_skill", {"name": "secret-note"})
        with pytest.raises(MCPError) as called:
            await session.call_tool("secret-tool", {})
        with pytest.raises(MCPError):
            await session.get_prompt("secret-note")
        return (await session.list_tools(), await session.list_prompts(), await session.list_resources(), listed,
                read, called.value)

    tools, prompts, resources, listed, read, called = serve(tmp_path, scenario)
    shown = ([t.name for t in tools.tools] + [p.name for p in prompts.prompts] + [r.name for r in resources.resources]
             + [s["name"] for s in listed.structured_content["skills"]])
    assert "say" in shown and not [name for name in shown if name.startswith("secret")]
    assert read.is_error and "disable-model-invocation" in read.content[0].text
    assert "disable-model-invocation" in called.message


def test_a_cancel_during_the_first_verification_kills_the_verify_command(skills, bindir, workspace, nexus_home,
                                                                         tmp_path):
    pidfile = tmp_path / "pid"
    write_skill(workspace, "checked", "Verified first.",
                meta={"tool": "say", "verify": f'sleep 600 & echo $! > "{pidfile}"; wait'})

    async def scenario(session):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(session.call_tool, "checked", {})
            with anyio.fail_after(20):
                while not pidfile.exists() or not pidfile.read_text().strip():
                    await anyio.sleep(0.05)
            tasks.cancel_scope.cancel()
        return await session.list_tools()

    tools = serve(tmp_path, scenario)
    assert wait_for(lambda: not alive(int(pidfile.read_text()))), "the verify command outlived the cancel"
    assert "checked" in [t.name for t in tools.tools]  # a verification cut short is no failure of the skill
    assert wait_for(lambda: read_log(nexus_home, "checked"))
    [line] = read_log(nexus_home, "checked")
    assert line["error"] == "cancelled" and line["exit"] == 137


# A tool that leaves every kind of process behind: one in its group, one in a session of its own (setsid), and
# a daemon started the usual way, whose parent (a subshell) exits at once; each writes its pid to $1.KIND.
SPREADS = """#!/bin/sh
setsid sh -c 'echo $$ > "$0"; exec sleep 600' "$1.setsid" &
( setsid sh -c 'echo $$ > "$0"; exec sleep 600' "$1.daemon" & )
sleep 600 &
echo $! > "$1.group"
echo $$ > "$1.tool"
wait
"""
KINDS = ("tool", "group", "setsid", "daemon")


def spread(tmp_path, name):
    """The pids SPREADS wrote for the call given tmp_path/name, once all are written."""
    files = [tmp_path / f"{name}.{kind}" for kind in KINDS]
    assert wait_for(lambda: all(f.exists() and f.read_text().strip() for f in files)), name
    return [int(f.read_text()) for f in files]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper of orphans is Linux's")
def test_a_server_killed_outright_leaves_no_process_of_its_tools(skills, bindir, workspace, tmp_path):
    make_tool(bindir, "spreads", SPREADS)
    write_skill(workspace, "spreads", "Leaves processes behind.", meta={"tool": "spreads"})
    client = RawClient()
    client.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": {"name": "spreads", "arguments": {"args": [str(tmp_path / "call")]}}})
    left = spread(tmp_path, "call")
    try:
        client.process.kill()
        client.process.wait(30)
        assert wait_for(lambda: not any(alive(pid) for pid in left)), "a process of the tool outlived its server"
    finally:
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper of orphans is Linux's")
def test_a_cancel_kills_every_process_of_its_call_and_none_of_another(skills, bindir, workspace, nexus_home, tmp_path):
    make_tool(bindir, "spreads", SPREADS)
    write_skill(workspace, "spreads", "Leaves processes behind.", meta={"tool": "spreads"})
    made = []

    async def scenario(session):
        async def call(name, scope):
            with scope:
                await session.call_tool("spreads", {"args": [str(tmp_path / name)]})

        cancelled, kept = anyio.CancelScope(), anyio.CancelScope()
        async with anyio.create_task_group() as tasks:
            for name, scope in (("cancelled", cancelled), ("kept", kept)):
                tasks.start_soon(call, name, scope)
                made.append(await anyio.to_thread.run_sync(spread, tmp_path, name))
            cancelled.cancel()  # notifications/cancelled for that call alone
            await anyio.to_thread.run_sync(wait_for, lambda: not any(alive(pid) for pid in made[0]))
            await anyio.sleep(0.5)
            survivors = [alive(pid) for pid in made[1]]
            kept.cancel()
        return survivors

    survivors = serve(tmp_path, scenario)
    try:
        assert not any(alive(pid) for pid in made[0]), "a process of the cancelled call outlived its cancel"
        assert survivors == [True] * len(KINDS), "the cancel of one call killed another call's processes"
        assert wait_for(lambda: not any(alive(pid) for pid in made[1]))
    finally:
        for pid in made[0] + made[1]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: len(read_log(nexus_home, "spreads")) == 2)
    assert [line["error"] for line in read_log(nexus_home, "spreads")] == ["cancelled", "cancelled"]


async def ask(session, method, params=None):
    """A request of the Skills extension (the SDK's client has no method for it): its result as a dict."""
    from pydantic import TypeAdapter

    return await session.send_request(types.Request[dict, str](method=method, params=params or {}), TypeAdapter(dict))


def published(skills, nexus_home):
    """A prompt skill `guide` with a file and a frontmatter a lenient reader and YAML read differently."""
    folder = write_skill(skills, "guide", "How to do it.", extra="version: 1.10\nlicense: MIT\n",
                         body="Read references/steps.md.\n")
    (folder / "references").mkdir()
    (folder / "references" / "steps.md").write_text("1. Begin.\n")
    (folder / "run.sh").write_text("echo hi\n")
    return folder


@pytest.mark.parametrize("era", ["handshake", "2026-07-28"])
def test_skills_list_and_get_describe_every_file_of_a_published_skill_as_resources_read_gives_it(
        skills, nexus_home, tmp_path, era):
    folder = published(skills, nexus_home)
    secretive = write_skill(skills, "secretive", "Holds a key.")
    (secretive / ".env").write_text("TOKEN=x\n")

    async def main():
        async with connected(tmp_path) as session:
            if era == "handshake":
                initialized = (await session.initialize()).capabilities
            else:
                initialized = (await session.discover()).capabilities
            listed = await ask(session, "skills/list")
            got = await ask(session, "skills/get", {"uri": "skill://guide/SKILL.md"})
            reads = {r["uri"]: await session.read_resource(r["uri"]) for r in got["skill"]["resources"]}
            errors = []
            for method, params in (("skills/get", {"uri": "skill://nope/SKILL.md"}),
                                   ("skills/get", {"uri": "skill://say/SKILL.md"}),
                                   ("skills/get", {"uri": "skill://secretive/SKILL.md"})):
                with pytest.raises(MCPError) as caught:
                    await ask(session, method, params)
                errors.append(caught.value)
            for unlisted in ("skill://guide/nope.md", "skill://guide/../say/SKILL.md", "skill://secretive/.env"):
                with pytest.raises(MCPError) as caught:
                    await session.read_resource(unlisted)
                errors.append(caught.value)
            folders = [await ask(session, "resources/directory/read", {"uri": uri})
                       for uri in ("skill://guide", "skill://guide/references")]
            for not_a_folder in ("skill://guide/SKILL.md", "skill://guide/nope", "skill://secretive", "skill://guide/"):
                with pytest.raises(MCPError) as caught:
                    await ask(session, "resources/directory/read", {"uri": not_a_folder})
                errors.append(caught.value)
            return initialized, listed, got, reads, errors, await session.call_tool("list_skills", {}), folders

    capabilities, listed, got, reads, errors, list_skills, (root, references) = anyio.run(main)
    assert [(r["uri"], r["name"], r.get("mimeType")) for r in root["resources"]] == [
        ("skill://guide/SKILL.md", "guide", "text/markdown"),  # named after the skill, as the extension names it
        ("skill://guide/references", "references", "inode/directory"),
        ("skill://guide/run.sh", "run.sh", mimetypes.guess_type("run.sh")[0])]
    assert references["resources"] == [{"uri": "skill://guide/references/steps.md", "name": "steps.md",
                                        "mimeType": "text/markdown"}]
    assert root["ttlMs"] == 0 and root["cacheScope"] == "private"  # as on every list: the Inspector checks them
    if era == "2026-07-28":
        assert capabilities.extensions["io.modelcontextprotocol/skills"] == {"directoryRead": True}
    assert capabilities.resources  # the extension is declared where the revision has extensions: 2026-07-28
    assert ("io.modelcontextprotocol/skills" in (capabilities.extensions or {})) == (era == "2026-07-28")
    assert [s["uri"] for s in listed["skills"]] == ["skill://guide/SKILL.md"]  # say is a tool; secretive has a .env
    assert listed["ttlMs"] == 0 and listed["cacheScope"] == "private"
    entry = got["skill"]
    assert entry == listed["skills"][0]
    assert entry["frontmatter"] == {"name": "guide", "description": "How to do it.", "version": 1.1, "license": "MIT"}
    files = {"skill://guide/SKILL.md": folder / "SKILL.md", "skill://guide/references/steps.md":
             folder / "references" / "steps.md", "skill://guide/run.sh": folder / "run.sh"}
    assert [r["uri"] for r in entry["resources"]][0] == "skill://guide/SKILL.md"
    assert {r["uri"] for r in entry["resources"]} == set(files)
    for resource in entry["resources"]:
        data = reads[resource["uri"]].contents[0].text.encode()
        assert data == files[resource["uri"]].read_bytes()
        assert resource["size"] == len(data) and resource["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
    assert all(e.code == types.INVALID_PARAMS for e in errors)
    why = {s["name"]: s.get("notPublished") for s in list_skills.structured_content["skills"]}
    assert why["guide"] is None and ".env" in why["secretive"] and "mcp.publishRunnable" in why["say"]


def test_a_digest_follows_an_edit_that_keeps_size_and_mtime_and_runnable_skills_are_published_when_asked(
        skills, nexus_home, tmp_path):
    folder = published(skills, nexus_home)
    write_config(nexus_home, "[skills]\nallowBundled = []\n[mcp]\npublishRunnable = true\n")
    script = folder / "run.sh"

    async def scenario(session):
        before = await ask(session, "skills/get", {"uri": "skill://guide/SKILL.md"})
        stamp = script.stat()
        script.write_text("echo ho\n")
        os.utime(script, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        after = await ask(session, "skills/get", {"uri": "skill://guide/SKILL.md"})
        return before, after, await ask(session, "skills/list")

    before, after, listed = serve(tmp_path, scenario)
    digest = lambda got: next(r["digest"] for r in got["skill"]["resources"] if r["uri"].endswith("run.sh"))  # noqa: E731
    assert digest(after) == "sha256:" + hashlib.sha256(b"echo ho\n").hexdigest() != digest(before)
    assert {s["uri"] for s in listed["skills"]} == {"skill://guide/SKILL.md", "skill://say/SKILL.md"}


def test_the_loader_mode_offers_three_tools_and_runs_a_skill_by_name(declaring, skills, nexus_home, tmp_path,
                                                                    script_runner):
    assert script_runner.run(["nexus", "skill", "run", "say", "--", "used"]).returncode == 0  # the most used
    for i in range(150):
        write_skill(skills, f"note-{i:03d}", f"Note {i}, " + "which says a great deal about many things. " * 5)

    async def scenario(session):
        return (session.initialized.instructions, await session.list_tools(),
                await session.call_tool("run_skill", {"name": "say", "args": ["by name"]}),
                await session.call_tool("run_skill", {"name": "nope"}),
                await session.call_tool("list_skills", {"query": "NOTE 14"}),
                await session.call_tool("list_skills", {"cursor": "50"}),
                await session.call_tool("run_skill", {"name": "greet", "variables": {"GREETING": "Hi"}}),
                await session.call_tool("list_skills", {"query": "greets"}))

    instructions, tools, ran, unknown, found, page, greeted, greet = serve(tmp_path, scenario, "--tools", "loader")
    assert greeted.content[0].text == "Hi \n" and not greeted.is_error
    assert greet.structured_content["skills"][0]["variables"] == [{"name": "GREETING", "description": "The word said first."}]
    assert "variables: GREETING" in greet.content[0].text
    assert [t.name for t in tools.tools] == ["run_skill", "list_skills", "read_skill"]
    assert ran.content[0].text == "by name\n" and not ran.is_error
    assert read_log(nexus_home, "say")[-1]["args"] == ["by name"]
    assert unknown.is_error and "nope" in unknown.content[0].text
    assert len(instructions.encode()) <= 8192
    assert instructions.split("Skills, the most used first:\n")[1].startswith("- say: Say the words.\n- greet: Greets.\n")
    assert "more: list_skills finds them" in instructions
    assert [s["name"] for s in found.structured_content["skills"]] == ["note-014"] + [f"note-{i}" for i in range(140, 150)]
    assert len(page.structured_content["skills"]) == 50 and page.structured_content["nextCursor"] == "100"


@pytest.fixture
def declaring(skills, bindir):
    """A tool skill `greet` that prints its variable GREETING, and a prompt skill `letter` whose text takes
    RECIPIENT (required) and SIGNED (by default "Ann")."""
    make_tool(bindir, "greet", '#!/bin/sh\nprintf "%s %s\\n" "$GREETING" "$*"\n')
    write_skill(skills, "greet", "Greets.", meta={"tool": "greet", "variables": [
        {"name": "GREETING", "description": "The word said first."}]})
    write_skill(skills, "letter", "A letter.", body="Dear ${RECIPIENT}, yours ${SIGNED}.\n", meta={"variables": [
        {"name": "RECIPIENT", "description": "Who it is for."}, {"name": "SIGNED", "default": "Ann"}]})
    return skills


def test_tool_calls_and_prompts_take_the_variables_a_skill_declares(declaring, nexus_home, tmp_path, monkeypatch):
    monkeypatch.setenv("RECIPIENT", "a secret of the environment")  # never in a prompt skill's text

    async def scenario(session):
        call = session.call_tool
        return ((await session.list_tools()).tools, (await session.list_prompts()).prompts,
                [await call("greet", {"args": ["Bo"], "variables": {"GREETING": "Hello"}}), await call("greet", {}),
                 await call("greet", {"variables": {"OTHER": "x"}}), await call("greet", {"variables": {"GREETING": 1}})],
                await session.get_prompt("letter", {"RECIPIENT": "Bo"}),
                [await call("read_skill", {"name": "letter", "variables": {"RECIPIENT": "Cy", "SIGNED": "Di"}}),
                 await call("read_skill", {"name": "letter"})])

    tools, prompts, (said, missing, unknown, wrong), prompt, (read, unfilled) = serve(tmp_path, scenario)
    greet = next(t for t in tools if t.name == "greet")
    assert greet.input_schema["properties"]["variables"]["properties"] == {
        "GREETING": {"type": "string", "description": "The word said first."}}
    assert next(t for t in tools if t.name == "say").input_schema["properties"].keys() == {"args", "stdin", "timeout"}
    [letter] = [p for p in prompts if p.name == "letter"]
    assert [(a.name, a.required) for a in letter.arguments] == [("RECIPIENT", True), ("SIGNED", False)]
    assert said.content[0].text == "Hello Bo\n" and not said.is_error
    assert missing.is_error and 'GREETING (The word said first.): variables: {"GREETING": "..."}' in missing.content[0].text
    assert unknown.is_error and "no variable OTHER (it declares: GREETING)" in unknown.content[0].text
    assert wrong.is_error and "variables must be an object whose values are strings" in wrong.content[0].text
    assert prompt.messages[0].content.text == "Dear Bo, yours Ann.\n"
    assert read.content[0].text == "Dear Cy, yours Di.\n" and not read.is_error
    assert unfilled.is_error and "RECIPIENT" in unfilled.content[0].text and "secret" not in unfilled.content[0].text
    assert [line.get("refused") for line in read_log(nexus_home, "greet")] == [None, "variables"]
    assert [line.get("refused") for line in read_log(nexus_home, "letter")] == [None, None, "variables"]


def test_auto_is_the_loader_for_a_large_catalogue_and_each_for_a_small_one(skills, bindir, nexus_home, tmp_path):
    write_config(nexus_home, '[skills]\nallowBundled = []\n[mcp]\ntools = "auto"\n')

    async def scenario(session):
        return [t.name for t in (await session.list_tools()).tools]

    assert serve(tmp_path, scenario) == ["say", "list_skills", "read_skill"]
    for i in range(40):
        write_skill(skills, f"tool-{i:02d}", "A tool.", meta={"tool": "say"})
    assert serve(tmp_path, scenario) == ["run_skill", "list_skills", "read_skill"]
    assert serve(tmp_path, scenario, "--tools", "each")[-3:] == ["tool-39", "list_skills", "read_skill"]


def test_a_client_of_the_2026_revision_hears_of_a_skill_made_ready_through_subscriptions_listen(
        skills, bindir, tmp_path):
    from mcp.client.subscriptions import listen
    from mcp.shared.subscriptions import ToolsListChanged

    async def main():
        async with connected(tmp_path, "--watch", "0.1", "--tools", "each") as session:
            discovered = await session.discover()
            before = await session.list_tools()
            async with listen(session, tools_list_changed=True) as events:
                write_skill(skills, "late", "Came late.", meta={"tool": "late"})
                make_tool(bindir, "late", "#!/bin/sh\necho late\n")  # ready now: its tool is there
                with anyio.fail_after(20):
                    event = await events.__anext__()
            return discovered, before, event, await session.list_tools()

    discovered, before, event, after = anyio.run(main)
    assert discovered.capabilities.tools.list_changed
    assert "late" not in [t.name for t in before.tools] and "late" in [t.name for t in after.tools]
    assert isinstance(event, ToolsListChanged)


def test_a_skill_with_a_unicode_name_is_a_tool_with_a_stable_ascii_name(skills, nexus_home, tmp_path):
    write_skill(skills, "café", "Makes coffee.", meta={"tool": "say"})

    async def scenario(session):
        tools = (await session.list_tools()).tools
        [tool] = [t for t in tools if t.name.startswith("cafe-")]
        return tool, await session.call_tool(tool.name, {"args": ["espresso"]})

    tool, result = serve(tmp_path, scenario)
    assert re.fullmatch(r"cafe-[0-9a-f]{8}", tool.name)
    assert tool.annotations is None  # unconfined, and it declares no network: the protocol's defaults hold
    assert result.content[0].text == "espresso\n"
    assert read_log(nexus_home, "café")[0]["args"] == ["espresso"]


def test_a_server_started_with_a_profile_offers_reads_and_runs_only_its_skills(skills, bindir, workspace,
                                                                                nexus_home, tmp_path):
    write_config(nexus_home, '[skills]\nallowBundled = []\n\n[profiles.two.skills]\nallow = ["say", "guide"]\n')
    write_skill(workspace, "guide", "A guide.")
    make_tool(bindir, "other", '#!/bin/sh\necho other\n')
    write_skill(workspace, "other", "Not for this agent.", meta={"tool": "other"})

    async def refused(request):
        try:
            result = await request
        except MCPError:
            return True
        return result.is_error

    async def scenario(session):
        listed = (await session.list_tools(), await session.list_prompts(), await session.list_resources())
        refusals = [await refused(session.call_tool("other", {})), await refused(session.get_prompt("other")),
                    await refused(session.read_resource((workspace / "other" / "SKILL.md").as_uri())),
                    await refused(session.call_tool("read_skill", {"name": "other"}))]
        said = await session.call_tool("say", {"args": ["hi"]})
        return listed, refusals, said

    (tools, prompts, resources), refusals, said = serve(tmp_path, scenario, "--profile", "two")
    shown = [t.name for t in tools.tools] + [p.name for p in prompts.prompts] + [str(r.uri) for r in resources.resources]
    assert "say" in shown and "guide" in [p.name for p in prompts.prompts]
    assert not [name for name in shown if "other" in name]
    assert refusals == [True, True, True, True]
    assert not said.is_error and "hi" in said.content[0].text
    assert [line.get("profile") for line in read_log(nexus_home, "say")] == ["two"]
    assert all(line.get("refused") == "scope" for line in read_log(nexus_home, "other"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the spawn helper is Linux's")
def test_with_its_spawn_helper_killed_the_server_still_runs_tools(skills):
    client = RawClient()
    with open(f"/proc/{client.process.pid}/task/{client.process.pid}/children") as f:
        [helper] = map(int, f.read().split())
    os.kill(helper, signal.SIGKILL)
    assert wait_for(lambda: not alive(helper))
    for ident in (1, 2):  # the first may learn that the helper is gone only as it asks it
        client.send({"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                     "params": {"name": "say", "arguments": {"args": [f"call {ident}"]}}})
        answer = json.loads(client.process.stdout.readline())
        assert answer["id"] == ident and answer["result"]["content"][0]["text"] == f"call {ident}\n", answer
    client.process.stdin.close()
    assert client.process.wait(30) == 0
