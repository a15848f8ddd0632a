"""nexus-mcp (issues 16, 24): a tool call inside one session, tools/list with 1,000 skills, and what the
client is sent to read (the tools array and the instructions) in each tool mode at three catalogue sizes.

The client is a few lines of JSON-RPC over the server's pipes, newline-delimited as the stdio
transport defines, so the figures are the server's own: from writing a request to reading its
answer. It builds its own skills (its tool, true-tool, must be on the server's PATH).
"""

import json
import os
import shutil
import statistics
import subprocess
import time

from common import PYTHON_PASS, Row, spawn

CALLS, LISTS, STARTS = 200, 30, 7
CALL_TARGET_MS, LIST_TARGET_MS = 5.0, 50.0
# What tools/list sent before issue 24 (nexus-mcp at 67965f2, the same skills as tool_skills makes), in bytes
# of the tools array as the wire has it: the targets of each mode are measured against these.
BEFORE = {"bundled": 1629, 100: 46619, 1000: 452519}
LOADER_TOOLS, LOADER_INSTRUCTIONS = 16 * 1024, 2048  # the most bytes of tools, characters of instructions
# Of a tool, what hosts hand the model: its title and annotations are for the host and the person (they
# did not exist before issue 24, so BEFORE is all model's part too).
MODEL_READS = ("name", "description", "inputSchema")
START_TARGET = 25  # times python -c pass (issue 42; issue 24's 400 ms was about 26x)


class Client:
    """nexus-mcp as a subprocess, spoken to in JSON-RPC; initialized on start."""

    def __init__(self, env, *options):
        started = time.perf_counter()
        self.process = subprocess.Popen([shutil.which("nexus-mcp", path=env["PATH"]), *options], env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        _, self.initialized = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                          "clientInfo": {"name": "bench", "version": "1"}})
        self.start_ms = (time.perf_counter() - started) * 1000
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.started = started

    def send(self, message):
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method, params=None):
        """(milliseconds, result) of one request; notifications that come first are skipped."""
        self.next_id += 1
        started = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, **({"params": params} if params else {})})
        while True:
            answer = json.loads(self.process.stdout.readline())
            if answer.get("id") == self.next_id:
                break
        if "result" not in answer:
            raise SystemExit(f"bench_mcp: {method}: {answer}")
        return (time.perf_counter() - started) * 1000, answer["result"]

    def close(self):
        self.process.stdin.close()
        self.process.wait(30)


def environment(workdir):
    env = dict(os.environ, NEXUS_HOME=str(workdir / "nexus"), MANAGED_SKILLS_DIR=str(workdir / "managed"),
               HOME=str(workdir / "home"))
    env.pop("NEXUS_CONFIG", None)
    env.pop("NEXUS_SESSION_ID", None)
    bindir = workdir / "bin"
    bindir.mkdir(parents=True)
    (bindir / "true-tool").symlink_to(shutil.which("true"))
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    return env


def tool_skills(root, count):
    """`count` tool skills that run true-tool, with realistic frontmatter and instructions."""
    for i in range(count):
        folder = root / f"tool-{i:05d}"
        folder.mkdir(parents=True)
        meta = json.dumps({"nexus": {"emoji": "🔧", "tool": "true-tool", "os": ["linux", "darwin"]}}, ensure_ascii=False)
        (folder / "SKILL.md").write_text(
            f"---\nname: tool-{i:05d}\ndescription: Benchmark tool number {i}, which does a useful thing.\n"
            f"metadata: {meta}\n---\n# Tool {i}\n\n" + "Instructions.\n" * 40)


def spawn_ms(program):
    """Starting `program` and waiting for it, as the gateway does (its own process group): one time, in ms."""
    started = time.perf_counter()
    os.waitpid(os.posix_spawn(program, [program], os.environ, setpgroup=0), 0)
    return (time.perf_counter() - started) * 1000


def wire_bytes(value):
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def sizes(bench):
    """Rows: the bytes of the tools array and of the instructions (chars/4 as tokens) in each mode, for
    the bundled skills, 100 and 1,000 tool skills."""
    for size in ("bundled", 100, 1000):
        workdir = bench.scratch(f"mcp-sizes-{size}")
        env = environment(workdir)
        if size != "bundled":
            tool_skills(workdir / "nexus" / "skills", size)
        for mode in ("each", "loader", "auto"):
            client = Client(env, "--tools", mode, "--watch", "0")
            try:
                instructions = client.initialized["instructions"]
                _, listed = client.request("tools/list")
            finally:
                client.close()
            tools, text = wire_bytes(listed["tools"]), len(instructions.encode())
            where = "the bundled skills" if size == "bundled" else f"{size:,} tool skills"
            what = f"nexus-mcp --tools {mode}, {where}: tools, instructions"
            figure = f"{tools / 1024:.1f}+{text / 1024:.1f} KB"
            target, ok = "(reference)", True
            if mode == "loader" and size == 1000:
                target, ok = "<= 16 KB + 2,048 chars", tools <= LOADER_TOOLS and len(instructions) <= LOADER_INSTRUCTIONS
            elif mode == "each" and size == "bundled":
                target, ok = f"<= {BEFORE['bundled'] / 1024:.1f} KB", tools <= BEFORE["bundled"]
            yield Row(what + f" (~{(tools + text) // 4:,} tokens)", figure, None, target, ok)
            if mode == "each" and size == 100:
                read = wire_bytes([{key: t[key] for key in MODEL_READS if key in t} for t in listed["tools"]])
                yield Row("  of its tools, what a model reads (name, description, inputSchema)", f"{read / 1024:.1f} KB",
                          None, f"<= {0.6 * BEFORE[100] / 1024:.1f} KB", read <= 0.6 * BEFORE[100])


def start(env):
    """Rows: from starting nexus-mcp to its answer to initialize (given before the MCP SDK loads), and to
    its first tools/list (the SDK loaded), the medians of STARTS, each beside a run of `python -c pass`
    (the ratio: the median of their quotients)."""
    starts, ratios, lists = [], [], []
    for _ in range(STARTS):
        python_ms, _ = spawn(PYTHON_PASS, env)
        client = Client(env, "--watch", "0")
        client.request("tools/list")
        lists.append((time.perf_counter() - client.started) * 1000)
        client.close()
        starts.append(client.start_ms)
        ratios.append(client.start_ms / python_ms)
    started, ratio = statistics.median(starts), statistics.median(ratios)
    yield Row(f"nexus-mcp: start to initialized, median of {STARTS}", f"{started:.0f} ms", ratio,
              f"<= {START_TARGET}x", ratio <= START_TARGET)
    yield Row("  start to the first tools/list answered (the SDK loaded)", f"{statistics.median(lists):.0f} ms", None,
              "(reference)", True)


def rows(bench):
    yield from sizes(bench)
    workdir = bench.scratch("mcp")
    env = environment(workdir)
    tool_skills(workdir / "nexus" / "skills", 1)
    yield from start(env)
    client = Client(env)
    true = shutil.which("true")
    try:
        client.request("tools/call", {"name": "tool-00000", "arguments": {"args": ["hello"]}})  # verifies
        calls, spawns = [], []
        for _ in range(CALLS):  # side by side, so that both see the same machine
            calls.append(client.request("tools/call", {"name": "tool-00000", "arguments": {"args": ["hello", "world"]}}))
            spawns.append(spawn_ms(true))
    finally:
        client.close()
    ok = all(result["structuredContent"]["exit"] == 0 for _, result in calls)
    call_ms = statistics.median(ms for ms, _ in calls)
    yield Row(f"  starting /bin/true and waiting for it, median of {CALLS}", f"{statistics.median(spawns):.2f} ms",
              None, "(reference)", True)
    yield Row(f"nexus-mcp: tools/call of a tool wrapping /bin/true, median of {CALLS}", f"{call_ms:.2f} ms", None,
              f"<= {CALL_TARGET_MS:g} ms", ok and call_ms <= CALL_TARGET_MS)

    shutil.rmtree(workdir / "nexus" / "skills")
    tool_skills(workdir / "nexus" / "skills", 1000)
    for watch in ("2", "0"):  # the default: lists answered from the last look, at most 2 s old; 0: each looks afresh
        client = Client(env, "--tools", "each", "--watch", watch)  # a tool per skill (auto: the loader's three)
        try:
            first_ms, _ = client.request("tools/list")
            lists = [client.request("tools/list") for _ in range(LISTS)]
        finally:
            client.close()
        ok = all(sum(t["name"].startswith("tool-") for t in result["tools"]) == 1000 for _, result in lists)
        list_ms = statistics.median(ms for ms, _ in lists)
        if watch == "2":
            yield Row("nexus-mcp: tools/list, 1,000 tool skills, the first", f"{first_ms:.0f} ms", None, "(reference)",
                      True)
            yield Row(f"nexus-mcp: tools/list, 1,000 tool skills, median of {LISTS}", f"{list_ms:.1f} ms", None,
                      f"<= {LIST_TARGET_MS:g} ms", ok and list_ms <= LIST_TARGET_MS)
        else:
            yield Row("  the same with --watch 0, each list a fresh look", f"{list_ms:.1f} ms", None, "(reference)", ok)

    yield from published_pages(workdir, env)


def prompt_skills(root, count):
    """`count` prompt skills (published over the Skills extension), each with a file beside its SKILL.md."""
    for i in range(count):
        folder = root / f"guide-{i:05d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: guide-{i:05d}\ndescription: How to do thing {i}, step by "
                                         f"step.\nlicense: MIT\n---\n# Guide {i}\n\n" + "Instructions.\n" * 40)
        (folder / "notes.md").write_text("Notes.\n" * 20)


def published_pages(workdir, env):
    """A row: a page of skills/list (100 skills) with 1,000 published, each page publishing its own skills."""
    shutil.rmtree(workdir / "nexus" / "skills")
    prompt_skills(workdir / "nexus" / "skills", 1000)
    (workdir / "nexus" / "nexus.toml").write_text("[skills]\nallowBundled = []\n")  # these 1,000 alone
    client = Client(env, "--watch", "2")
    try:
        times, count = [], 0
        for look in range(3):  # the first pass hashes every file once; then pages as a client pages them
            cursor, first = None, look == 0
            while True:
                ms, result = client.request("skills/list", {"cursor": cursor} if cursor else {})
                count += len(result["skills"]) if first else 0
                times += [] if first else [ms]
                cursor = result.get("nextCursor")
                if not cursor:
                    break
    finally:
        client.close()
    page_ms = statistics.median(times)
    yield Row(f"nexus-mcp: skills/list, a page of 100 of 1,000 published skills, median of {len(times)}",
              f"{page_ms:.1f} ms", None, f"<= {LIST_TARGET_MS:g} ms", count == 1000 and page_ms <= LIST_TARGET_MS)
