"""nexus-mcp --http under strangers, floods and a leaked token (issue 38): raw sockets that never finish a
request, floods of refused requests, a token rotated under the same name, one token taking every slot, bad
JSON. One server for the module, started with few descriptors (as a busy host has them) and small shares,
driven by raw sockets and the MCP SDK's streamable-HTTP client, 127.0.0.1 only."""

import contextlib
import json
import os
import re
import resource
import socket
import subprocess
import time

import pytest
from helpers import make_tool, wait_for, write_skill
from test_mcp_http import Served, furnished, run, session
from test_process import alive

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp", reason="the mcp extra is not installed")
pytest.importorskip("uvicorn", reason="the mcp extra is not installed")

import httpx2  # noqa: E402  (the MCP SDK's HTTP client)
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

pytestmark = [pytest.mark.once, pytest.mark.xdist_group("nexus-mcp-team")]

DESCRIPTORS = 256  # the server's RLIMIT_NOFILE: 300 idle sockets exhausted it before connections were bounded


def few_descriptors():
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTORS, DESCRIPTORS))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    served = furnished(Served(tmp_path_factory.mktemp("team")))
    make_tool(served.bin, "nap", "#!/bin/sh\nsleep ${1:-30}\n")
    for name in ("say", "nap"):
        write_skill(served.home / "skills", name, f"Runs {name}.", meta={"tool": name})
    for name in ("team", "pair", "many", "other"):
        served.token(name)
    served.token("narrow", "--profile", "narrow")
    err = open(served.root / "server.err", "w+")
    served.process = subprocess.Popen(["nexus-mcp", "--http", "--port", "0", "--watch", "0", "--max-sessions", "3",
                                       "--calls-per-token", "2"], env=served.env, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=err, preexec_fn=few_descriptors)
    try:
        assert wait_for(lambda: "serving MCP at" in (served.root / "server.err").read_text(), 90), \
            (served.root / "server.err").read_text()
        served.url = (served.root / "server.err").read_text().split("serving MCP at ")[1].split()[0]
        served.port = int(served.url.split(":")[2].split("/")[0])
        yield served
    finally:
        served.process.terminate()
        served.process.wait(10)
        err.close()


def connect(served):
    sock = socket.create_connection(("127.0.0.1", served.port), timeout=30)
    return sock


def raw_initialize(served, token, session_id=None, method="initialize"):
    """(status, headers, body) of one raw POST of a JSON-RPC request."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", **({"mcp-session-id": session_id} if session_id else {})}
    params = ({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
              if method == "initialize" else {})
    with httpx2.Client(timeout=30) as http:
        answer = http.post(served.url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": method,
                                                               "params": params})
        return answer.status_code, answer.headers, answer.text


def delete(served, token, session_id):
    with httpx2.Client(timeout=30) as http:
        http.delete(served.url, headers={"Authorization": f"Bearer {token}", "mcp-session-id": session_id})


def test_idle_and_half_sent_connections_never_keep_a_valid_client_out(served):
    async def scenario(client):
        before = await client.call_tool("say", {"args": ["before"]})
        idle = []
        try:
            for n in range(300):  # what sends nothing, and what sends half a request's head
                sock = connect(served)
                if n % 2:
                    sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                idle.append(sock)
            during = await client.call_tool("say", {"args": ["during"]})  # the session opened before the flood
            async with session(served, served.tokens["other"]) as fresh:  # and a client that comes after it
                fresh_said = await fresh.call_tool("say", {"args": ["fresh"]})
            return before, during, fresh_said, served.fds()
        finally:
            for sock in idle:
                sock.close()

    before, during, fresh, fds = run(served, scenario, served.tokens["team"])
    assert [r.content[0].text for r in (before, during, fresh)] == ["before\n", "during\n", "fresh\n"]
    assert fds < DESCRIPTORS - 100  # at most --max-connections (64) of them held at once


def test_a_connection_that_never_finishes_its_head_is_closed_and_a_stream_in_flight_never_is(served):
    sock = connect(served)
    sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    started = time.monotonic()
    assert sock.recv(100) == b""  # closed by the server (the test's own timeout is 30 s)
    assert 8 < time.monotonic() - started < 25
    sock.close()

    async def scenario(client):
        return await client.call_tool("nap", {"args": ["13"]})  # its answer's stream stays open past 10 s

    assert not run(served, scenario, served.tokens["team"]).is_error


def test_a_flood_of_refused_requests_writes_a_line_a_second_with_what_it_left_out(served):
    log = served.home / "state" / "nexus" / "mcp" / "auth.log"
    before = log.stat().st_size if log.exists() else 0
    sock = connect(served)
    request = b"GET /%1b[31m" + b"A" * 16000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    started = time.monotonic()
    sock.sendall(request * 500)  # pipelined: each answered 401
    answered = b""
    while answered.count(b"HTTP/1.1 401") < 500:
        chunk = sock.recv(65536)
        assert chunk, answered.count(b"HTTP/1.1 401")
        answered += chunk
    seconds = time.monotonic() - started
    sock.close()
    time.sleep(1.1)
    assert post_without_token(served) == 401  # the next second's line says what was left out
    lines = [json.loads(line) for line in log.read_bytes()[before:].splitlines()]
    assert 2 <= len(lines) <= seconds + 3
    assert sum(line.get("suppressed", 0) for line in lines) + len(lines) == 501
    assert all(len(line["path"]) <= 200 for line in lines)
    assert lines[0]["path"].startswith("/\\e[31mAAA") and "\x1b" not in log.read_text()


def post_without_token(served):
    with httpx2.Client(timeout=30) as http:
        return http.post(served.url, json={}).status_code


def test_auth_log_is_pruned_past_a_megabyte(served):
    log = served.home / "state" / "nexus" / "mcp" / "auth.log"
    filler = json.dumps({"ts": "2020-01-01T00:00:00.000Z", "remote": "127.0.0.1:1", "reason": "old"}) + "\n"
    with open(log, "a") as f:
        f.write(filler * (1100 * 1024 // len(filler)))
    time.sleep(1.1)  # past this address's second
    assert post_without_token(served) == 401
    assert log.stat().st_size <= 1024 * 1024
    assert json.loads(log.read_text().splitlines()[-1])["reason"] == "no bearer token"


def test_a_token_rotated_under_the_same_name_ends_the_old_ones_sessions_and_cannot_use_them(served):
    served.token("rot")
    status, headers, _ = raw_initialize(served, served.tokens["rot"])
    old = headers["mcp-session-id"]
    assert status == 200 and raw_initialize(served, served.tokens["rot"], old, "tools/list")[0] == 200
    assert raw_initialize(served, served.tokens["team"], old, "tools/list")[0] == 404  # another token
    served.nexus("mcp", "token", "revoke", "rot")
    served.token("rot", "--profile", "narrow")  # the same name, another token
    assert raw_initialize(served, served.tokens["rot"], old, "tools/list")[0] == 404
    assert "session" in (served.root / "server.err").read_text()
    fresh = raw_initialize(served, served.tokens["rot"])
    assert fresh[0] == 200
    delete(served, served.tokens["rot"], fresh[1]["mcp-session-id"])


def test_a_token_holds_at_most_its_share_of_sessions(served):
    opened = [raw_initialize(served, served.tokens["many"]) for _ in range(3)]
    try:
        assert [status for status, _, _ in opened] == [200, 200, 200]
        time.sleep(1.1)  # one auth log line an address a second: an earlier refusal must not hide this one
        assert raw_initialize(served, served.tokens["many"])[0] == 503
        other = raw_initialize(served, served.tokens["other"])
        assert other[0] == 200
        delete(served, served.tokens["other"], other[1]["mcp-session-id"])
        assert "--max-sessions" in served.auth_log()[-1]["reason"]
    finally:
        for _, headers, _ in opened:
            delete(served, served.tokens["many"], headers["mcp-session-id"])
    assert wait_for(lambda: raw_initialize(served, served.tokens["many"])[0] == 200)


def test_a_token_runs_at_most_its_share_of_calls_and_a_call_refused_for_a_slot_is_logged(served):
    async def scenario(client):
        async with anyio.create_task_group() as tasks:
            for _ in range(2):
                tasks.start_soon(client.call_tool, "nap", {"args": ["4"]})
            await anyio.sleep(1.5)
            third = await client.call_tool("say", {"args": ["third"]})
            async with session(served, served.tokens["other"]) as other:
                elsewhere = await other.call_tool("say", {"args": ["elsewhere"]})
        return third, elsewhere

    third, elsewhere = run(served, scenario, served.tokens["pair"])
    assert third.is_error and "--calls-per-token" in third.content[0].text
    assert not elsewhere.is_error
    [line] = [line for line in served.log("say") if line.get("args") == ["third"]]
    assert (line["refused"], line["token"]) == ("busy", "pair")


def test_a_call_whose_client_leaves_before_its_answer_is_cancelled_and_frees_its_slot(served):
    token = served.tokens["pair"]
    status, headers, _ = raw_initialize(served, token)
    sid = headers["mcp-session-id"]
    common = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
              "Content-Type": "application/json", "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
    with httpx2.Client(timeout=30) as http:
        http.post(served.url, headers=common, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        for n in range(2):  # both of the token's slots, each client gone at once
            with http.stream("POST", served.url, headers=common, json={
                    "jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
                    "params": {"name": "nap", "arguments": {"args": ["60"]}}}) as answer:
                assert answer.status_code == 200
                time.sleep(1)
    gone = lambda: [line for line in served.log("nap") if line.get("token") == "pair" and line["args"] == ["60"]]
    assert wait_for(lambda: len(gone()) == 2, 20), gone()
    assert all((line["exit"], line["error"]) == (137, "cancelled") for line in gone())
    async def scenario(client):
        return await client.call_tool("say", {"args": ["a slot is free"]})

    assert not run(served, scenario, token).is_error
    delete(served, token, sid)


def test_a_skill_outside_the_tokens_profile_is_not_found_as_one_that_does_not_exist(served):
    async def scenario(client):
        said = []
        for name in ("nap", "no-such-skill"):
            try:
                await client.call_tool(name, {})
            except Exception as e:  # the SDK's McpError: a protocol error, as for any unknown tool
                said.append(str(e))
        for name in ("nap", "no-such-skill"):
            try:
                await client.get_prompt(name)
            except Exception as e:
                said.append(str(e))
        said += [(await client.call_tool("read_skill", {"name": n})).content[0].text for n in ("nap", "no-such-skill")]
        return said

    said = run(served, scenario, served.tokens["narrow"])
    assert len(said) == 6
    for outside, missing in zip(said[::2], said[1::2]):
        assert outside.replace("nap", "NAME") == missing.replace("no-such-skill", "NAME"), (outside, missing)
        assert "profile" not in outside and "tool skill" not in outside


def test_a_foreign_port_of_this_host_and_a_header_sent_twice_are_refused(served):
    def status(headers):
        with httpx2.Client(timeout=30) as http:
            return http.post(served.url, headers=[("Authorization", f"Bearer {served.tokens['team']}"),
                                                  ("Accept", "application/json, text/event-stream"),
                                                  ("Content-Type", "application/json"), *headers],
                             content=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})).status_code

    assert status([("Origin", "http://localhost:3000")]) == 403  # another program's page on this machine
    assert status([("Origin", f"http://localhost:{served.port}"), ("Origin", "http://evil.example")]) == 400
    assert status([("Authorization", "Bearer nexus_other")]) == 400  # whichever the gate would read


def test_a_forwarded_for_header_does_not_name_the_address_auth_log_records(served):
    time.sleep(1.1)
    with httpx2.Client(timeout=30) as http:
        assert http.post(served.url, headers={"X-Forwarded-For": "203.0.113.9"}, json={}).status_code == 401
    assert served.auth_log()[-1]["remote"].startswith("127.0.0.1:")


def test_a_revoked_tokens_session_of_the_2026_revision_ends_and_loses_its_folder(served):
    served.token("rev26")

    async def main():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {served.tokens['rev26']}"}) as http:
            async with streamable_http_client(served.url, http_client=http) as (read, write):
                async with ClientSession(read, write) as client:
                    await client.discover()  # the 2026 revision: no handshake, no session id
                    return await client.call_tool("say", {"args": ["here"]})

    assert not anyio.run(main).is_error
    err = (served.root / "server.err").read_text()
    [session] = re.findall(r"session (mcp-\S+) \(token rev26\)", err)
    folder = served.home / "state" / "nexus" / "mcp" / "sessions" / session
    assert folder.is_dir()
    served.nexus("mcp", "token", "revoke", "rev26")
    assert wait_for(lambda: not folder.exists(), 15)


def test_deeply_nested_json_is_a_parse_error_and_the_server_goes_on(served):
    status, headers, _ = raw_initialize(served, served.tokens["team"])
    sid = headers["mcp-session-id"]
    with httpx2.Client(timeout=30) as http:
        common = {"Authorization": f"Bearer {served.tokens['team']}", "Accept": "application/json, text/event-stream",
                  "Content-Type": "application/json", "mcp-session-id": sid}
        deep = http.post(served.url, headers=common, content=b"[" * 100000 + b"]" * 100000)
    assert deep.status_code == 400 and b"-32700" in deep.content
    assert raw_initialize(served, served.tokens["team"], sid, "ping")[0] == 200
    delete(served, served.tokens["team"], sid)


def test_stdio_answers_deep_json_with_a_parse_error_and_a_wrong_id_with_an_invalid_request(tmp_path):
    env = {**os.environ, "NEXUS_HOME": str(tmp_path / "h")}
    server = subprocess.Popen(["nexus-mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env)
    lines = [b"[" * 100000 + b"]" * 100000, b'{"jsonrpc": "2.0", "id": true, "method": "ping"}',
             b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', b'{"jsonrpc": "2.0", "id": 1e400, "method": "ping"}',
             b'{"jsonrpc": "2.0", "id": 5, "method": "ping"}']
    server.stdin.write(b"\n".join(lines) + b"\n")
    server.stdin.flush()
    answers = [json.loads(server.stdout.readline()) for _ in range(5)]
    server.stdin.close()
    assert server.wait(30) == 0 and b"Traceback" not in server.stderr.read()
    assert sorted(a["error"]["code"] for a in answers if "error" in a) == [-32700, -32600, -32600, -32600]
    assert [a["result"] for a in answers if a.get("id") == 5] == [{}]


def stdio_calls(env, *calls, argv=()):
    """The results of tools/call requests (name, arguments) sent to a nexus-mcp on stdio."""
    server = subprocess.Popen(["nexus-mcp", *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=env, text=True)
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    lines += [{"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
              for n, (name, arguments) in enumerate(calls, 1)]
    server.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
    server.stdin.flush()
    answers = {}
    while len(answers) < len(calls) + 1:
        message = json.loads(server.stdout.readline())
        answers[message["id"]] = message
    server.stdin.close()
    assert server.wait(30) == 0
    return [answers[n]["result"] for n in range(1, len(calls) + 1)]


@pytest.fixture
def home(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    env = {**os.environ, "NEXUS_HOME": str(tmp_path / "nexus"), "HOME": str(tmp_path / "home"),
           "MANAGED_SKILLS_DIR": str(tmp_path / "managed"), "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    for name in ("NEXUS_CONFIG", "NEXUS_SESSION_ID", "NEXUS_PROFILE"):
        env.pop(name, None)
    (tmp_path / "nexus" / "skills").mkdir(parents=True)
    (tmp_path / "nexus" / "nexus.toml").write_text("[skills]\nallowBundled = []\n")
    return tmp_path, bindir, env


def test_a_tool_called_over_mcp_gets_no_other_skills_secrets_and_a_shell_keeps_its_environment(home):
    root, bindir, env = home
    make_tool(bindir, "envdump", "#!/bin/sh\nenv\n")
    make_tool(bindir, "btool", "#!/bin/sh\nexit 0\n")
    write_skill(root / "nexus" / "skills", "dump", "Dumps.", meta={"tool": "envdump", "requires": {"env": ["AKEY_TOKEN"]}})
    write_skill(root / "nexus" / "skills", "bee", "Bee.", meta={"tool": "btool", "requires": {"env": ["BKEY_TOKEN"]},
                                                                "primaryEnv": "BEE_API"})
    env.update({"AKEY_TOKEN": "a-own-secret-1", "BKEY_TOKEN": "b-other-secret-2", "BEE_API": "b-primary-3",
                "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer otel-4", "DB_PASSWORD": "undeclared-5",
                "PLAIN_SETTING": "plain-6"})
    [result] = stdio_calls(env, ("dump", {}))
    shown = result["content"][0]["text"]
    assert "AKEY_TOKEN=***" in shown and "PLAIN_SETTING=plain-6" in shown  # its own stay (masked as ever)
    for name in ("BKEY_TOKEN", "BEE_API", "OTEL_EXPORTER_OTLP_HEADERS", "DB_PASSWORD"):
        assert name not in shown
    shell = subprocess.run(["nexus", "skill", "run", "dump"], env=env, capture_output=True, text=True)
    assert shell.returncode == 0 and "BKEY_TOKEN=b-other-secret-2" in shell.stdout  # whoever has the shell has it


def test_a_secret_is_masked_before_the_output_is_cut_so_no_piece_of_it_shows(home):
    root, bindir, env = home
    secret = "abcdefghijklmnopqrstuvwxyz0123"
    make_tool(bindir, "leak", '#!/bin/sh\nprintf "%s" "$PAD$SHH_KEY"\nprintf "%s" "$PAD$SHH_KEY$DEPLOY_TOKEN" >&2\n')
    write_skill(root / "nexus" / "skills", "leak", "Leaks.", meta={
        "tool": "leak", "requires": {"env": ["SHH_KEY"]},
        "variables": [{"name": "DEPLOY_TOKEN", "description": "a deploy key"}, {"name": "PAD"}]})
    env["SHH_KEY"] = secret
    limit = 1000
    results = stdio_calls(env, *(("leak", {"variables": {"PAD": "x" * (limit - cut), "DEPLOY_TOKEN": "deploy-secret-77"}})
                                 for cut in (29, 15, 1)), argv=("--max-output", str(limit)))
    for result in results:
        text = json.dumps(result)
        assert not any(secret[:n] in text for n in range(6, len(secret) + 1)), text[-300:]
        assert "deploy-secret-77" not in text
    lines = [json.loads(line) for line in (root / "nexus" / "state" / "nexus" / "skills" / "leak" /
                                          "usage.log").read_text().splitlines()]
    assert len(lines) == 3 and "deploy-secret-77" not in json.dumps(lines)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the sweep reads /proc")
def test_what_a_server_killed_outright_left_running_is_killed_when_the_next_one_starts(home):
    root, bindir, env = home
    pids = root / "pids"
    make_tool(bindir, "spawn", f'#!/bin/sh\nsetsid sleep 600 </dev/null >/dev/null 2>&1 &\necho $! > "{pids}.setsid"\n'
                               f'sleep 600 &\necho $! > "{pids}.group"\nwait\n')
    write_skill(root / "nexus" / "skills", "spawn", "Spawns.", meta={"tool": "spawn"})
    stale = root / "nexus" / "state" / "nexus" / "mcp" / "sessions" / "mcp-20200101-000000-deadbeef"
    stale.mkdir(parents=True)
    server = subprocess.Popen(["nexus-mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=env, text=True)
    for line in ({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "spawn", "arguments": {}}}):
        server.stdin.write(json.dumps(line) + "\n")
        server.stdin.flush()
    assert wait_for(lambda: all(os.path.exists(f"{pids}.{k}") and open(f"{pids}.{k}").read().strip()
                                for k in ("setsid", "group")))
    assert not stale.exists()  # a session folder no live server claims is removed as a server starts
    # its spawn helper killed first: else, as the server dies, it kills all the tools left (test_mcp.py)
    with open(f"/proc/{server.pid}/task/{server.pid}/children") as f:
        [helper] = map(int, f.read().split())
    os.kill(helper, 9)
    server.kill()
    server.wait(30)
    left = [int(open(f"{pids}.{k}").read()) for k in ("setsid", "group")]
    try:
        time.sleep(1)
        assert alive(left[0])  # out of the tool's group: nothing left of that server could find it
        stdio_calls(env)  # the next server: it sweeps as it starts
        assert wait_for(lambda: not any(alive(pid) for pid in left), 10), left
    finally:
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)


def test_a_token_bound_to_a_profile_gets_instructions_and_discovery_of_its_profile_alone(tmp_path):
    served = Served(tmp_path)
    served.bin.mkdir()
    make_tool(served.bin, "say", '#!/bin/sh\necho "$*"\n')
    for name in ("say", "secret-deploy"):
        write_skill(served.home / "skills", name, f"Runs {name}.", meta={"tool": "say"})
    write_skill(served.home / "skills", "people", "For people.", meta={"tool": "say"},
                extra="disable-model-invocation: true\n")
    served.token("team")
    (served.home / "nexus.toml").write_text('[skills]\nallowBundled = []\n[profiles.narrow.skills]\nallow = ["say"]\n')
    served.token("narrow", "--profile", "narrow")
    with open(tmp_path / "server.err", "w") as err:
        served.process = subprocess.Popen(["nexus-mcp", "--http", "--port", "0", "--watch", "0", "--tools", "loader"],
                                          env=served.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=err)
    try:
        assert wait_for(lambda: "serving MCP at" in (tmp_path / "server.err").read_text(), 90)
        served.url = (tmp_path / "server.err").read_text().split("serving MCP at ")[1].split()[0]

        with httpx2.Client(timeout=30) as http:
            answer = http.post(served.url, headers={
                "Authorization": f"Bearer {served.tokens['narrow']}", "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json"}, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
            discover = http.post(served.url, headers={
                "Authorization": f"Bearer {served.tokens['narrow']}", "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json", "mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover"},
                json={"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {
                    "_meta": {"io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                              "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                              "io.modelcontextprotocol/clientCapabilities": {}}}})
        for text in (answer.text, discover.text):
            assert "say" in text and "secret-deploy" not in text, text[:600]

        async def hidden(client):  # a skill kept from models, by run_skill's name: a tool error, not a protocol one
            return await client.call_tool("run_skill", {"name": "people"})

        assert run(served, hidden, served.tokens["team"]).is_error
    finally:
        served.process.terminate()
        served.process.wait(10)
