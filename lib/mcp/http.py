"""`nexus-mcp --http`: the same server (lib/mcp/server.py) over MCP's streamable HTTP transport, the SDK's,
run by uvicorn: many sessions in one process, each a server.Nexus of its own (its session id, client,
calls, token and profile) sharing the catalogue and the threads.

In front of the SDK's app stands the Gate: a browser's foreign Origin is refused (403), so is a Host that
is not this loopback address (421: DNS rebinding), then a request without a usable bearer token gets
401 and nothing else, and is written to the auth log. A token's name rides on the request (as the SDK's
AuthenticatedUser, which also binds each session to the token that opened it) to the session's Nexus,
which logs it with every call and serves the token's profile.
"""

import contextlib
import shutil
import signal
import socket
import time

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings

from .. import fastjson, fileio, paths, schema, style
from ..errors import NexusError
from ..state import usage_log
from ..usage import sessions
from . import server as mcpserver, strays, tokens

PATH = "/mcp"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
POLICE_SECONDS = 1  # how soon a revoked or expired token's live sessions are ended
TOKEN_KEY = "nexus.token"  # where the Gate leaves the token's name in the request's ASGI scope
DIGEST_KEY = "nexus.digest"  # and the token's SHA-256: what a session is bound to (a name outlives a rotation)
WATCHED_BYTES = 1024 * 1024  # a POST of a session up to this size is read first, for the id of the call it is
HEAD_SECONDS = 10  # a connection that has not sent a request's whole head by then is closed
KEEP_ALIVE_SECONDS = 5  # an idle keep-alive connection is closed after this (uvicorn's own default, never more)
AUTH_LOG_BYTES = 1024 * 1024  # auth.log is pruned (usage_log.prune) past this
PATH_CHARS = 200  # of a refused request's path in auth.log


def serve(limit, watch, max_calls, tools, warn, host, port, no_auth, certfile=None, keyfile=None, origins=(),
          shares=None):
    """Serve over HTTP on host:port until a signal ends it. shares: Shares, each client's fair share."""
    import uvicorn  # the HTTP server: only when serving over HTTP

    store = tokens.Store()
    tokens.check_door(host, no_auth, certfile, keyfile, store)
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)  # before "serving MCP at": a client that reads it may connect before uvicorn starts
    except OSError as e:
        sock.close()
        raise NexusError(f"cannot listen on {host}:{port}: {e.strerror}") from None
    bound = sock.getsockname()[1]
    shares = shares or Shares()
    hub = Hub(mcpserver.Nexus(limit, watch, max_calls, tools, warn), store, warn)
    hub.base.me = strays.begin(warn)
    hub.base.token_calls = shares.calls
    gate = Gate(hub.app(), store, hub.refused, not no_auth, host, origins, hub.sessions_of, shares.sessions, bound)
    hub.gate, gate.left = gate, hub.client_left
    # proxy_headers off: an X-Forwarded-For from anyone would otherwise name the address auth.log records
    config = uvicorn.Config(gate, log_level="warning", access_log=False, lifespan="on", ssl_certfile=certfile,
                            ssl_keyfile=keyfile, timeout_graceful_shutdown=5, proxy_headers=False,
                            timeout_keep_alive=KEEP_ALIVE_SECONDS, ws="none",
                            http=guarded_protocol(shares.connections, hub.refused_connection))
    scheme = "https" if certfile else "http"
    name = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
    if not certfile and not tokens.loopback(host):
        warn(f"tokens travel in plain text to {host}: anyone on the way can read and use one; serve HTTPS "
             "(--certfile, --keyfile) or behind a proxy that terminates TLS")
    warn(f"serving MCP at {scheme}://{name}:{bound}{PATH}" + (" (no token needed: --no-auth)" if no_auth else ""))
    ending_on_sighup(config).run(sockets=[sock])
    return 0


class Shares:
    """What one client may hold of the server: connections an address (open at once), sessions and tool calls
    in flight a token."""

    def __init__(self, connections=64, sessions=32, calls=8):
        self.connections, self.sessions, self.calls = connections, sessions, calls


def guarded_protocol(per_address, refused):
    """uvicorn's h11 protocol, bounded: a connection must send a request's whole head within HEAD_SECONDS
    of being ready for one (opened, or its last response sent), and an address holds at most `per_address`
    connections. A new connection past that closes the oldest idle one of its address (no request in
    flight: one that sends nothing, or half a head), so idle sockets never keep a client out; when none is
    idle it is answered 503 and closed, and refused(address, why) is told. A response in flight (an SSE or
    listen stream) is never timed out."""
    import h11  # the HTTP server: only when serving over HTTP
    from uvicorn.protocols.http.h11_impl import H11Protocol

    by_address = {}  # the client's address -> its open connections, the oldest first

    class Guarded(H11Protocol):
        def connection_made(self, transport):
            super().connection_made(transport)
            self.deadline, self.address = None, (self.client or ("?",))[0]
            mine = by_address.setdefault(self.address, [])
            if len(mine) >= per_address:
                idle = next((other for other in mine if other.idle()), None)
                if idle is None:
                    refused(self.address, f"more than {per_address} connections from {self.address} "
                                          "(nexus-mcp --max-connections)")
                    transport.write(b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n"
                                    b"connection: close\r\ncontent-length: 21\r\n\r\ntoo many connections\n")
                    self.address = None
                    transport.close()
                    return
                idle.drop()
            mine.append(self)
            self.watch()

        def connection_lost(self, exc):
            self.disarm()
            mine = by_address.get(self.address)
            if mine is not None and self in mine:
                mine.remove(self)
                if not mine:
                    del by_address[self.address]
            super().connection_lost(exc)

        def data_received(self, data):
            super().data_received(data)
            self.watch()

        def on_response_complete(self):
            super().on_response_complete()
            self.watch()

        def idle(self):
            """True between requests: nothing in flight, the next request's head not (all) here."""
            return self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)

        def watch(self):
            if self.transport.is_closing() or not self.idle():
                self.disarm()
            elif self.deadline is None:
                self.deadline = self.loop.call_later(HEAD_SECONDS, self.late)

        def disarm(self):
            if self.deadline is not None:
                self.deadline.cancel()
                self.deadline = None

        def late(self):
            self.deadline = None
            if self.idle():
                self.drop()

        def drop(self):
            """Close an idle connection (as uvicorn's keep-alive timeout does)."""
            self.disarm()
            if not self.transport.is_closing():
                with contextlib.suppress(h11.LocalProtocolError):
                    self.conn.send(h11.ConnectionClosed())
                self.transport.close()
            mine = by_address.get(self.address)
            if mine is not None and self in mine:
                mine.remove(self)  # at once: the connection that closed it takes its place

    return Guarded


def ending_on_sighup(config):
    """uvicorn's server, which ends on SIGHUP too, as nexus-mcp on stdio does: the calls in flight ended and
    logged, then the process ends by the signal (uvicorn raises it again once it has shut down)."""
    import uvicorn  # the HTTP server: only when serving over HTTP

    class Served(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            with super().capture_signals():
                previous = signal.signal(signal.SIGHUP, self.handle_exit)
                try:
                    yield
                finally:
                    signal.signal(signal.SIGHUP, previous)

    return Served(config)


class Hub:
    """The sessions of one HTTP server: a Nexus for each connection, made on its first request."""

    def __init__(self, base, store, warn):
        self.base, self.store, self.warn = base, store, warn
        self.live = {}  # the MCP session id (the 2026 revision's requests have none: the token's digest) -> its Nexus
        self.manager = self.gate = None
        self.quiet = {}  # an address -> (the second of its last auth.log line, the refusals left out since)

    def app(self):
        """The SDK's Starlette app for the streamable HTTP transport, our tasks in its lifespan."""
        self.server = self.base.server(None, of=self.of)
        self.server.lifespan = self.lifespan
        # The Gate checks Host and Origin itself (the SDK checks them only on its own loopback defaults).
        app = self.server.streamable_http_app(streamable_http_path=PATH, transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=False))
        self.manager = self.server.session_manager
        return app

    @contextlib.asynccontextmanager
    async def lifespan(self, server):
        """While the server serves: the police and the watch; then every session ended, telemetry sent."""
        await self.base.start()
        server.instructions = await self.base.work(self.base.settle_mode)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self.police)
                if self.base.watch:
                    tasks.start_soon(self.watch)
                yield {}
                tasks.cancel_scope.cancel()
        finally:
            for key, nexus in list(self.live.items()):
                await self.ended(key, nexus)
            self.base.stop_telemetry()
            strays.end(self.base.me)

    def of(self, ctx):
        """The Nexus of a request's connection: made on its first request, ended with it."""
        connection = ctx.session._connection  # the SDK's per-connection state (its Context exposes it: a 2.x detail)
        nexus = connection.state.get("nexus")
        if nexus is not None:
            return nexus
        request = ctx.request
        token = request.scope.get(TOKEN_KEY) if request is not None else None
        digest = request.scope.get(DIGEST_KEY) if request is not None else None
        key = connection.session_id or ("token", digest)
        nexus = self.live.get(key)
        if nexus is None:
            session = "mcp-" + sessions.new_id()
            nexus = self.base.connection(session, token=token, digest=digest,
                                         profile=self.store.profile(token) if token else None,
                                         folder=paths.session_folder(session), remote=True)
            self.live[key] = nexus
            strays.session(self.base.me, session)  # its folder is removed at the next start if we die
            if connection.session_id:
                connection.exit_stack.push_async_callback(self.ended, key, nexus)
            self.warn(f"session {session}" + (f" (token {token})" if token else ""))
        connection.state["nexus"] = nexus
        return nexus

    async def ended(self, key, nexus):
        """A session ended (the client's DELETE, idle, revoked, the server stopping): its calls ended and
        logged, its working folder removed."""
        if self.live.pop(key, None) is not None:
            strays.session(self.base.me, nexus.session, open_=False)
        await nexus.end_calls()
        shutil.rmtree(nexus.folder, ignore_errors=True)

    async def police(self):
        """End the live sessions of a token revoked, expired or rotated (a token of the same name is another
        token), the calls they run and the requests in flight with it (a listen stream too)."""
        while True:
            await anyio.sleep(POLICE_SECONDS)
            for key, nexus in list(self.live.items()):
                if nexus.digest and not self.store.valid_digest(nexus.digest):
                    self.warn(f"session {nexus.session} ended: token {nexus.token} was revoked, expired or replaced")
                    await self.ended(key, nexus)
            owners = self.manager._session_owners if self.manager is not None else {}  # a 2.x detail
            for session_id, owner in list(owners.items()):
                if owner.get("subject") and not self.store.valid_digest(owner["subject"]):
                    transport = self.manager._server_instances.get(session_id)
                    if transport is not None:
                        await self.manager._discard_session(session_id, transport)
            self.gate.end_flights(lambda digest: not self.store.valid_digest(digest))

    def client_left(self, session_id, ident):
        nexus = self.live.get(session_id)
        if nexus is not None:
            nexus.client_left(ident)

    def sessions_of(self, digest):
        """How many sessions the token of this SHA-256 has open."""
        owners = self.manager._session_owners if self.manager is not None else {}  # a 2.x detail
        return sum(1 for owner in list(owners.values()) if owner.get("subject") == digest)

    async def watch(self):
        """Every --watch seconds, each initialized session takes a fresh look at the skills (Nexus.look): one
        look a profile, whatever the number of its sessions."""
        while True:
            await anyio.sleep(self.base.watch)
            looked = {}
            for nexus in list(self.live.values()):
                if nexus.initialized.is_set():
                    try:
                        looked[nexus.profile] = await nexus.look(looked.get(nexus.profile))
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        pass  # a client gone meanwhile: its session ends on its own

    def refused(self, scope, why, token=None):
        """A request turned away: on stderr, and a line of the auth log."""
        client = scope.get("client")
        self.note(client[0] if client else "?", f"{client[0]}:{client[1]}" if client else "?", why, token,
                  scope.get("path"))

    def refused_connection(self, address, why):
        self.note(address, address, why)

    def note(self, address, remote, why, token=None, path=None):
        """A refusal on stderr and in the auth log: one line an address a second at most, the next one
        saying how many were left out meanwhile (`suppressed`); the path cut and made visible; the log
        pruned past AUTH_LOG_BYTES, so that a flood of bad requests cannot fill the disk."""
        now = int(time.monotonic())
        second, suppressed = self.quiet.get(address, (None, 0))
        if second == now:
            self.quiet[address] = (second, suppressed + 1)
            return
        if len(self.quiet) > 4096:  # many addresses: forget those that said nothing since
            self.quiet = {a: q for a, q in self.quiet.items() if q[1]} if len(self.quiet) < 65536 else {}
        self.quiet[address] = (now, 0)
        more = f" ({suppressed} more refused since its last line)" if suppressed else ""
        self.warn(f"refused a request from {style.visible(remote)}: {style.visible(why)}" +
                  (f" (token {token})" if token else "") + more)
        line = {"ts": schema.now_iso(), "remote": remote, "reason": why, **({"token": token} if token else {}),
                **({"path": style.visible(path)[:PATH_CHARS]} if path is not None else {}),
                **({"suppressed": suppressed} if suppressed else {})}
        try:
            fileio.private_dirs(paths.mcp_state(), paths.state_root())
            with fileio.Lock(paths.mcp_lock()):
                size = fileio.append(paths.auth_log(), fileio.encode(fastjson.dumps(line)) + b"\n")
                if size > AUTH_LOG_BYTES:
                    usage_log.prune_file(paths.auth_log(), AUTH_LOG_BYTES, int(AUTH_LOG_BYTES * usage_log.LOW_WATER))
        except (OSError, NexusError) as e:
            self.warn(f"could not log the refusal: {e}")


class Gate:
    """The ASGI app in front of the SDK's: Origin, Host, then the bearer token (when `auth`), then a token's
    share of sessions; log(scope, why, token=None) is told of each request turned away."""

    def __init__(self, app, store, log, auth, host, origins=(), sessions_of=None, max_sessions=None, port=None):
        self.app, self.store, self.log, self.auth = app, store, log, auth
        self.sessions_of, self.max_sessions = sessions_of, max_sessions
        names = LOOPBACK_NAMES if tokens.loopback(host) else (() if host in ("0.0.0.0", "::") else (host,))
        self.hosts = names if tokens.loopback(host) else None  # a Host header checked on loopback alone (DNS rebinding)
        # this server's own origin, its port included: a page served on another port of the machine is another
        # origin (another program's), let in only by --allow-origin
        ports = (f":{port}",) + (("",) if port in (80, 443) else ()) if port else ("",)
        self.origins = {f"{scheme}://{name}{p}" for scheme in ("http", "https") for name in names for p in ports}
        self.allowed = {origin.rstrip("/") for origin in origins}  # --allow-origin: exactly these
        self.flights = {}  # a token's SHA-256 -> the cancel scopes of its requests in flight
        self.left = None  # left(session id, request id): a tool call's client went away (Hub.client_left)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await self.app(scope, receive, send)
        if scope["type"] != "http":  # a websocket (uvicorn is told to serve none): nothing else gets past
            return None
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        twice = [name for name in ("origin", "host", "authorization", "mcp-session-id")
                 if sum(1 for k, _ in scope["headers"] if k.lower() == name.encode()) > 1]
        if twice:  # which of the two would a check read, and which the app? Neither: refused
            return await self.deny(scope, send, 400, f"the header {twice[0]} is sent twice")
        origin, host = headers.get("origin"), headers.get("host", "")
        if origin is not None and origin not in self.allowed and origin not in self.origins:
            return await self.deny(scope, send, 403, f"Origin {origin} is not allowed")
        if self.hosts is not None and not any(host == h or host.startswith(h + ":") for h in self.hosts):
            return await self.deny(scope, send, 421, f"Host {host} is not this loopback address")
        if not self.auth:
            return await self.watched(scope, receive, send, headers)
        scheme, _, token = headers.get("authorization", "").partition(" ")
        token = token.strip() if scheme.lower() == "bearer" else ""
        name, why = self.store.check(token)
        if name is None or why:
            self.log(scope, why, name)
            return await respond(send, 401, [(b"www-authenticate", b'Bearer realm="nexus-mcp"' + (
                b', error="invalid_token"' if token else b""))])
        digest = tokens.digest(token)
        if (self.max_sessions and "mcp-session-id" not in headers and scope["method"] == "POST"
                and self.sessions_of(digest) >= self.max_sessions):
            self.log(scope, f"token {name} has {self.max_sessions} sessions open already, the most a token may "
                            "(nexus-mcp --max-sessions)", name)
            return await respond(send, 503, [(b"content-type", b"application/json")], fastjson.dumps(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "Too many open sessions for "
                                                         "this token"}}).encode())
        scope[TOKEN_KEY], scope[DIGEST_KEY] = name, digest
        # the session is bound to the token itself (its SHA-256 as the subject), not to its name alone
        scope["user"] = AuthenticatedUser(AccessToken(token=name, client_id=name, subject=digest, scopes=[]))
        with anyio.CancelScope() as flight:
            self.flights.setdefault(digest, set()).add(flight)
            try:
                await self.watched(scope, receive, send, headers)
            finally:
                found = self.flights.get(digest)
                if found is not None:
                    found.discard(flight)
                    if not found:
                        del self.flights[digest]

    async def watched(self, scope, receive, send, headers):
        """The request served; a tool call of a session's (the handshake's era: its answer comes on this very
        request) whose client goes away before the answer is cancelled (left(session id, request id)), so that
        a client that leaves holds no slot. Its body (small: a call's) is read first, for the call's id."""
        session_id, size = headers.get("mcp-session-id"), headers.get("content-length", "")
        if self.left is None or scope["method"] != "POST" or not session_id or not size.isdigit() or \
                int(size) > WATCHED_BYTES:
            return await self.app(scope, receive, send)
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return None  # gone before its request was read: nothing was asked
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        ident = call_id(body)
        given, state = [{"type": "http.request", "body": body, "more_body": False}], {"left": False, "done": False}

        async def replayed():
            if given:
                return given.pop()
            message = await receive()
            state["left"] = state["left"] or message["type"] == "http.disconnect"
            return message

        async def sent(message):
            if message["type"] == "http.response.body" and not message.get("more_body"):
                state["done"] = True
            await send(message)

        try:
            await self.app(scope, replayed, sent)
        finally:
            if ident is not None and state["left"] and not state["done"]:
                self.left(session_id, ident)

    def end_flights(self, ended):
        """Cancel the requests in flight of each token whose SHA-256 `ended` says is no longer good."""
        for digest, flights in list(self.flights.items()):
            if ended(digest):
                for flight in list(flights):
                    flight.cancel()

    async def deny(self, scope, send, status, why):
        self.log(scope, why)
        return await respond(send, status, [(b"content-type", b"text/plain")], why.encode("utf-8", "replace"))


def call_id(body):
    """The id of the tools/call a request's body is, else None."""
    try:
        message = fastjson.loads(body)
    except (ValueError, RecursionError):
        return None
    if isinstance(message, dict) and message.get("method") == "tools/call":
        ident = message.get("id")
        return ident if isinstance(ident, (str, int)) and not isinstance(ident, bool) else None
    return None


async def respond(send, status, headers, body=b""):
    await send({"type": "http.response.start", "status": status,
                "headers": headers + [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
