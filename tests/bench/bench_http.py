"""nexus-mcp --http under load (issue 31): 16 clients of the MCP SDK's streamable-HTTP client, each with a
session of its own and a bearer token, make 2,000 tool calls in all over loopback. Every call must be
answered and logged exactly once, and the server must hold no more descriptors afterwards than before;
the figures are calls a second and the p50 and p95 of a call's latency as a client sees it.

The clients share this process with the measuring (one event loop), so the figures include the SDK's own
client work: on a busy machine they say more about the machine than about nexus. tests/test_mcp_http.py
runs a small version (load) in `make test`.
"""

import json
import os
import shutil
import subprocess
import time

CLIENTS, CALLS = 16, 2000
IDLE, IDLE_P95_TARGET_MS = 300, 500  # idle sockets open while one client calls; its p95, at most
RATE_TARGET, P95_TARGET_MS = 100, 250  # calls a second, at least; a call's p95, at most


def load(url, token, clients, calls, skill="say"):
    """Run `calls` tool calls of `skill` from `clients` concurrent sessions: (answers as {arg: text},
    latencies in ms, seconds in all)."""
    import anyio
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    answers, latencies = {}, []

    async def client(n, count):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for i in range(count):
                        word = f"c{n}-{i}"
                        started = time.perf_counter()
                        result = await session.call_tool(skill, {"args": [word]})
                        latencies.append((time.perf_counter() - started) * 1000)
                        answers[word] = result.content[0].text if result.content else ""

    async def main():
        async with anyio.create_task_group() as tasks:
            for n in range(clients):
                tasks.start_soon(client, n, calls // clients + (n < calls % clients))

    started = time.perf_counter()
    anyio.run(main)
    return answers, latencies, time.perf_counter() - started


def idle_sockets(url, count):
    """`count` connections to the server that send nothing, or half a request's head, and stay open."""
    import socket

    port = int(url.split(":")[2].split("/")[0])
    found = []
    for n in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        if n % 2:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        found.append(sock)
    return found


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def rows(bench):
    from common import Row, bench_env  # the bench's own helpers: on its path when run.py runs it

    root = bench.scratch("http")
    (root / "bin").mkdir()
    (root / "bin" / "say").write_text('#!/bin/sh\nprintf "%s\\n" "$*"\n')
    (root / "bin" / "say").chmod(0o755)
    skill = root / "nexus" / "skills" / "say"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text('---\nname: say\ndescription: Say the words.\nmetadata: {"nexus": {"tool": "say"}}'
                                    "\n---\n# say\n")
    (root / "nexus" / "nexus.toml").write_text("[skills]\nallowBundled = []\n")
    env = bench_env(root)
    nexus = shutil.which("nexus", path=env["PATH"])
    token = subprocess.run([nexus, "mcp", "token", "add", "bench"], env=env, capture_output=True, text=True,
                           check=True).stdout.strip()
    with open(root / "server.err", "w+") as err:
        server = subprocess.Popen([shutil.which("nexus-mcp", path=env["PATH"]), "--http", "--port", "0", "--watch", "0",
                                   "--calls-per-token", str(CLIENTS)],  # one token for every client here
                                  env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + 30
            while "serving MCP at" not in (root / "server.err").read_text() and time.monotonic() < deadline:
                time.sleep(0.05)
            url = (root / "server.err").read_text().split("serving MCP at ")[1].split()[0]
            fds = len(os.listdir(f"/proc/{server.pid}/fd"))
            answers, latencies, seconds = load(url, token, CLIENTS, CALLS)
            time.sleep(1)
            left = len(os.listdir(f"/proc/{server.pid}/fd")) - fds
            log = root / "nexus" / "state" / "nexus" / "skills" / "say" / "usage.log"
            logged = [json.loads(line)["args"][0] for line in log.read_text().splitlines()]
            idle = idle_sockets(url, IDLE)
            try:
                besieged = load(url, token, 1, 50)[1]
            finally:
                for sock in idle:
                    sock.close()
        finally:
            server.terminate()
            server.wait(30)
    right = len(answers) == CALLS and all(text == f"{word}\n" for word, text in answers.items())
    once = sorted(logged) == sorted(answers)
    rate = CALLS / seconds
    yield Row(f"nexus-mcp --http, {CLIENTS} x {CALLS:,} calls: answered/logged once/fds left",
              f"{len(answers)}/{len(logged)}/{left}", None, f"{CALLS}/{CALLS}/<=0", right and once and left <= 0)
    yield Row("nexus-mcp --http: calls a second under that load", f"{rate:.0f}/s", None, f">= {RATE_TARGET}/s",
              rate >= RATE_TARGET)
    p50, p95 = percentile(latencies, 0.5), percentile(latencies, 0.95)
    yield Row("nexus-mcp --http: a tool call under that load, p50 / p95", f"{p50:.0f}/{p95:.0f} ms", None,
              f"p95 <= {P95_TARGET_MS} ms", p95 <= P95_TARGET_MS)
    p95 = percentile(besieged, 0.95)
    yield Row(f"nexus-mcp --http: a valid client's call with {IDLE} idle sockets open, p95", f"{p95:.0f} ms", None,
              f"p95 <= {IDLE_P95_TARGET_MS} ms", len(besieged) == 50 and p95 <= IDLE_P95_TARGET_MS)
