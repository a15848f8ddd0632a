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

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings

from .. import fastjson, fileio, paths, schema
from ..errors import NexusError
from ..usage import sessions
from . import server as mcpserver, tokens

PATH = "/mcp"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
POLICE_SECONDS = 1  # how soon a revoked or expired token's live sessions are ended
TOKEN_KEY = "nexus.token"  # where the Gate leaves the token's name in the request's ASGI scope


def serve(limit, watch, max_calls, tools, warn, host, port, no_auth, certfile=None, keyfile=None, origins=()):
    """Serve over HTTP on host:port until a signal ends it."""
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
    hub = Hub(mcpserver.Nexus(limit, watch, max_calls, tools, warn), store, warn)
    gate = Gate(hub.app(), store, hub.refused, not no_auth, host, origins)
    config = uvicorn.Config(gate, log_level="warning", access_log=False, lifespan="on", ssl_certfile=certfile,
                            ssl_keyfile=keyfile, timeout_graceful_shutdown=5)
    scheme = "https" if certfile else "http"
    name = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
    warn(f"serving MCP at {scheme}://{name}:{bound}{PATH}" + (" (no token needed: --no-auth)" if no_auth else ""))
    ending_on_sighup(config).run(sockets=[sock])
    return 0


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
        self.live = {}  # the MCP session id (the 2026 revision's requests have none: the token) -> its Nexus
        self.manager = None

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

    def of(self, ctx):
        """The Nexus of a request's connection: made on its first request, ended with it."""
        connection = ctx.session._connection  # the SDK's per-connection state (its Context exposes it: a 2.x detail)
        nexus = connection.state.get("nexus")
        if nexus is not None:
            return nexus
        request = ctx.request
        token = request.scope.get(TOKEN_KEY) if request is not None else None
        key = connection.session_id or ("token", token)
        nexus = self.live.get(key)
        if nexus is None:
            session = "mcp-" + sessions.new_id()
            nexus = self.base.connection(session, token=token, profile=self.store.profile(token) if token else None,
                                         folder=paths.session_folder(session), remote=True)
            self.live[key] = nexus
            if connection.session_id:
                connection.exit_stack.push_async_callback(self.ended, key, nexus)
            self.warn(f"session {session}" + (f" (token {token})" if token else ""))
        connection.state["nexus"] = nexus
        return nexus

    async def ended(self, key, nexus):
        """A session ended (the client's DELETE, idle, revoked, the server stopping): its calls ended and
        logged, its working folder removed."""
        self.live.pop(key, None)
        await nexus.end_calls()
        shutil.rmtree(nexus.folder, ignore_errors=True)

    async def police(self):
        """End the live sessions of a token revoked or expired, and the calls they run."""
        while True:
            await anyio.sleep(POLICE_SECONDS)
            for key, nexus in list(self.live.items()):
                if nexus.token and not self.store.valid(nexus.token):
                    self.warn(f"session {nexus.session} ended: token {nexus.token} was revoked or expired")
                    self.live.pop(key, None)
                    await nexus.end_calls()
                    transport = self.manager._server_instances.get(key) if isinstance(key, str) else None  # a 2.x detail
                    if transport is not None:
                        await transport.terminate()

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
        remote = f"{client[0]}:{client[1]}" if client else "?"
        self.warn(f"refused a request from {remote}: {why}" + (f" (token {token})" if token else ""))
        line = {"ts": schema.now_iso(), "remote": remote, "reason": why, **({"token": token} if token else {}),
                "path": scope.get("path")}
        try:
            fileio.private_dirs(paths.mcp_state(), paths.state_root())
            fileio.append(paths.auth_log(), fileio.encode(fastjson.dumps(line)) + b"\n")
        except OSError as e:
            self.warn(f"could not log the refusal: {e.filename}: {e.strerror}")


class Gate:
    """The ASGI app in front of the SDK's: Origin, Host, then the bearer token (when `auth`); log(scope, why,
    token=None) is told of each request turned away."""

    def __init__(self, app, store, log, auth, host, origins=()):
        self.app, self.store, self.log, self.auth = app, store, log, auth
        names = LOOPBACK_NAMES if tokens.loopback(host) else (() if host in ("0.0.0.0", "::") else (host,))
        self.hosts = names if tokens.loopback(host) else None  # a Host header checked on loopback alone (DNS rebinding)
        self.origins = [f"{scheme}://{name}" for scheme in ("http", "https") for name in names]
        self.allowed = {origin.rstrip("/") for origin in origins}  # --allow-origin: exactly these

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        origin, host = headers.get("origin"), headers.get("host", "")
        if origin is not None and origin not in self.allowed and not any(
                origin == o or origin.startswith(o + ":") for o in self.origins):
            return await self.deny(scope, send, 403, f"Origin {origin} is not allowed")
        if self.hosts is not None and not any(host == h or host.startswith(h + ":") for h in self.hosts):
            return await self.deny(scope, send, 421, f"Host {host} is not this loopback address")
        if self.auth:
            scheme, _, token = headers.get("authorization", "").partition(" ")
            name, why = self.store.check(token.strip() if scheme.lower() == "bearer" else "")
            if name is None or why:
                self.log(scope, why, name)
                return await respond(send, 401, [(b"www-authenticate", b'Bearer realm="nexus-mcp"' + (
                    b', error="invalid_token"' if token else b""))])
            scope[TOKEN_KEY] = name
            scope["user"] = AuthenticatedUser(AccessToken(token=name, client_id=name, scopes=[]))
        return await self.app(scope, receive, send)

    async def deny(self, scope, send, status, why):
        self.log(scope, why)
        return await respond(send, status, [(b"content-type", b"text/plain")], why.encode("utf-8", "replace"))


async def respond(send, status, headers, body=b""):
    await send({"type": "http.response.start", "status": status,
                "headers": headers + [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
