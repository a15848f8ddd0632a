"""nexus-mcp and `nexus mcp`: the MCP server's command side. Its options read, then the server, whose MCP
SDK is an optional extra: without it, a one-line hint on how to install it (exit 2).
"""

from nexus.errors import UsageError

INSTALL_HINT = ("the MCP server needs the MCP SDK, an optional extra: pip install 'nexus-skills[mcp]' "
                "(from a nexus checkout: make install, or make run for its .venv)")


def serve(ctx):
    """An MCP server over stdio (JSON-RPC on stdin and stdout) that an agent's client starts: it shows the
    agent only the skills that are ready right now, and runs every call through the gateway, exactly as
    `nexus skill run` does: verified on first use, run without a shell, logged with secrets masked, counted.
    It speaks the protocol's revisions from 2024-11-05 on, the 2026-07-28 one (no handshake) included.

    What an agent is offered: the ready skills, less those with `disable-model-invocation: true` (no
    tool, prompt or resource, not in list_skills, and a call by name is refused), decided in one place
    with `nexus skills prompt`, `agents-md`, `cursor-rules` and `skills link`.

    Tools (--tools each): each offered tool or script skill is a tool named after it, taking `args` (a
    list of strings), `stdin` (text) and `timeout` (seconds), all tools sharing one bare input schema;
    a skill that declares variables takes them as `variables` too, an object ({"NAME": "value"}), as
    `nexus skill run --var NAME=value` does: a required one missing is a tool error naming it.
    Each has a title (the first heading of its instructions, else its name as words) and the annotations
    its sandbox permissions make true where they differ from the protocol's defaults: openWorldHint false
    for a skill confined without the network; readOnlyHint for a confined script skill that writes only
    its own temporary and state folders.
    A tool skill runs in the folder the client started the server in, a script skill in its own. The
    result holds the program's stdout, its stderr and a note on its exit status as text (each sent
    once), and {exit, ms, truncated, timedOut} as structured content; isError is set when the exit
    status is not 0. Each of stdout and stderr is cut at --max-output bytes (the rest is read and
    dropped; truncated says so). Calling a tool nexus does not know is a protocol error (invalid params); one that
    cannot run now (its first verification fails, a key was removed) or arguments of the wrong type are
    a tool error with the reason and the setup step, which the model reads and can act on.

    Tools (--tools loader): tools/list stays small however large the catalogue: `run_skill` (name, args,
    stdin, timeout, variables) runs any offered skill by name, and the server's instructions (at most 8 KB) name the
    offered skills, the most used first, then point to list_skills. --tools auto (the default) is the
    loader once 40 tool and script skills are offered, else each; it is settled as the server starts.

    In both modes, `list_skills` (query, cursor: 50 a page) names every skill with its status, its
    variables and, for one that is not ready, why, ending with the command that fixes it, and the steps
    that set it up; `read_skill` gives one skill's instructions, a prompt skill's with the `variables`
    given filled in (never from the server's environment). A prompt skill's variables are its prompt's
    arguments.

    Skills extension (io.modelcontextprotocol/skills): skills/list (paged) and skills/get give each
    published skill as an entry: its URI skill://NAME/SKILL.md, its frontmatter as a standard YAML parser
    reads it, and every file of it with its sha256 digest and size; resources/read serves exactly those
    files by their skill:// URIs, and resources/directory/read (directoryRead) lists what lies directly
    in a skill's folder (skill://NAME, skill://NAME/references). Published: the offered prompt skills; tool and script skills only with
    mcp.publishRunnable = true in the config, since a host that runs a skill's files itself bypasses the
    gate, the log and the sandbox. A skill over the extension's limits (512 files, 16 MiB), holding a
    secret-looking file (.env, keys), a link out of its folder or a frontmatter standard YAML reads
    otherwise, is not published, and list_skills says why (notPublished). Digests are kept per file by
    its size, mtime, ctime and inode, so a listing hashes only what changed.

    Prompts and resources: each ready skill's instructions ({baseDir} resolved) are a prompt named after
    it; its files are resources with file:// URIs, the paths its instructions name (SKILL.md first, at
    most 100 a skill; hidden files, node_modules and __pycache__ left out; none larger than --max-output).
    Every read of instructions or a file is logged as a prompt call, a file with its path as args.
    resources/templates/list answers an empty list.

    Sessions: every call is logged with NEXUS_SESSION_ID when it is set, else with an id of this
    connection: `mcp-` and an id as `nexus session new` makes them (when it began, then 8 hex digits),
    which the server prints on stderr as it starts; `nexus sessions` lists them. Each call also logs the
    client program's name and version, as its initialize (or a 2026-07-28 request) says them, as `client`.

    Live catalogue: every --watch seconds the server takes a fresh look at the skills, and tells the
    client of each list that would now show other than what it was last shown (a skill installed,
    added, edited, removed, enabled or disabled): notifications/tools/list_changed, prompts/list_changed
    and resources/list_changed; to a client of the 2026-07-28 revision, which has no handshake, the same
    changes go through subscriptions/listen, and server/discover says so. No restart is needed. The
    lists themselves are answered from a look at most --watch seconds old, as evaluating 1,000 skills
    takes longer than answering.

    Cancellation: a cancelled call's process group is killed (SIGKILL), or its verify command's when it
    is cancelled during its first use's verification; the call is logged as cancelled (exit 137, error
    "cancelled") and the skill stays as verified as it was. Calls run side by side, each logged once, at
    most --max-calls at a time, in threads of their own: however many run, the server goes on reading
    (pings, cancels, the end of stdin) and answering. A line that is not JSON is answered with a parse
    error (-32700), a request whose params are not an object with invalid params (-32602). When the client closes stdin, the calls in flight are cancelled so and the server exits 0;
    on SIGTERM, SIGHUP or SIGINT it does the same, then ends by that signal.

    Over HTTP (--http): the same server on MCP's streamable HTTP transport, at http://HOST:PORT/mcp (https
    with --certfile and --keyfile, or behind a reverse proxy that terminates TLS), for agents on other
    machines: many sessions in one process, each with its own session id (printed on stderr as it
    begins), client and calls, every call through the gateway as on stdio, with the same modes and
    notifications. Every request needs `Authorization: Bearer TOKEN`, a token made by `nexus mcp token
    add`; one without a usable token (none, unknown, revoked, expired) gets 401 and nothing else, and is
    written to $NEXUS_HOME/state/nexus/mcp/auth.log. Each call's log line records the token's name as
    `token`. A token bound to a profile (--profile of token add) sees, reads and runs only that profile's
    skills; a token with --max-calls is refused (a tool error) past them. Revoking a token ends its live
    sessions within a second. --no-auth lets requests in without a token, on a loopback address alone;
    listening on another address with no token made is refused. A request from a browser whose Origin is
    neither this server's own nor one --allow-origin names is refused (403), and on loopback one whose
    Host is not a loopback name (421), against DNS rebinding. A tool skill called over HTTP runs in a working folder of its session,
    $NEXUS_HOME/state/nexus/mcp/sessions/ID (NEXUS_CALLER_CWD), removed when the session ends; a script
    skill in its own folder. Resources are named skill://NAME/PATH, never by a path of this machine. On
    SIGTERM, SIGHUP or SIGINT every session's calls in flight are ended and logged, then the server ends by
    that signal.

    Environment:
      NEXUS_SESSION_ID  Recorded with each call instead of the connection's own id (stdio alone).
      NEXUS_PROFILE     The profile served (`--profile NAME` first of all sets it): the agent sees, reads
                        and runs only its skills. One server per profile; see `nexus profiles`.
      NEXUS_HOME, NEXUS_CONFIG, MANAGED_SKILLS_DIR  As for every nexus command.

    Exit status:
      0      the client closed stdin
      1      --http: no usable token to let anyone in, or the address cannot be listened on
      2      usage error, or the MCP SDK (the extra nexus-skills[mcp]) is not installed
      128+N  ended by signal N (SIGTERM, SIGHUP, SIGINT), once the calls in flight were ended and logged

    Examples:
      nexus mcp config --client claude-code --write   # register it in this project
      claude mcp add nexus -- nexus-mcp               # or for you alone
      NEXUS_SESSION_ID=review-42 nexus-mcp            # calls logged as review-42
      nexus-mcp --profile NAME                        # one profile's skills only
      nexus-mcp --http --host ADDRESS --port 8765     # a team's server (tokens)
    """
    args = ctx.args
    if args["--http"]:
        from nexus.mcp import tokens  # over HTTP only: who may come in, settled before the server's imports

        tokens.check_door(args["--host"], args["--no-auth"], args["--certfile"], args["--keyfile"])
    from nexus.gateway import spawner  # a server's own: the helper that starts its tools

    spawner.start(ctx.warn)  # forked while this process is small and has one thread: before the SDK loads
    opening = None
    if not args["--http"]:
        from nexus.mcp import handshake  # a server on stdio only: initialize answered before the SDK loads

        opening = handshake.begin(args["--tools"], ctx.warn)
    try:
        if args["--http"]:
            from nexus.mcp import http  # the SDK and uvicorn are an optional extra: only a server that starts needs them
        else:
            from nexus.mcp import server  # the SDK is an optional extra: only a server that starts needs it
    except ImportError as e:
        if (e.name or "").partition(".")[0] not in ("mcp", "mcp_types", "uvicorn", "starlette"):
            raise
        raise UsageError(INSTALL_HINT) from None
    served = args["--max-output"], args["--watch"], args["--max-calls"], args["--tools"], ctx.warn
    if args["--http"]:
        return http.serve(*served, args["--host"], args["--port"], args["--no-auth"], args["--certfile"],
                          args["--keyfile"], args["--allow-origin"], http.Shares(
                              args["--max-connections"], args["--max-sessions"], args["--calls-per-token"]))
    return server.serve(*served, opening)
