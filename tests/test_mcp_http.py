"""nexus-mcp --http (issue 31): one server for the module, driven by the MCP SDK's own streamable-HTTP client
with a token, without one, with an expired, a revoked and a profile-bound one, and from a foreign Origin.
What the gateway records is read from the usage logs the server writes."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from bench.bench_http import load
from helpers import make_tool, wait_for, write_skill

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp", reason="the mcp extra is not installed")
pytest.importorskip("uvicorn", reason="the mcp extra is not installed")

import httpx2  # noqa: E402  (the MCP SDK's HTTP client)
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp_types import INVALID_PARAMS  # noqa: E402

# The server is a process of its own, the same in both launch modes; its tests share one (a module's
# fixture), so they run in one pytest-xdist worker (`make test` distributes by group).
pytestmark = [pytest.mark.once, pytest.mark.xdist_group("nexus-mcp-http")]


class Served:
    """The server of this module: its home, environment, URL and tokens."""

    def __init__(self, root):
        self.root, self.home = root, root / "nexus"
        self.bin = root / "bin"
        self.env = {**os.environ, "NEXUS_HOME": str(self.home), "MANAGED_SKILLS_DIR": str(root / "managed"),
                    "HOME": str(root / "home"), "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}"}
        for name in ("NEXUS_CONFIG", "NEXUS_SESSION_ID", "NEXUS_PROFILE"):
            self.env.pop(name, None)
        self.tokens = {}

    def nexus(self, *argv, check=True):
        return subprocess.run(["nexus", *argv], env=self.env, capture_output=True, text=True, check=check)

    def token(self, name, *options):
        self.tokens[name] = self.nexus("mcp", "token", "add", name, *options).stdout.strip()
        return self.tokens[name]

    def log(self, skill):
        path = self.home / "state" / "nexus" / "skills" / skill / "usage.log"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def auth_log(self):
        path = self.home / "state" / "nexus" / "mcp" / "auth.log"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def fds(self):
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def threads(self):
        return len(os.listdir(f"/proc/{self.process.pid}/task"))


def furnished(served):
    """A server's home as these tests have it: the tool `say`, and a profile `narrow` of the skill say alone."""
    served.bin.mkdir()
    (served.home / "skills").mkdir(parents=True)
    (served.home / "nexus.toml").write_text('[skills]\nallowBundled = []\n[profiles.narrow.skills]\nallow = ["say"]\n')
    make_tool(served.bin, "say", '#!/bin/sh\nprintf "%s\\n" "$*"\n')
    return served


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    served = furnished(Served(tmp_path_factory.mktemp("http")))
    make_tool(served.bin, "where", "#!/bin/sh\npwd\n")
    make_tool(served.bin, "nap", "#!/bin/sh\nsleep 30\n")
    for name, tool in (("say", "say"), ("where", "where"), ("nap", "nap")):
        write_skill(served.home / "skills", name, f"Runs {tool}.", meta={"tool": tool})
    guide = write_skill(served.home / "skills", "guide", "How to do it.")  # published: a prompt skill
    (guide / "notes").mkdir()
    (guide / "notes" / "steps.md").write_text("1. Begin.\n")
    (write_skill(served.home / "skills", "secretive", "Holds a key.") / ".env").write_text("TOKEN=x\n")
    served.token("team")
    served.token("narrow", "--profile", "narrow")
    served.token("once", "--max-calls", "1")
    served.token("gone")
    served.token("stale")
    err = open(served.root / "server.err", "w+")
    served.process = subprocess.Popen(["nexus-mcp", "--http", "--port", "0", "--watch", "1",
                                       "--allow-origin", "https://inspector.example"], env=served.env,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    try:  # a server that does not start is ended all the same: nothing is left behind
        assert wait_for(lambda: "serving MCP at" in (served.root / "server.err").read_text(), 90), \
            (served.root / "server.err").read_text()
        served.url = (served.root / "server.err").read_text().split("serving MCP at ")[1].split()[0]
        yield served
    finally:
        served.process.terminate()
        ended = served.process.wait(10)
        err.close()
    assert ended == -15  # ended by the signal, as a Unix tool is


@contextlib.asynccontextmanager
async def session(served, token=None, headers=None, statuses=None):
    """An initialized ClientSession on the server, through the SDK's streamable-HTTP client; the HTTP status
    of each response goes into `statuses`, the notifications the server sends into the session's .notes."""
    notes = []

    async def on_message(message):
        notes.append(message)

    headers = {**({"Authorization": f"Bearer {token}"} if token else {}), **(headers or {})}

    async def seen(response):
        if statuses is not None:
            statuses.append(response.status_code)

    async with httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [seen]}) as http:
        async with streamable_http_client(served.url, http_client=http) as (read, write):
            async with ClientSession(read, write, message_handler=on_message) as client:
                await client.initialize()
                client.notes = notes
                yield client


def run(served, scenario, token=None, headers=None, statuses=None):
    async def main():
        async with session(served, token, headers, statuses) as client:
            return await scenario(client)

    return anyio.run(main)


def post(served, headers):
    """The status and body of a raw initialize POST."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    request = urllib.request.Request(served.url, body.encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_a_call_with_a_token_runs_through_the_gateway_in_its_sessions_folder_and_logs_the_token(served):
    async def scenario(client):
        tools = await client.list_tools()
        said = await client.call_tool("say", {"args": ["hello", "team"]})
        where = await client.call_tool("where", {})
        resources = await client.list_resources()
        read = await client.read_resource(next(r.uri for r in resources.resources if r.name == "guide"))
        return tools, said, where, resources, read

    tools, said, where, resources, read = run(served, scenario, served.tokens["team"])
    assert {"say", "where", "nap", "list_skills"} <= {t.name for t in tools.tools}
    assert said.content[0].text == "hello team\n" and not said.is_error
    folder = where.content[0].text.strip()
    assert folder.startswith(str(served.home / "state" / "nexus" / "mcp" / "sessions" / "mcp-"))
    assert wait_for(lambda: not os.path.exists(folder))  # removed once the session ended (the client's DELETE)
    uris = [str(r.uri) for r in resources.resources]
    assert uris and all(u.startswith("skill://") and str(served.root) not in u for u in uris)
    assert read.contents[0].text.startswith("---")
    [reading] = served.log("guide")
    assert (reading["type"], reading["token"]) == ("prompt", "team")
    [line] = served.log("say")
    assert line["token"] == "team" and line["client"].startswith("mcp/") and line["session"].startswith("mcp-")
    assert served.log("where")[-1]["session"] == line["session"]


def test_over_http_resources_are_the_published_skills_files_and_nothing_else_is_read(served):
    async def scenario(client):
        listed = await client.list_resources()
        refused = []
        for uri in ("skill://say/SKILL.md", "skill://secretive/SKILL.md", "skill://secretive/.env",
                    "skill://guide/../say/SKILL.md", f"file://{served.home}/skills/guide/SKILL.md"):
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri)
            refused.append(caught.value.error.code)
        return listed, await client.read_resource("skill://guide/notes/steps%2Emd"), refused

    listed, read, refused = run(served, scenario, served.tokens["team"])
    assert [(str(r.uri), r.name, r.description) for r in listed.resources] == [
        ("skill://guide/SKILL.md", "guide", "How to do it."), ("skill://guide/notes/steps.md", "notes/steps.md", None)]
    assert read.contents[0].text == "1. Begin.\n"  # a percent-encoded URI is the file's
    assert refused == [INVALID_PARAMS] * 5
    assert served.log("secretive") == []


def test_a_client_of_the_2026_revision_without_sessions_is_served_and_logged_under_its_token(served):
    async def main():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {served.tokens['team']}"}) as http:
            async with streamable_http_client(served.url, http_client=http) as (read, write):
                async with ClientSession(read, write) as client:
                    discovered = await client.discover()
                    return discovered, [await client.call_tool("say", {"args": [w]}) for w in ("new", "era")]

    discovered, results = anyio.run(main)
    assert "2026-07-28" in discovered.supported_versions
    assert [r.content[0].text for r in results] == ["new\n", "era\n"]
    lines = [line for line in served.log("say") if line.get("args") in (["new"], ["era"])]
    assert [line["token"] for line in lines] == ["team", "team"]
    assert lines[0]["session"] == lines[1]["session"]  # one session a token: its requests carry none of their own


def test_without_a_token_a_request_gets_401_and_nothing_else_and_is_logged(served):
    before = len(served.auth_log())
    status, body = post(served, {})
    assert (status, body) == (401, b"")
    time.sleep(1.1)  # auth.log takes one line an address a second
    assert post(served, {"Authorization": "Bearer nexus_not-a-token"}) == (401, b"")
    statuses = []
    with pytest.raises(Exception):
        run(served, lambda client: client.list_tools(), statuses=statuses)
    assert statuses == [401]
    logged = served.auth_log()[before:]
    assert [line["reason"] for line in logged[:2]] == ["no bearer token", "unknown or revoked token"]
    assert all(line["remote"].startswith("127.0.0.1:") for line in logged)


def test_an_expired_token_is_refused(served):
    path = served.home / "state" / "nexus" / "mcp" / "tokens.json"
    document = json.loads(path.read_text())
    document["tokens"]["stale"]["expires"] = "2020-01-01T00:00:00.000Z"
    path.write_text(json.dumps(document))
    statuses = []
    time.sleep(1.1)  # auth.log takes one line an address a second
    with pytest.raises(Exception):
        run(served, lambda client: client.list_tools(), served.tokens["stale"], statuses=statuses)
    assert statuses == [401]
    assert served.auth_log()[-1]["reason"].startswith("expired") and served.auth_log()[-1]["token"] == "stale"
    listed = json.loads(served.nexus("mcp", "token", "list", "--json").stdout)
    assert [t["expired"] for t in listed if t["name"] == "stale"] == [True]


def while_napping(served, then, token=None, after=0.5):
    """Run then() in a thread while a call of the `nap` skill runs (started `after` seconds before), then
    end the session; what ends it under the client's feet (a revocation, the server's end) is no error."""
    async def scenario(client):
        async with anyio.create_task_group() as tasks:
            async def nap():
                with contextlib.suppress(Exception):
                    await client.call_tool("nap", {})
            tasks.start_soon(nap)
            await anyio.sleep(after)
            await anyio.to_thread.run_sync(then)
            tasks.cancel_scope.cancel()

    with contextlib.suppress(Exception):
        run(served, scenario, token)


def test_a_revoked_token_is_refused_and_its_live_session_and_call_end(served):
    def revoke():
        served.nexus("mcp", "token", "revoke", "gone")
        wait_for(lambda: served.log("nap"), 15)  # the call ended and logged: its line is checked below

    while_napping(served, revoke, served.tokens["gone"])
    [line] = [line for line in served.log("nap") if line["type"] == "tool"]
    assert line["token"] == "gone" and line["exit"] == 137 and line["error"] == "cancelled"
    assert post(served, {"Authorization": f"Bearer {served.tokens['gone']}"})[0] == 401
    assert served.nexus("mcp", "token", "revoke", "gone", check=False).returncode == 1


def test_a_foreign_origin_is_refused_and_a_local_or_allowed_one_let_in(served):
    assert post(served, {"Origin": "http://evil.example", "Authorization": f"Bearer {served.tokens['team']}"})[0] == 403
    statuses = []
    with pytest.raises(Exception):
        run(served, lambda client: client.list_tools(), served.tokens["team"], {"Origin": "http://evil.example"},
            statuses)
    assert statuses == [403]
    port = served.url.split(":")[2].split("/")[0]
    assert post(served, {"Origin": f"http://localhost:{port}", "Authorization": f"Bearer {served.tokens['team']}"})[0] == 200
    assert post(served, {"Host": "evil.example", "Authorization": f"Bearer {served.tokens['team']}"})[0] == 421
    assert post(served, {"Origin": "https://inspector.example", "Authorization": f"Bearer {served.tokens['team']}"})[0] == 200
    assert post(served, {"Origin": "https://inspector.example.evil", "Authorization": f"Bearer {served.tokens['team']}"})[0] == 403


def test_a_token_bound_to_a_profile_sees_and_runs_only_its_skills(served):
    async def scenario(client):
        try:
            where = await client.call_tool("where", {})
        except Exception as e:  # a skill outside the profile is an unknown tool, as one that does not exist
            where = e
        return await client.list_tools(), where, await client.call_tool("say", {})

    tools, where, said = run(served, scenario, served.tokens["narrow"])
    assert {t.name for t in tools.tools} - {"list_skills", "read_skill"} == {"say"}
    assert "Unknown tool 'where'" in str(where) and not said.is_error
    line = served.log("say")[-1]
    assert (line["token"], line["profile"]) == ("narrow", "narrow")


def test_a_token_with_max_calls_is_refused_past_them(served):
    async def scenario(client):
        return [await client.call_tool("say", {"args": [str(n)]}) for n in range(2)]

    first, second = run(served, scenario, served.tokens["once"])
    assert not first.is_error and second.is_error and "1 calls it may make" in second.content[0].text
    lines = [line for line in served.log("say") if line.get("token") == "once"]
    assert [line.get("refused") for line in lines] == [None, "scope"]


def test_a_session_hears_of_a_skill_added_while_it_is_open(served):
    async def scenario(client):
        before = await client.list_tools()
        write_skill(served.home / "skills", "late", "Came later.", meta={"tool": "say"})
        try:
            with anyio.fail_after(15):
                while not any("tools/list_changed" in repr(note) for note in client.notes):
                    await anyio.sleep(0.1)
            return before, await client.list_tools()
        finally:
            shutil.rmtree(served.home / "skills" / "late")

    before, after = run(served, scenario, served.tokens["team"])
    assert "late" not in {t.name for t in before.tools} and "late" in {t.name for t in after.tools}


def test_concurrent_clients_each_call_answered_and_logged_once_and_nothing_left_behind(served):
    before = len(served.log("say"))
    fds = served.fds()
    answers, latencies, _ = load(served.url, served.tokens["team"], clients=4, calls=24)  # make bench: 16 x 2,000
    assert answers == {word: f"{word}\n" for word in answers} and len(answers) == len(latencies) == 24
    logged = [line["args"][0] for line in served.log("say")[before:]]
    assert sorted(logged) == sorted(answers)  # exactly one line a call
    assert wait_for(lambda: served.fds() <= fds), (served.fds(), fds)
    assert served.threads() <= 1 + 4 + 16 + 2  # the loop, the list workers, --max-calls, the SDK's


def test_no_token_refuses_a_public_address_and_no_auth_is_loopback_only(tmp_path):
    env = {**os.environ, "NEXUS_HOME": str(tmp_path / "h")}
    public = subprocess.run(["nexus-mcp", "--http", "--host", "0.0.0.0", "--port", "0"], env=env,
                            capture_output=True, text=True, timeout=30)
    assert public.returncode == 1 and "no usable token" in public.stderr
    open_door = subprocess.run(["nexus-mcp", "--http", "--host", "0.0.0.0", "--no-auth", "--port", "0"], env=env,
                               capture_output=True, text=True, timeout=30)
    assert open_door.returncode == 2 and "loopback" in open_door.stderr


def test_sighup_ends_the_calls_in_flight_logs_them_and_ends_the_server_by_that_signal(tmp_path):
    served = Served(tmp_path)
    served.bin.mkdir()
    make_tool(served.bin, "nap", "#!/bin/sh\nsleep 30\n")
    write_skill(served.home / "skills", "nap", "Naps.", meta={"tool": "nap"})
    (served.home / "nexus.toml").write_text("[skills]\nallowBundled = []\n")
    with open(tmp_path / "server.err", "w") as err:
        served.process = subprocess.Popen(["nexus-mcp", "--http", "--no-auth", "--port", "0", "--watch", "0"],
                                          env=served.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=err)
    try:
        assert wait_for(lambda: "serving MCP at" in (tmp_path / "server.err").read_text(), 90)
    finally:
        if served.process.poll() is None and "serving MCP at" not in (tmp_path / "server.err").read_text():
            served.process.kill()  # one that does not start is not left behind
    served.url = (tmp_path / "server.err").read_text().split("serving MCP at ")[1].split()[0]

    def hang_up():
        served.process.send_signal(signal.SIGHUP)
        served.process.wait(30)

    while_napping(served, hang_up, after=1)
    assert served.process.returncode == -signal.SIGHUP
    [line] = served.log("nap")
    assert (line["exit"], line["error"]) == (137, "cancelled")
