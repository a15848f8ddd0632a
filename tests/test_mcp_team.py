"""nexus-mcp --http under strangers, floods and a leaked token (issue 38): raw sockets that never finish a
request, floods of refused requests, a token rotated under the same name, one token taking every slot, bad
JSON. One server for the module, started with few descriptors (as a busy host has them) and small shares,
driven by raw sockets and the MCP SDK's streamable-HTTP client, 127.0.0.1 only."""

import json
import os
import resource
import socket
import subprocess
import time

import pytest
from helpers import make_tool, wait_for, write_skill
from test_mcp_http import Served, run, session

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp", reason="the mcp extra is not installed")
pytest.importorskip("uvicorn", reason="the mcp extra is not installed")

import httpx2  # noqa: E402  (the MCP SDK's HTTP client)

pytestmark = [pytest.mark.once, pytest.mark.xdist_group("nexus-mcp-team")]

DESCRIPTORS = 256  # the server's RLIMIT_NOFILE: 300 idle sockets exhausted it before connections were bounded


def few_descriptors():
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTORS, DESCRIPTORS))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    served = Served(tmp_path_factory.mktemp("team"))
    served.bin.mkdir()
    (served.home / "skills").mkdir(parents=True)
    (served.home / "nexus.toml").write_text('[skills]\nallowBundled = []\n[profiles.narrow.skills]\nallow = ["say"]\n')
    make_tool(served.bin, "say", '#!/bin/sh\nprintf "%s\\n" "$*"\n')
    make_tool(served.bin, "nap", "#!/bin/sh\nsleep ${1:-30}\n")
    for name in ("say", "nap"):
        write_skill(served.home / "skills", name, f"Runs {name}.", meta={"tool": name})
    for name in ("team", "pair", "many", "other"):
        served.token(name)
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
