"""One Call (issue 36): every way into the gateway makes the same call. The same refusal, for the same
cause, is said and logged the same way by `nexus skill run`, `nexus-run`, a background job, nexus-mcp on
stdio and nexus-mcp --http; a prompt skill read by each is logged alike."""

import contextlib
import io
import json
import os
import shutil
import subprocess

import pytest
from helpers import make_tool, read_log, wait_for, write_config, write_skill

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp", reason="the mcp extra is not installed")
pytest.importorskip("uvicorn", reason="the mcp extra is not installed")

import httpx2  # noqa: E402  (the MCP SDK's HTTP client)
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

# The servers are processes of their own, started here, the same in both launch modes.
pytestmark = [pytest.mark.once, pytest.mark.script_launch_mode("subprocess")]

CONFIG = """\
[skills]
allowBundled = []
defaultProfile = "team"

[skills.entries.off]
enabled = false

[profiles.team.skills]
allow = ["off", "people", "hello", "say", "note"]
"""
CAUSES = {"off": "disabled", "outside": "scope", "hello": "trust", "people": "scope"}  # the skill, what refuses it
FRONT_ENDS = ("skill run", "nexus-run", "background", "mcp", "http")


@pytest.fixture
def gated(script_runner, workspace, bindir, nexus_home, tmp_path):
    """A ready tool skill `say`, a prompt `note`, and one skill for each cause of a refusal: `off` disabled,
    `outside` outside the profile in force, `people` kept from models, `hello` an added skill changed
    behind nexus's back."""
    write_config(nexus_home, CONFIG)
    make_tool(bindir, "say", '#!/bin/sh\nprintf "%s\\n" "$*"\n')
    for name in ("say", "off", "outside"):
        write_skill(workspace, name, f"Runs say as {name}.", meta={"tool": "say"})
    write_skill(workspace, "people", "Only for people.", meta={"tool": "say"}, extra="disable-model-invocation: true\n")
    write_skill(workspace, "note", "A note.", body="# Note\n\nHello ${WHO}.\n",
                meta={"variables": [{"name": "WHO", "default": "world"}]})
    source = write_skill(tmp_path / "team", "hello", meta={"runner": "python3", "script": "hello.py"})
    (source / "hello.py").write_text("print('hello')\n")
    added = script_runner.run(["nexus", "skills", "add", str(tmp_path / "team"), "--copy"])
    assert added.returncode == 0, added.stderr
    (tmp_path / "managed" / "hello" / "hello.py").write_text("print('changed')\n")
    return workspace


@contextlib.asynccontextmanager
async def stdio_session(tmp_path):
    with open(tmp_path / "stdio.err", "w") as errlog:
        params = StdioServerParameters(command=shutil.which("nexus-mcp"), env=dict(os.environ))
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


@contextlib.contextmanager
def http_server(tmp_path, *options):
    """The URL of a nexus-mcp --http of this home, and a token for it (`options`: mcp token add's)."""
    token = subprocess.run(["nexus", "mcp", "token", "add", "tester", *options], capture_output=True, text=True,
                           check=True)
    with open(tmp_path / "http.err", "w+") as err:
        server = subprocess.Popen(["nexus-mcp", "--http", "--port", "0"], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=err)
        try:
            assert wait_for(lambda: "serving MCP at" in (tmp_path / "http.err").read_text(), 90), \
                (tmp_path / "http.err").read_text()
            yield (tmp_path / "http.err").read_text().split("serving MCP at ")[1].split()[0], token.stdout.strip()
        finally:
            server.terminate()
            server.wait(20)


@contextlib.asynccontextmanager
async def http_session(url, token):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def over_mcp(session, names):
    """{name: (refused?, what the client was told)} of a tool call of each skill, and the prompt read."""
    told = {}
    for name in names:
        try:
            result = await session.call_tool(name, {"args": ["hi"]})
            told[name] = (result.is_error, result.content[0].text)
        except MCPError as e:  # a skill the model may not know of: no tool of that name
            told[name] = (True, e.message)
    prompt = await session.get_prompt("note")
    told["note"] = (False, prompt.messages[0].content.text)
    return told


def call(front_end, script_runner, tmp_path, names):
    """{name: (refused?, what the caller was told)} of a call of each skill, and of the prompt `note`,
    through `front_end`."""
    if front_end == "mcp":
        async def main():
            async with stdio_session(tmp_path) as session:
                return await over_mcp(session, names)
        return anyio.run(main)
    if front_end == "http":
        with http_server(tmp_path) as (url, token):
            async def main():
                async with http_session(url, token) as session:
                    return await over_mcp(session, names)
            return anyio.run(main)
    told = {}
    for name in [*names, "note"]:
        argv = ["nexus-run", name] if front_end == "nexus-run" else ["nexus", "skill", "run", name]
        if front_end == "background" and name != "note":
            argv.append("--background")
        result = script_runner.run([*argv, "--", "hi"] if name != "note" else argv)
        told[name] = (result.returncode != 0, result.stderr if result.returncode else result.stdout)
    return told


def as_logged(line):
    """What a log line says of the call, less who made it and when (the session, client, token, time)."""
    return {k: v for k, v in line.items() if k not in ("ts", "ms", "session", "client", "token")}


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_each_front_end_refuses_and_logs_the_same_for_the_same_cause(front_end, script_runner, gated, nexus_home,
                                                                    tmp_path):
    told = call(front_end, script_runner, tmp_path, list(CAUSES))
    model = front_end in ("mcp", "http")
    for name, cause in CAUSES.items():
        if name == "people" and not model:  # kept from models only: a person's command runs it
            assert told[name][0] is False, told[name]
            continue
        refused, message = told[name]
        assert refused, (name, told[name])
        line = read_log(nexus_home, name)[-1]
        assert as_logged(line) == {"skill": name, "type": "script" if name == "hello" else "tool", "exit": 1,
                                   "refused": cause, "error": message_of(name), "profile": "team",
                                   "args": ["hi"], "tool": "python3" if name == "hello" else "say"}, line
        if model and name == "outside":  # to a model, a skill outside its profile is not found, nothing more
            assert "no skill 'outside' here" in message and "profile" not in message, message
        else:
            assert line["error"] in message, (name, message)
        assert (line.get("client") is not None) == model  # the MCP client's name: a model's call says who
    assert told["note"] == (False, "# Note\n\nHello world.\n")
    read = read_log(nexus_home, "note")[-1]
    assert as_logged(read) == {"skill": "note", "type": "prompt", "exit": 0, "profile": "team"}, read
    assert (read.get("token") == "tester") == (front_end == "http")


def message_of(name):
    """The first line of the refusal of `name`, whichever front end called."""
    return {"off": "Skill 'off' is disabled (disabled in config). To enable it: nexus skill enable off",
            "outside": "Skill 'outside' is not available to profile team. To see what it may use: nexus profiles",
            "people": "Skill 'people' is not offered to agents (disable-model-invocation: true); a person runs it "
                      "with `nexus skill run`",
            "hello": "Skill 'hello' changed since it was added, not through nexus: hello.py changed. Review and "
                     "accept the change with `nexus skill trust hello` (it shows the audit of the change first)"}[name]


def test_a_tokens_call_budget_is_spent_only_on_calls_the_gate_lets_through(gated, nexus_home, tmp_path):
    """A call the gate refuses ran nothing: it costs a token with --max-calls none of its calls."""
    with http_server(tmp_path, "--max-calls", "1") as (url, token):
        async def main():
            async with http_session(url, token) as session:
                refused = await session.call_tool("off", {"args": ["hi"]})
                ran = await session.call_tool("say", {"args": ["hi"]})
                spent = await session.call_tool("say", {"args": ["again"]})
                return refused, ran, spent
        refused, ran, spent = anyio.run(main)
    assert refused.is_error and "is disabled" in refused.content[0].text
    assert not ran.is_error and ran.content[0].text == "hi\n"
    assert spent.is_error and "has made the 1 calls it may make" in spent.content[0].text
    assert [(line.get("refused"), line["exit"]) for line in read_log(nexus_home, "say")] == [(None, 0), ("scope", 1)]


def test_no_sandbox_off_a_terminal_is_the_callers_refusal_for_every_kind_and_a_dry_run_logs_nothing(
        script_runner, gated, nexus_home):
    """--no-sandbox is for a person at a terminal: a prompt's call is refused off one too (the option was
    ignored there), and a dry run says the refusal without logging a call that never happened."""
    dry = script_runner.run(["nexus", "skill", "run", "say", "--no-sandbox", "--dry-run"], stdin=io.StringIO(""))
    assert dry.returncode == 1 and "--no-sandbox is for a person at a terminal" in dry.stderr
    assert not (nexus_home / "state" / "nexus" / "skills" / "say" / "usage.log").exists()
    read = script_runner.run(["nexus", "skill", "run", "note", "--no-sandbox"], stdin=io.StringIO(""))
    assert read.returncode == 1 and read.stdout == ""
    line = read_log(nexus_home, "note")[-1]
    assert (line["type"], line["refused"], line["exit"]) == ("prompt", "sandbox", 1)


def test_a_failing_skill_is_refused_to_a_model_that_calls_it_by_name_and_still_runs_for_a_command(
        script_runner, workspace, bindir, nexus_home, tmp_path):
    make_tool(bindir, "flaky", "#!/bin/sh\nexit 1\n")
    write_skill(workspace, "flaky", "Fails.", meta={"tool": "flaky"})
    for _ in range(6):  # no terminal: an agent's calls, each a failure
        assert script_runner.run(["nexus", "skill", "run", "flaky", "--no-verify"]).returncode == 1

    async def main():
        async with stdio_session(tmp_path) as session:
            try:
                result = await session.call_tool("flaky", {"args": []})
                return result.is_error, result.content[0].text
            except MCPError as e:
                return True, e.message
    refused, told = anyio.run(main)
    assert refused and "failing 6 of the last 6 calls" in told and "offered to no agent" in told, told
    assert read_log(nexus_home, "flaky")[-1]["refused"] == "scope"
    assert script_runner.run(["nexus", "skill", "run", "flaky", "--no-verify"]).returncode == 1  # a command: it runs
    assert "refused" not in read_log(nexus_home, "flaky")[-1]
