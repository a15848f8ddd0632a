"""nexus-mcp's opening on stdio: an `initialize` answered before the MCP SDK loads. Nothing here imports the SDK.

Importing the SDK is most of the server's start (its types of two protocol revisions: some 0.5 s of 0.8 s),
and a client of the handshake's era waits for the answer to `initialize` before anything else. So the
server reads the client's first line before the SDK loads, and when it is an `initialize` request, answers it
at once, as the SDK would: the version agreed on as the SDK agrees (the client's when it is one of the
handshake's, else the latest of them, read from the SDK's own table), the capabilities the server announces,
its name, version and instructions. Then the SDK loads and is handed the same line, as the first it reads;
its own answer to it is not sent but held to the one sent (server.Out), and a difference is said on stderr
(tests/test_mcp.py holds them the same in every revision). What comes first that is not an `initialize` (a
client of the 2026-07-28 revision, which has no handshake) waits for the SDK, as every later line does.
"""

import json
import os
import select

from .. import __version__, config as configlib
from ..errors import NexusError
from . import offer

WAIT = 0.2  # seconds: how long the first line is waited for before the SDK loads (a client sends at once)
# What the server's initialize result announces (server.Announcing, the SDK's server as nexus makes it)
CAPABILITIES = {"prompts": {"listChanged": True}, "resources": {"listChanged": True, "subscribe": False},
                "tools": {"listChanged": True}}
SERVER_INFO = {"name": "nexus", "version": __version__}


class Opening:
    """The client's stream on stdin, and what came on it before the SDK loaded.

    As the SDK's transport does with the streams it claims, fd 0 is pointed at /dev/null while we serve:
    nothing we start can read the protocol's stream (`fd`, a private duplicate, and `file` read it)."""

    def __init__(self, mode):
        import fcntl  # the server's own stdin only

        self.fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        self.file = os.fdopen(self.fd, "rb", buffering=65536, closefd=False)
        self.first = None  # the client's first line, when it came before the SDK loaded (b"": stdin ended)
        self.answered = None  # (its id, the result sent) of the initialize answered here
        self.mode, self.instructions, self.catalog = mode, None, None  # settled for that answer

    def close(self):
        """Point fd 0 at the client's stream again, as it was before we served."""
        os.dup2(self.fd, 0)


def begin(mode, warn):
    """The Opening of a server on stdio in tool mode `mode`; its first line answered when it is an initialize."""
    opening = Opening(mode)
    if not select.select([opening.fd], [], [], WAIT)[0]:
        return opening  # a client that waits: the SDK loads meanwhile
    opening.first = opening.file.readline()
    request, versions = initialize(opening.first), handshake_versions()
    if request is None or versions is None:
        return opening
    ident, asked = request
    try:
        config, catalog, found = configlib.load(), offer.Catalog(warn), []

        def records():
            if not found:
                found.append(catalog.records(config))
            return found[0]

        mode = offer.settled_mode(mode, config, records)
        text = offer.instructions_in(mode, records)
    except (NexusError, OSError):
        return opening  # said as the SDK's server meets it
    result = {"capabilities": CAPABILITIES, "instructions": text,
              "protocolVersion": asked if asked in versions else versions[-1], "serverInfo": SERVER_INFO}
    line = json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}, ensure_ascii=False, separators=(",", ":"))
    view = memoryview((line + "\n").encode("utf-8", "surrogateescape"))
    try:
        while view:
            view = view[os.write(1, view):]
    except OSError:
        return opening  # the client is gone: the SDK's server sees it too
    opening.answered, opening.mode, opening.instructions, opening.catalog = (ident, result), mode, text, catalog
    return opening


def initialize(line):
    """(id, the protocol version asked for) of an initialize request the SDK would accept, else None."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "initialize":
        return None
    ident, params = message.get("id"), message.get("params")
    if isinstance(ident, bool) or not isinstance(ident, (str, int)) or not isinstance(params, dict):
        return None
    info = params.get("clientInfo")
    if not (isinstance(params.get("protocolVersion"), str) and isinstance(params.get("capabilities"), dict)
            and isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)):
        return None
    return ident, params["protocolVersion"]


def handshake_versions():
    """The SDK's protocol versions of the initialize handshake, oldest first, from its own table
    (mcp_types/version.py, which imports nothing) without loading the SDK; None without the SDK."""
    import importlib.util  # only to read that one file of the SDK's

    try:
        package = importlib.util.find_spec("mcp_types")
        path = os.path.join(package.submodule_search_locations[0], "version.py")
        spec = importlib.util.spec_from_file_location("nexus_mcp_versions", path)
        table = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(table)
        return tuple(table.HANDSHAKE_PROTOCOL_VERSIONS)
    except (ImportError, AttributeError, TypeError, OSError, SyntaxError):
        return None
