"""The MCP server of `nexus-mcp`: the MCP Python SDK's low-level server on stdio, whose handlers run each
call through the gateway (gateway.call.Call) in a worker thread, so that calls run side by side and a
cancelled one can be killed. With lib/mcp/http.py (the same handlers over HTTP, a Nexus per session), the
only module that imports the SDK; lib/mcp/offer.py shapes the data.
"""

import base64
import contextlib
import copy
import importlib.util
import json
import os
import select
import signal
import stat
import sys
import threading
import time


def skip_package_inits(names):
    """Make each package importable without running its __init__: the SDK's `mcp` and `mcp.server` import
    its client, its high-level server (MCPServer) and more, which nexus-mcp never uses, for some 40% of
    the SDK's import time. Its submodules are then imported as usual. Where the SDK (a later version)
    needs what an __init__ sets, the packages are imported in full after all (see below)."""
    for name in names:
        if name not in sys.modules:
            sys.modules[name] = importlib.util.module_from_spec(importlib.util.find_spec(name))


skip_package_inits(("mcp", "mcp.server"))  # before the SDK's imports below, so they come after code
try:
    import mcp.server.lowlevel  # noqa: F401 (the module that needs the most of the SDK)
except ImportError:
    for loaded in [name for name in sys.modules if name == "mcp" or name.startswith("mcp.")]:
        del sys.modules[loaded]

import anyio
import anyio.to_thread
from mcp.server.caching import CacheHint
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import (InMemorySubscriptionBus, ListenHandler, PromptsListChanged, ResourcesListChanged,
                                      ToolsListChanged)
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import (INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError,
                       NotificationParams, PaginatedRequestParams, RequestParams, jsonrpc_message_adapter)
from mcp_types import methods as wire
from mcp_types.methods import CACHEABLE_METHODS
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from .. import __version__, config as configlib, style
from ..catalog import scope
from ..errors import NexusError, Refused, UsageError
from ..gateway import call as gateway, process
from ..usage import sessions, telemetry
from . import handshake, offer, skills, tokens

NOT_FOUND = "no skill '{}' here"  # a skill outside the profile served, or none: the same answer
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
# The 2026 revision has results say how long a client may cache them: not at all, the skills are live. Every
# method whose result the revision makes say it (resources/templates/list too: without them its answer is
# not a valid result), as the SDK names them.
UNCACHED = {method: CacheHint() for method in CACHEABLE_METHODS}


UNCACHED_FIELDS = {"ttlMs": 0, "cacheScope": "private"}  # the same, for the Skills extension's results
CHANGED = (("tools", ToolsListChanged(), "send_tool_list_changed"),  # what the watch tells a client of, and how
           ("prompts", PromptsListChanged(), "send_prompt_list_changed"),
           ("resources", ResourcesListChanged(), "send_resource_list_changed"))
WORKERS = 4  # threads for lists and reads, apart from the tool calls' own and the transport's


def serve(limit, watch, max_calls, tools, warn, opening=None):
    """Serve one client on stdin and stdout until it closes stdin: exit status 0. `opening`: what came on
    stdin before the SDK loaded (handshake.begin)."""
    from . import strays  # what a server killed outright left: swept as the next one starts

    nexus = Nexus(limit, watch, max_calls, tools, warn)
    nexus.me = strays.begin(warn)
    try:
        anyio.run(nexus.run, opening or handshake.Opening(tools))
    finally:
        strays.end(nexus.me)
    return 0


class Nexus:
    """The server's state for one connection: the catalogue, the session id, the calls in flight. A server
    of many connections (nexus-mcp --http) makes one for each (connection), sharing what is not the
    connection's own."""

    def __init__(self, limit, watch, max_calls, tools, warn):
        self.limit, self.watch, self.max_calls, self.warn_always = limit, watch, max_calls, warn
        self.mode = tools  # each, loader or auto (None: the config's mcp.tools); settled as the server starts
        self.warned = set()  # what was said: each list would say it again
        self.session = os.environ.get("NEXUS_SESSION_ID") or "mcp-" + sessions.new_id()
        self.agent = None  # the client program, as name/version: what initialize (or a 2026 request) says
        self.cwd = os.getcwd()
        self.catalog = offer.Catalog(warn)
        self.shelf = skills.Shelf()  # what the Skills extension publishes, and the digests of its files
        self.running = set()  # the tool calls in flight
        self.requests = {}  # the JSON-RPC id of each of them -> its Running
        self.checked = {}  # (protocol version, the tool's identity) -> the tool as sent, checked by the SDK once
        self.found = None  # (when, every skill with its status): the last look at the catalogue
        self.shown = {}  # tools, prompts, resources -> what the client was last shown of them (offer.signature)
        self.client = None  # the initialized client's session: where list_changed goes (the handshake's era)
        self.bus = None  # where list changes go to subscriptions/listen (the 2026-07-28 revision's)
        self.initialized = None  # an anyio.Event, set when the client is initialized (made in the event loop)
        self.token = None  # over HTTP: the name of the bearer token the connection came with
        self.token_calls = None  # over HTTP: the most calls a token runs at once (--calls-per-token)
        self.held = {}  # over HTTP, shared by every connection: a token's SHA-256 -> its calls in flight
        self.digest = None  # over HTTP: that token's SHA-256, which the session is bound to
        self.profile = None  # over HTTP: the profile of that token, served to this connection alone (scope.SERVED)
        self.folder = None  # over HTTP: the session's working folder, where its tool skills run
        self.remote = False  # over HTTP: resource URIs name no path of this machine
        self.problem = None  # what the watch's last look could not do, said once
        self.telemetry = None  # a usage.telemetry.Live when OpenTelemetry is turned on (start)
        self.me = None  # this server's id in its record of servers (lib/mcp/strays.py)

    async def run(self, opening):
        await self.start()
        wire, out = Wire(opening), Out(opening, self.warn)
        if opening.answered:  # in the mode that answer settled, with its instructions
            self.mode, instructions, self.catalog = opening.mode, opening.instructions, opening.catalog
        else:
            instructions = await self.work(self.settle_mode)
        server = self.server(instructions)
        options = server.create_initialization_options()
        self.warn(f"session {self.session}")
        async with stdio_server(stdin=wire, stdout=out) as (read, write), anyio.create_task_group() as tasks:
            tasks.start_soon(wire.answer, write)
            tasks.start_soon(self.stop_on_signals)
            if self.watch:
                tasks.start_soon(self.watch_catalogue)
            try:
                await server.run(read, write, options)
            finally:
                wire.close()
                out.close()
            await self.end_calls()  # the client is gone: what it left running is ended, and logged
            self.stop_telemetry()
            tasks.cancel_scope.cancel()

    def stop_telemetry(self):
        """Send the spans and metrics still batched."""
        if self.telemetry is not None:
            self.telemetry.shutdown()

    async def start(self):
        """What is made in the event loop: the limiters, the events; and OpenTelemetry, when it is turned on."""
        config = self.config()
        self.telemetry = telemetry.Live(config) if telemetry.wanted(config) else None
        self.initialized, self.bus = anyio.Event(), InMemorySubscriptionBus()
        # Threads of their own for tool calls (at most --max-calls) and for the other requests: anyio's
        # default limiter is the transport's, which reads stdin and writes stdout in threads too. Were the
        # calls to take its threads, cancels and the client's EOF would go unread (issue 23).
        self.calls, self.workers = anyio.CapacityLimiter(self.max_calls), anyio.CapacityLimiter(WORKERS)

    def server(self, instructions, of=None):
        """The SDK's Server, whose handlers are this Nexus's methods; of(ctx): the Nexus of the request's
        connection instead, for a server of many (nexus-mcp --http)."""

        def handler(name):
            if of is None:
                return getattr(self, name)

            async def routed(ctx, params):
                return await getattr(of(ctx), name)(ctx, params)
            return routed

        server = Announcing("nexus", version=__version__, instructions=instructions, cache_hints=UNCACHED,
                            on_list_tools=handler("list_tools"), on_call_tool=handler("call_tool"),
                            on_list_prompts=handler("list_prompts"), on_get_prompt=handler("get_prompt"),
                            on_list_resources=handler("list_resources"), on_read_resource=handler("read_resource"),
                            on_list_resource_templates=handler("list_resource_templates"),
                            on_subscriptions_listen=handler("listen"))
        server.extensions[skills.EXTENSION] = {"directoryRead": True}
        server.add_request_handler("skills/list", PaginatedRequestParams, handler("list_published"))
        server.add_request_handler("skills/get", SkillParams, handler("get_published"))
        server.add_request_handler("resources/directory/read", DirectoryParams, handler("read_directory"))
        server.add_notification_handler("notifications/initialized", NotificationParams, handler("on_initialized"))
        server.middleware.append(handler("remember_client"))
        server.middleware.append(handler("own_instructions"))
        server.middleware.append(handler("checked_tool_list"))
        return server

    def connection(self, session, **fields):
        """A Nexus for another connection to the same server (over HTTP, one serves many): the catalogue,
        the threads and the tools checked are shared; the session, its client, its calls and what it was
        shown are its own. `fields`: token, profile, folder."""
        other = copy.copy(self)
        other.session, other.agent, other.client, other.found = session, None, None, None
        other.running, other.shown, other.requests = set(), {}, {}
        other.initialized, other.bus = anyio.Event(), InMemorySubscriptionBus()
        other.__dict__.update(fields)
        return other

    async def listen(self, ctx, params):
        """subscriptions/listen: a client of the 2026 revision has no handshake; its listen is where changes go."""
        self.initialized.set()
        return await ListenHandler(self.bus)(ctx, params)

    def settle_mode(self):
        """each or loader, for the whole connection (auto: by the catalogue as it is now); the server's
        instructions for it."""
        self.mode = offer.settled_mode(self.mode, self.config(), self.records)
        return self.instructions()

    def instructions(self):
        """The server's instructions in the mode settled, for the profile in force (over HTTP, the token's)."""
        return offer.instructions_in(self.mode, self.records)

    # -- what every handler needs --------------------------------------------------------------

    def caller(self, exported=False):
        """Who calls, for the gateway (gateway.call.Caller): a model over stdio, or over HTTP with its token
        and its session's own folder (its profile is the one served: scope.SERVED); the session, the client."""
        return gateway.Caller(gateway.HTTP if self.remote else gateway.MCP, self.warn, session=self.session,
                              client=self.agent, token=self.token, folder=self.folder or self.cwd,
                              runs_there=bool(self.folder), asked=offer.ASKED, exported=exported)

    def served(self, function):
        """function, to run with this connection's profile in force (over HTTP: its token's; scope.SERVED)."""
        if self.profile is None:
            return function
        variable = scope.served_variable()

        def within():
            mark = variable.set(self.profile)
            try:
                return function()
            finally:
                variable.reset(mark)
        return within

    async def own_instructions(self, ctx, call_next):
        """initialize's and server/discover's instructions for this connection's profile: a server of many
        (nexus-mcp --http) made them once for all its skills, and the loader's name skills."""
        result = await call_next(ctx)
        if self.profile is None or ctx.method not in ("initialize", "server/discover"):
            return result
        text = await self.work(self.instructions)
        if isinstance(result, dict):
            return {**result, "instructions": text}
        return result.model_copy(update={"instructions": text}) if hasattr(result, "instructions") else result

    async def remember_client(self, ctx, call_next):
        """The client program's name and version, from initialize or, in the 2026 revision, the request's
        own envelope: logged with every call as `client`, so `nexus sessions` says which agent called."""
        found = ctx.session.client_params
        if found is not None and found.client_info is not None:
            info = found.client_info
            # made visible here: it reaches stderr, the log, `nexus sessions` and stats
            self.agent = style.visible("/".join(part for part in (info.name, info.version) if part))[:128] or None
        return await call_next(ctx)

    def warn(self, text):
        """A diagnostic on stderr, once."""
        if text not in self.warned:
            self.warned.add(text)
            self.warn_always(text)

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
        self.shown[kind] = offer.signature(kind, records, self.mode)
        return offer.tools_of(records) if kind == "tools" else offer.offered(records)

    # -- tools ---------------------------------------------------------------------------------

    async def list_tools(self, ctx, params):
        """tools/list as the SDK checks every result: for the 2026 protocol, and before initialize."""
        found = await self.work(lambda: [offer.tool(r, hints) for r, hints in self.skill_tools()])
        return offer.result(tools=(found if self.mode == "each" else [offer.RUN_SKILL_TOOL]) + list(offer.BUILTIN_TOOLS))

    def skill_tools(self):
        """(record, its annotations) of each offered tool or script skill: its tool in each mode."""
        config = self.config()
        return [(r, offer.hints(r, config)) for r in self.listed("tools")]

    async def checked_tool_list(self, ctx, call_next):
        """tools/list from tools the SDK checked (and shaped for the protocol version) once each, not on
        every list: checking 1,000 tools again costs the SDK some 50 ms. The SDK sends what a middleware
        returns as it is (Server.middleware, provisional in its 2.x: tests/test_mcp.py would notice a
        change); list_tools above answers where this does not: the 2026 protocol, or before initialize."""
        version = ctx.protocol_version
        if ctx.method != "tools/list" or version not in HANDSHAKE_PROTOCOL_VERSIONS or ctx.session.client_params is None:
            return await call_next(ctx)

        def tools():
            found = [self.checked_tool(version, (r["name"], r["sha256"], r["dir"], *sorted(hints.items())),
                                       lambda r=r, hints=hints: offer.tool(r, hints))
                     for r, hints in self.skill_tools()] if self.mode == "each" else [offer.RUN_SKILL_TOOL]
            return found + [self.checked_tool(version, (t["name"],), lambda t=t: t) for t in offer.BUILTIN_TOOLS]

        return {"tools": await self.work(tools)}

    def checked_tool(self, version, identity, make):
        key = (version, *identity)
        if key not in self.checked:
            self.checked[key] = wire.serialize_server_result("tools/list", version, {"tools": [make()]})["tools"][0]
        return self.checked[key]

    async def call_tool(self, ctx, params):
        name, arguments = params.name, params.arguments
        loaded = name == offer.RUN_SKILL
        if name == offer.LIST_SKILLS:
            return await self.work(lambda: self.skill_list(arguments))
        if name == offer.READ_SKILL:
            return await self.work(lambda: self.read_skill(arguments))
        if loaded:  # the loader's: run_skill(name, args, stdin, timeout) is the tool `name`
            arguments = dict(arguments or {})
            name = arguments.pop("name", None)
            if not isinstance(name, str):
                return offer.error_result(f"{offer.RUN_SKILL} needs name: the skill to run (see {offer.LIST_SKILLS})")
        busy = self.no_slot()
        if busy:
            return await self.work(lambda: self.refused_busy(name, arguments, busy))
        running = Running()
        self.running.add(running)
        if ctx.request_id is not None:
            self.requests[ctx.request_id] = running
        if self.digest:
            self.held[self.digest] = self.held.get(self.digest, 0) + 1
        try:
            return await in_thread(self.served(lambda: self.run_skill(name, arguments, running)), self.calls,
                                   running.cancel)
        except NexusError as e:
            if loaded:  # run_skill's own argument named a skill it may not have: a tool error
                return offer.error_result(f"{offer.RUN_SKILL}: {str(e).splitlines()[0]}")
            raise MCPError(INVALID_PARAMS, str(e)) from None
        except MCPError as e:
            if not loaded:
                raise
            return offer.error_result(f"{offer.RUN_SKILL}: {e.message}")  # its argument was off, not the tool
        finally:
            self.running.discard(running)
            if self.requests.get(ctx.request_id) is running:
                del self.requests[ctx.request_id]
            if self.digest:
                self.held[self.digest] -= 1
                if not self.held[self.digest]:
                    del self.held[self.digest]
            if self.telemetry is not None and running.call is not None and running.call.logged:
                self.telemetry.call(running.call.logged)  # onto the SDK's span of this tools/call

    def hidden(self, error, name):
        """What a client is told of an error about the skill `name`: its first line; but where a profile is
        in force, a skill outside it, or none (whose message may suggest names outside it), is only not found."""
        if (type(error) is NexusError or isinstance(error, Refused) and error.code == "scope") and (
                self.profile is not None or scope.chosen(self.config()) is not None):
            return NOT_FOUND.format(name)
        return str(error).splitlines()[0]

    def no_slot(self):
        """Why a tool call cannot start now (every slot of the server's, or of the caller's token, taken), or None."""
        if self.calls.borrowed_tokens >= self.calls.total_tokens:
            return (f"{self.max_calls} calls are running already, the most this server runs at once (nexus-mcp "
                    "--max-calls); call it again when one has ended")
        if self.digest and self.token_calls and self.held.get(self.digest, 0) >= self.token_calls:
            return (f"token {self.token} has {self.token_calls} calls running already, the most a token runs at "
                    "once (nexus-mcp --calls-per-token); call it again when one has ended")
        return None

    def refused_busy(self, name, arguments, why):
        """A tool error for a call that found no slot, logged as refused (busy) when the skill is one offered."""
        config, records = self.config(), self.records(self.watch)
        skill = offer.skill_named(records, name)
        if skill in {r["name"] for r in offer.tools_of(records)}:  # one this caller is offered: nothing else is told
            try:
                entry, args = self.catalog.entry(config, skill), offer.call_arguments(arguments)[0]
            except (NexusError, MCPError):
                entry = None
            if entry is not None:
                gateway.Call(entry, config, self.caller(), args).refuse(Refused("busy", why))
        return offer.error_result(f"{name}: not run: {why}")

    def run_skill(self, name, arguments, running):
        """What `nexus skill run NAME --json -- ARGS` does, the output captured up to the limit."""
        config = self.config()
        try:
            entry = self.catalog.entry(config, name)
        except NexusError as e:
            skill = offer.skill_named(self.records(self.watch), name)  # the ASCII tool of a Unicode name?
            if skill == name:
                raise MCPError(INVALID_PARAMS, f"Unknown tool '{name}': " + self.hidden(e, name)) from None
            entry = self.catalog.entry(config, skill)
        profile = scope.chosen(config)
        if profile is not None and not profile.admits(entry):  # logged as refused, answered as unknown
            with contextlib.suppress(Refused, UsageError):
                gateway.Call(entry, config, self.caller(), offer.call_arguments(arguments)[0]).admit()
            raise MCPError(INVALID_PARAMS, f"Unknown tool '{name}': " + NOT_FOUND.format(name))
        if entry["type"] not in ("tool", "script"):
            raise MCPError(INVALID_PARAMS, f"Unknown tool '{name}': a prompt skill; get it with prompts/get or "
                                           f"{offer.READ_SKILL}")
        try:
            args, stdin, timeout, given = offer.call_arguments(arguments)
        except UsageError as e:
            return offer.error_result(f"{name}: {e}")
        call = gateway.Call(entry, config, self.caller(exported=self.telemetry is not None), args, given)
        running.call = call
        try:
            call.admit()  # the gate, given this caller (a refusal is logged)
        except Refused as e:
            if e.unseen:  # a skill kept from models: to a model, no tool of that name
                raise
            return offer.error_result(f"{name}: not run: {e}")
        try:
            if self.token:
                tokens.spend(self.token)  # a token's --max-calls: spent on calls the gate lets through
        except Refused as e:
            call.refuse(e)
            return offer.error_result(f"{name}: not run: {e}")
        if running.cancelled:  # before anything ran: nothing to log
            return offer.error_result("cancelled")
        try:
            call.prepare(on_start=running.started)  # configured, verified on first use (a refusal is logged)
        except Refused as e:  # a tool error, which clients show the model: the reason and the setup step
            return offer.error_result(f"{name}: not run: {e}")
        except UsageError as e:  # a variable the skill does not declare
            return offer.error_result(f"{name}: {e}")
        if running.cancelled:
            return offer.error_result("cancelled")
        done = call.execute(capture=True, stdin=process.DEVNULL if stdin is None else stdin, timeout=timeout,
                            limit=self.limit, tee=False, on_start=running.started,
                            parent_death=True)  # never our stdin: the protocol's
        return offer.call_result(done, timeout, self.limit, call.output(done))

    def skill_list(self, arguments):
        records, config = self.records(), self.config()
        unpublished = {name: why for name, why in self.shelf.all(records, config).items() if isinstance(why, str)}
        return offer.skill_list(records, unpublished, arguments)

    def read_skill(self, arguments):
        arguments = arguments or {}
        name = arguments.get("name")
        if not isinstance(name, str) or set(arguments) - {"name", "variables"}:
            return offer.error_result(f"{offer.READ_SKILL} takes name (the skill's) and variables (an object)")
        try:
            given = offer.given_variables(arguments.get("variables"))
            _, text = offer.instructions(self.catalog, self.config(), name, self.caller(), given)
        except NexusError as e:
            return offer.error_result(self.hidden(e, name))
        return offer.result(content=[offer.text_content(text)])

    # -- prompts and resources -----------------------------------------------------------------

    async def list_prompts(self, ctx, params):
        """prompts/list, a page of skills at a time: each page costs its own skills."""
        return await self.paged("prompts", params, lambda shown: [offer.prompt(r) for r in shown])

    async def paged(self, kind, params, make):
        """The result of a list of `kind` (prompts, resources): make(skills) of one page of the skills it
        shows, from the request's cursor, and the next page's cursor."""
        def page():
            shown, cursor = skills.paged(self.listed(kind), params.cursor if params else None)
            return make(shown), cursor
        try:
            found, cursor = await self.work(page)
        except ValueError as e:
            raise MCPError(INVALID_PARAMS, str(e)) from None
        return offer.result(**{kind: found}, **({"nextCursor": cursor} if cursor else {}))

    async def get_prompt(self, ctx, params):
        try:
            entry, text = await self.work(
                lambda: offer.instructions(self.catalog, self.config(), params.name, self.caller(), params.arguments))
        except NexusError as e:
            raise MCPError(INVALID_PARAMS, self.hidden(e, params.name)) from None
        return offer.result(description=entry["description"],
                            messages=[{"role": "user", "content": offer.text_content(text)}])

    async def list_resources(self, ctx, params):
        """resources/list, a page of skills at a time: on stdio each skill's files by file:// URIs; over HTTP,
        where a client learns no path of this machine, the files of the published skills (as skills/get lists
        them) by their skill:// URIs, and nothing else."""
        if not self.remote:
            return await self.paged("resources", params, lambda shown: [
                offer.resource(r, path) for r in shown for path in offer.files(r, self.warn)])
        def published(shown):
            config = self.config()
            found = [p for p in (self.shelf.publish(r, config)[0] for r in shown) if p is not None]
            return [skills.resource(p, uri, whole=True) for p in found for uri in p.files]
        return await self.paged("resources", params, published)

    async def read_resource(self, ctx, params):
        if self.remote and not params.uri.startswith("skill://"):  # over HTTP, what is published alone
            raise MCPError(INVALID_PARAMS, f"No resource {params.uri}: over HTTP a resource is a published "
                                           "skill's file, skill://NAME/PATH")
        try:
            mime, data = await self.work(lambda: offer.read_resource(
                self.records(self.watch), self.config(), params.uri, self.limit, self.caller(), self.warn, self.shelf))
        except (NexusError, OSError) as e:
            raise MCPError(INVALID_PARAMS, str(e)) from None
        content = {"uri": params.uri, **({"mimeType": mime} if mime else {})}
        try:
            content["text"] = data.decode("utf-8")
        except UnicodeDecodeError:
            content["blob"] = base64.b64encode(data).decode("ascii")
        return offer.result(contents=[content])

    async def work(self, function):
        """function() in a worker thread: the lists and reads, whose threads no tool call takes."""
        return await in_thread(self.served(function), self.workers)

    async def list_resource_templates(self, ctx, params):
        return offer.result(resourceTemplates=[])

    # -- the Skills extension ------------------------------------------------------------------

    async def list_published(self, ctx, params):
        """skills/list: the published skills' entries, a page at a time."""
        try:
            found, cursor = await self.work(lambda: self.shelf.page(self.records(self.watch), self.config(), params.cursor))
        except ValueError as e:
            raise MCPError(INVALID_PARAMS, str(e)) from None
        return offer.result(skills=found, **({"nextCursor": cursor} if cursor else {}), **UNCACHED_FIELDS)

    async def get_published(self, ctx, params):
        """skills/get: one published skill's entry, by the URI of its SKILL.md."""
        try:
            found = await self.work(lambda: self.shelf.get(self.records(self.watch), self.config(), params.uri))
        except LookupError as e:
            raise MCPError(INVALID_PARAMS, str(e)) from None
        return offer.result(skill=found.entry, **UNCACHED_FIELDS)

    async def read_directory(self, ctx, params):
        """resources/directory/read: the direct children of a published skill's folder, a page at a time."""
        try:
            found, cursor = await self.work(lambda: self.shelf.directory(
                self.records(self.watch), self.config(), params.uri, params.cursor))
        except (LookupError, ValueError) as e:
            raise MCPError(INVALID_PARAMS, str(e)) from None
        # ttlMs and cacheScope: the extension's text does not ask for them here, but hosts (the MCP
        # Inspector 2.12) check them as on every other list of the 2026 revision
        return offer.result(resources=found, **({"nextCursor": cursor} if cursor else {}), **UNCACHED_FIELDS)

    # -- the connection ------------------------------------------------------------------------

    async def on_initialized(self, ctx, params):
        self.client = ctx.session
        self.initialized.set()

    async def watch_catalogue(self):
        """Every --watch seconds, a fresh look at the skills (look)."""
        await self.initialized.wait()
        while True:
            await self.look()
            await anyio.sleep(self.watch)

    async def look(self, records=None):
        """A fresh look at the skills (`records`: one just taken for another connection of the same profile);
        the client is told of each list that would now show other than what it was last shown: by a
        notification in the handshake's era, through subscriptions/listen in the 2026 revision's (the Skills
        extension's skill:// files are resources). A problem is said once. Returns the records, or None."""
        try:
            records = records or await self.work(self.records)
        except (NexusError, MCPError, OSError) as e:
            if str(e) != self.problem:
                self.warn(str(e))
            self.problem = str(e)
            return None
        self.problem = None
        for kind, event, send in CHANGED:
            now = offer.signature(kind, records, self.mode)
            if self.shown.get(kind, now) != now:
                self.shown[kind] = now
                if self.client is not None:
                    await getattr(self.client, send)()
                await self.bus.publish(event)
        return records

    def client_left(self, ident):
        """The client of an older revision closed the connection its call's answer was to come on: the call
        is cancelled (killed, logged so), as a cancel would, and its slot freed."""
        running = self.requests.get(ident)
        if running is not None:
            running.cancel()

    async def end_calls(self):
        """Kill the calls in flight and wait until each is logged: a worker thread is not waited for at exit."""
        for running in list(self.running):
            running.cancel()
        with anyio.CancelScope(shield=True):
            while self.running:
                await anyio.sleep(0.01)

    async def stop_on_signals(self):
        """SIGTERM, SIGHUP or SIGINT: kill the calls in flight, wait until each is logged, then end by
        that signal, as a Unix tool does."""
        with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
            async for signum in signals:
                break
        await self.end_calls()
        self.stop_telemetry()
        if self.me:
            from . import strays  # nothing of ours left to sweep

            strays.end(self.me)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


class Announcing(Server):
    """The SDK's Server, saying by default (as the HTTP transport asks it) that it tells of list changes."""

    def create_initialization_options(self, notification_options=None, *more, **named):
        return super().create_initialization_options(notification_options or NotificationOptions(True, True, True),
                                                     *more, **named)


class SkillParams(RequestParams):
    """skills/get's params."""

    uri: str


class DirectoryParams(PaginatedRequestParams):
    """resources/directory/read's params."""

    uri: str


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


async def in_thread(function, limiter, on_cancel=None):
    """function() in a worker thread of `limiter`'s. When the request is cancelled meanwhile, on_cancel()
    runs and the thread is waited for all the same (its outcome dropped)."""
    job = Job(function)
    try:
        return await anyio.to_thread.run_sync(job, abandon_on_cancel=True, limiter=limiter)
    except anyio.get_cancelled_exc_class():
        if job.call_off():
            if on_cancel:
                on_cancel()
            with anyio.CancelScope(shield=True):
                while not job.done.is_set():
                    await anyio.sleep(0.005)
        raise


class Wire:
    """The client's messages, from our stdin, for the SDK's stdio transport: the line that came before the SDK
    loaded first (handshake.Opening), then each line read in a thread of its own, so that nothing else can
    keep them unread, and checked first. A line that is not JSON, or not a JSON-RPC message, or a request
    whose params are not an object, is answered here with the JSON-RPC error for it (-32700, -32600,
    -32602), where the SDK would drop it in silence."""

    def __init__(self, opening):
        self.opening, self.file, self.first = opening, opening.file, opening.first
        self.reader = anyio.CapacityLimiter(1)
        self.errors, self.pending = anyio.create_memory_object_stream(64)

    def __aiter__(self):
        return self.lines()

    async def lines(self):
        while True:
            if self.first is not None:
                line, self.first = self.first, None
            else:
                line = await anyio.to_thread.run_sync(self.file.readline, abandon_on_cancel=True, limiter=self.reader)
            if not line:
                return
            if not line.strip():
                continue
            text = line.decode("utf-8", "replace")
            error = problem(text)
            if error is None:
                yield text
            else:
                await self.errors.send(error)

    async def answer(self, write):
        """Send the errors found in the client's lines, as they come."""
        async with self.pending:
            async for error in self.pending:
                try:
                    await write.send(SessionMessage(error))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    def close(self):
        self.opening.close()


class Out:
    """Our stdout, for the SDK's stdio transport, which writes each message whole, then flushes. As the
    transport does with the stream it claims, fd 1 points at stderr while we serve (what else would write
    there cannot reach the protocol's stream); the messages go to a private duplicate: at once where it is
    a pipe with room for them (no thread to wake, twice a message), else from a thread, so that a client slow
    to read never holds the event loop. The SDK's answer to an initialize answered before it loaded
    (handshake.begin) is not sent again: it is held to the one sent, and a difference said."""

    def __init__(self, opening, warn):
        import fcntl  # the server's own stdout only

        self.fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
        os.dup2(2, 1)
        self.pipe = stat.S_ISFIFO(os.fstat(self.fd).st_mode)
        self.held, self.warn = opening.answered, warn  # (id, result) of that initialize
        self.writer = anyio.CapacityLimiter(1)

    async def write(self, text):
        if self.held is not None and self.sent_already(text):
            return
        data = text.encode("utf-8", "surrogateescape")
        if self.pipe and len(data) <= select.PIPE_BUF and select.select([], [self.fd], [], 0)[1]:
            os.write(self.fd, data)  # a pipe with room takes at most PIPE_BUF bytes whole, at once
            return
        await anyio.to_thread.run_sync(self.write_all, data, limiter=self.writer)

    def write_all(self, data):
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]

    async def flush(self):
        pass  # every write is whole

    def sent_already(self, text):
        """Whether `text` is the SDK's answer to the initialize answered already (then said when it differs)."""
        try:
            message = json.loads(text)
        except ValueError:
            return False
        ident, result = self.held
        if not isinstance(message, dict) or message.get("id") != ident or not ({"result", "error"} & set(message)):
            return False
        self.held = None
        if message.get("result") != result:
            self.warn("the answer to initialize sent before the MCP SDK loaded differs from the SDK's, "
                      f"which is: {text.strip()[:1000]}")
        return True

    def close(self):
        """Point fd 1 at the client's stream again, as it was before we served."""
        os.dup2(self.fd, 1)


def problem(text):
    """The JSON-RPC error that answers a line the SDK would drop in silence; None for a good message."""
    try:
        message = json.loads(text)
    except RecursionError:  # nesting deeper than Python's stack: never a traceback that ends the server
        return rpc_error(None, PARSE_ERROR, "Parse error: nested too deeply")
    except ValueError as e:
        return rpc_error(None, PARSE_ERROR, f"Parse error: not JSON ({e})")
    ident = message.get("id") if isinstance(message, dict) else None
    if ident is not None and not (isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool))):
        # true, an object, a fraction or 1e400 (inf): the SDK would drop it unanswered
        return rpc_error(None, INVALID_REQUEST, "Invalid Request: an id is a string or an integer")
    if isinstance(message, dict) and "method" in message and not isinstance(message.get("params", {}), dict):
        # a notification is never answered, not even with an error
        return rpc_error(ident, INVALID_PARAMS, "Invalid params: params must be an object") if "id" in message else None
    try:
        jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValueError:
        if isinstance(message, dict) and "method" in message and "id" not in message:
            return None
        return rpc_error(ident, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
    return None


def rpc_error(ident, code, message):
    return JSONRPCError(jsonrpc="2.0", id=ident, error=ErrorData(code=code, message=message))
