"""The MCP server of `nexus-mcp`: the MCP Python SDK's low-level server on stdio, whose handlers run each
call through the gateway (gateway.run.Call) in a worker thread, so that calls run side by side and a
cancelled one can be killed. The only module that imports the SDK; lib/mcp/offer.py shapes the data.
"""

import base64
import os
import signal
import threading
import time

import anyio
import anyio.to_thread
from mcp.server.caching import CacheHint
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, NotificationParams
from mcp_types import methods as wire
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from .. import __version__, config as configlib
from ..errors import NexusError, UsageError
from ..gateway import process, run as gateway
from ..usage import sessions
from . import offer

INSTRUCTIONS = """\
These tools are the skills that are ready on this machine; each runs one program through the nexus
gateway, with its arguments in `args` (no shell), and answers with its stdout, its stderr and its exit
status (structured: exit, stdout, stderr, ms, truncated, timedOut). read_skill, or the prompt named
after a skill, gives its instructions; a skill's files are resources. list_skills names every skill,
ready or not, with what one that is not ready needs. Every call is logged."""

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
# The 2026 revision has results say how long a client may cache them: not at all, the skills are live.
UNCACHED = {method: CacheHint() for method in ("tools/list", "prompts/list", "resources/list", "resources/read")}


def serve(limit, watch, warn):
    """Serve one client on stdin and stdout until it closes stdin: exit status 0."""
    anyio.run(Nexus(limit, watch, warn).run)
    return 0


class Nexus:
    """The server's state for its one connection: the catalogue, the session id, the calls in flight."""

    def __init__(self, limit, watch, warn):
        self.limit, self.watch, self.warn = limit, watch, warn
        self.session = os.environ.get("NEXUS_SESSION_ID") or "mcp-" + sessions.new_id()
        self.cwd = os.getcwd()
        self.catalog = offer.Catalog(warn)
        self.running = set()  # the tool calls in flight
        self.checked = {}  # (protocol version, the tool's identity) -> the tool as sent, checked by the SDK once
        self.found = None  # (when, every skill with its status): the last look at the catalogue
        self.shown = {}  # tools, prompts, resources -> what the client was last shown of them (offer.signature)
        self.client = None  # the initialized client's session: where list_changed goes
        self.initialized = None  # an anyio.Event, set when the client is initialized (made in the event loop)

    async def run(self):
        self.initialized = anyio.Event()
        server = Server("nexus", version=__version__, instructions=INSTRUCTIONS, cache_hints=UNCACHED,
                        on_list_tools=self.list_tools, on_call_tool=self.call_tool,
                        on_list_prompts=self.list_prompts, on_get_prompt=self.get_prompt,
                        on_list_resources=self.list_resources, on_read_resource=self.read_resource)
        server.add_notification_handler("notifications/initialized", NotificationParams, self.on_initialized)
        server.middleware.append(self.checked_tool_list)
        options = server.create_initialization_options(NotificationOptions(True, True, True))
        self.warn(f"session {self.session}")
        async with stdio_server() as (read, write), anyio.create_task_group() as tasks:
            tasks.start_soon(self.stop_on_signals)
            if self.watch:
                tasks.start_soon(self.watch_catalogue)
            await server.run(read, write, options)
            tasks.cancel_scope.cancel()

    # -- what every handler needs --------------------------------------------------------------

    def config(self):
        try:
            return configlib.load()
        except NexusError as e:
            raise MCPError(INTERNAL_ERROR, str(e)) from None

    def records(self, max_age=0):
        """Every skill with its status; those found at most `max_age` seconds ago will do. The lists are
        answered so (evaluating 1,000 skills takes longer than answering): never more out of date than
        the watch, which looks every --watch seconds and tells the client what changed."""
        now = time.monotonic()
        if self.found is not None and now - self.found[0] <= max_age:
            return self.found[1]
        records = self.catalog.records(self.config())
        self.found = (now, records)
        return records

    def listed(self, kind):
        """The skills a list of `kind` (tools, prompts, resources) shows; what it shows is kept, so that
        the watch can tell the client when that changes."""
        records = self.records(self.watch)
        self.shown[kind] = offer.signature(kind, records)
        return [r for r in records if offer.is_tool(r)] if kind == "tools" else offer.ready(records)

    # -- tools ---------------------------------------------------------------------------------

    async def list_tools(self, ctx, params):
        """tools/list as the SDK checks every result: for the 2026 protocol, and before initialize."""
        found = await in_thread(lambda: [offer.tool(r) for r in self.listed("tools")])
        return offer.result(tools=found + list(offer.BUILTIN_TOOLS))

    async def checked_tool_list(self, ctx, call_next):
        """tools/list from tools the SDK checked (and shaped for the protocol version) once each, not on
        every list: checking 1,000 tools again costs the SDK some 50 ms. The SDK sends what a middleware
        returns as it is (Server.middleware, provisional in its 2.x: tests/test_mcp.py would notice a
        change); list_tools above answers where this does not: the 2026 protocol, or before initialize."""
        version = ctx.protocol_version
        if ctx.method != "tools/list" or version not in HANDSHAKE_PROTOCOL_VERSIONS or ctx.session.client_params is None:
            return await call_next(ctx)

        def tools():
            found = [self.checked_tool(version, (r["name"], r["sha256"], r["dir"]), lambda r=r: offer.tool(r))
                     for r in self.listed("tools")]
            return found + [self.checked_tool(version, (t["name"],), lambda t=t: t) for t in offer.BUILTIN_TOOLS]

        return {"tools": await in_thread(tools)}

    def checked_tool(self, version, identity, make):
        key = (version, *identity)
        if key not in self.checked:
            self.checked[key] = wire.serialize_server_result("tools/list", version, {"tools": [make()]})["tools"][0]
        return self.checked[key]

    async def call_tool(self, ctx, params):
        name, arguments = params.name, params.arguments
        if name == offer.LIST_SKILLS:
            return await in_thread(lambda: offer.skill_list(self.records()))
        if name == offer.READ_SKILL:
            return await in_thread(lambda: self.read_skill(arguments))
        running = Running()
        self.running.add(running)
        try:
            return await in_thread(lambda: self.run_skill(name, arguments, running), running.cancel)
        except NexusError as e:
            raise MCPError(INVALID_PARAMS, str(e)) from None
        finally:
            self.running.discard(running)

    def run_skill(self, name, arguments, running):
        """What `nexus skill run NAME --json -- ARGS` does, the output captured up to the limit."""
        config = self.config()
        try:
            entry = self.catalog.entry(config, name)
        except NexusError as e:
            raise MCPError(INVALID_PARAMS, f"Unknown tool '{name}': {str(e).splitlines()[0]}") from None
        if entry["type"] not in ("tool", "script"):
            raise MCPError(INVALID_PARAMS, f"Unknown tool '{name}': a prompt skill; get it with prompts/get or "
                                           f"{offer.READ_SKILL}")
        try:
            args, stdin, timeout = offer.call_arguments(arguments)
        except UsageError as e:
            return offer.error_result(f"{name}: {e}")
        call = gateway.Call(entry, config, args, self.warn, session=self.session)
        call.env["NEXUS_CALLER_CWD"] = self.cwd
        call.prepare()  # gated (a refusal is logged), configured, verified on first use
        running.call = call
        if running.cancelled:  # before its program started: nothing ran, nothing to log
            return offer.error_result("cancelled")
        done = call.execute(capture=True, stdin=process.DEVNULL if stdin is None else stdin, timeout=timeout,
                            limit=self.limit, tee=False, on_start=running.started)  # never our stdin: the protocol's
        return offer.call_result(done, timeout, self.limit, call.masked)

    def read_skill(self, arguments):
        arguments = arguments or {}
        name = arguments.get("name")
        if not isinstance(name, str) or set(arguments) != {"name"}:
            return offer.error_result(f"{offer.READ_SKILL} takes one argument, name: the skill's name")
        try:
            _, text = offer.instructions(self.catalog, self.config(), name, self.session, self.warn)
        except NexusError as e:
            return offer.error_result(str(e).splitlines()[0])
        return offer.result(content=[offer.text_content(text)])

    # -- prompts and resources -----------------------------------------------------------------

    async def list_prompts(self, ctx, params):
        return offer.result(prompts=await in_thread(lambda: [offer.prompt(r) for r in self.listed("prompts")]))

    async def get_prompt(self, ctx, params):
        try:
            entry, text = await in_thread(
                lambda: offer.instructions(self.catalog, self.config(), params.name, self.session, self.warn))
        except NexusError as e:
            raise MCPError(INVALID_PARAMS, str(e).splitlines()[0]) from None
        return offer.result(description=entry["description"],
                            messages=[{"role": "user", "content": offer.text_content(text)}])

    async def list_resources(self, ctx, params):
        return offer.result(resources=await in_thread(
            lambda: [offer.resource(r, path) for r in self.listed("resources") for path in offer.files(r)]))

    async def read_resource(self, ctx, params):
        try:
            mime, data = await in_thread(lambda: offer.read_resource(
                self.records(self.watch), self.config(), params.uri, self.limit, self.session, self.warn))
        except (NexusError, OSError) as e:
            raise MCPError(INVALID_PARAMS, str(e)) from None
        content = {"uri": params.uri, **({"mimeType": mime} if mime else {})}
        try:
            content["text"] = data.decode("utf-8")
        except UnicodeDecodeError:
            content["blob"] = base64.b64encode(data).decode("ascii")
        return offer.result(contents=[content])

    # -- the connection ------------------------------------------------------------------------

    async def on_initialized(self, ctx, params):
        self.client = ctx.session
        self.initialized.set()

    async def watch_catalogue(self):
        """Every --watch seconds, a fresh look at the skills; the client is told of each list that would
        now show other than what it was last shown."""
        await self.initialized.wait()
        changed = (("tools", self.client.send_tool_list_changed), ("prompts", self.client.send_prompt_list_changed),
                   ("resources", self.client.send_resource_list_changed))
        problem = None
        while True:
            try:
                records = await in_thread(self.records)
            except (NexusError, MCPError, OSError) as e:
                if str(e) != problem:
                    self.warn(str(e))
                problem = str(e)
            else:
                problem = None
                for kind, send in changed:
                    now = offer.signature(kind, records)
                    if self.shown.get(kind, now) != now:
                        self.shown[kind] = now
                        await send()
            await anyio.sleep(self.watch)

    async def stop_on_signals(self):
        """SIGTERM, SIGHUP or SIGINT: kill the calls in flight, wait until each is logged, then end by
        that signal, as a Unix tool does."""
        with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
            async for signum in signals:
                break
        for running in list(self.running):
            running.cancel()
        while self.running:
            await anyio.sleep(0.01)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


class Running:
    """A tool call in flight, which the event loop may cancel while a worker thread runs it."""

    def __init__(self):
        self.call, self.children, self.cancelled = None, [], False

    def started(self, child):
        self.children.append(child)
        if self.cancelled:
            child.kill()

    def cancel(self):
        self.cancelled = True
        if self.call is not None:
            self.call.cancelled = True
        for child in self.children:
            if child.status is None:  # not reaped yet, so its process group id is still its own
                child.kill()  # the whole group


class Job:
    """A function for a worker thread that a cancelled request either calls off, when it has not
    started yet, or waits for, so that what it does (a call killed, then logged) is done."""

    def __init__(self, function):
        self.function, self.lock, self.state, self.done = function, threading.Lock(), "waiting", threading.Event()

    def __call__(self):
        with self.lock:
            if self.state == "called off":
                return None
            self.state = "running"
        try:
            return self.function()
        finally:
            self.done.set()

    def call_off(self):
        """True when it had started already, and is to be waited for."""
        with self.lock:
            started, self.state = self.state == "running", "called off" if self.state == "waiting" else self.state
            return started


async def in_thread(function, on_cancel=None):
    """function() in a worker thread. When the request is cancelled meanwhile, on_cancel() runs and the
    thread is waited for all the same (its outcome dropped)."""
    job = Job(function)
    try:
        return await anyio.to_thread.run_sync(job, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        if job.call_off():
            if on_cancel:
                on_cancel()
            with anyio.CancelScope(shield=True):
                while not job.done.is_set():
                    await anyio.sleep(0.005)
        raise
