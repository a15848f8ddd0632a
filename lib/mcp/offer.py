"""What nexus-mcp offers an MCP client, as plain data in the protocol's own shapes: the ready skills as
tools, prompts and resources, the two tools for clients that support only tools, a call's arguments
checked, and its outcome as a tool result. Nothing here imports the MCP SDK.
"""

import os
import threading
import time

from .. import config as configlib, paths, schema
from ..agents.instructions import offered
from ..catalog import listing, manifest
from ..cli.command import number
from ..errors import NexusError, UsageError
from ..gateway import call as gateway, plan
from ..skill import skillmd
from . import skills

SHORT_INSTRUCTIONS = 400  # characters: instructions this short are part of their tool's description
MAX_FILES = 100  # resources listed per skill
SKIPPED_FOLDERS = ("node_modules", "__pycache__")  # and every hidden file and folder
LIST_SKILLS, READ_SKILL, RUN_SKILL = "list_skills", "read_skill", "run_skill"  # never a skill's name: no "_"
MODES = ("each", "loader", "auto")  # what tools/list holds: a tool per skill, or run_skill and the catalogue
AUTO_LOADER = 40  # auto: the loader once this many tool and script skills are offered
MAX_INSTRUCTIONS = 2048  # characters of the server's instructions: Claude Code keeps no more

CALL_ARGUMENTS = ("args", "stdin", "timeout", "variables")
CALL_PROPERTIES = {"args": {"type": "array", "items": {"type": "string"}}, "stdin": {"type": "string"},
                   "timeout": {"type": "number"}}
VARIABLES = {"type": "object", "additionalProperties": {"type": "string"},
             "description": "Values of the skill's declared variables (list_skills names them), by name."}
ASKED = 'variables: {{"{}": "..."}}'  # how a call takes a variable, for a refusal that names a missing one
# Bare, and one object shared by every tool: an agent reads it once for each tool, and may have 1,000 of
# them. What args, stdin and timeout mean is said once, in the server's instructions, and call_arguments
# checks them (no other key, a timeout above 0) with an error the model can act on.
INPUT_SCHEMA = {"type": "object", "properties": CALL_PROPERTIES}
RUN_SKILL_TOOL = {
    "name": RUN_SKILL, "title": "Run a skill",
    "description": "Run a ready skill by name through the nexus gateway: its program gets `args` (a list of strings, "
                   "no shell), `stdin` and `timeout` (seconds); the answer holds its stdout, its stderr and its exit "
                   f"status. Find skills with {LIST_SKILLS}; read a skill's instructions with {READ_SKILL} before "
                   "its first use.",
    "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "description": "The skill."},
                                                     **CALL_PROPERTIES, "variables": VARIABLES},
                    "required": ["name"], "additionalProperties": False},
    "annotations": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True},
}
ONLY_READS = {"readOnlyHint": True}  # openWorldHint false is as true, but the bundled skills' list has no room
BUILTIN_TOOLS = (
    {"name": LIST_SKILLS, "title": "List skills", "annotations": ONLY_READS,
     "description": "Every skill nexus knows, with its status (ready, needs-setup, not-installed, disabled, "
                    "invalid) and, for one that is not ready, why and how to set it up: what to tell a "
                    "person when a task needs a skill that is not among your tools.",
     "inputSchema": {"type": "object", "properties": {
         "query": {"type": "string", "description": "Only skills whose name or description holds this."},
         "cursor": {"type": "string", "description": "The nextCursor of the page before."}},
         "additionalProperties": False}},
    {"name": READ_SKILL, "title": "Read a skill", "annotations": ONLY_READS,
     "description": "One skill's instructions (SKILL.md), its files' paths and its variables filled in.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}, "variables": {"type": "object"}},
                     "required": ["name"], "additionalProperties": False}},
)


class Catalog:
    """The skills as the server sees them. A tool call finds its skill as `nexus skill run` does (its
    line of the manifest, and the stat calls that say it is fresh); listings keep the manifest in
    memory, checked for freshness on every use and refreshed when a source or skill changed."""

    def __init__(self, warn):
        self.warn, self.manifest = warn, None
        self.lock = threading.Lock()  # one rescan at a time: threads share our pid, so our temp file names

    def current(self, config):
        with self.lock:
            sources = configlib.sources(config)
            if self.manifest is None or not self.manifest.is_fresh(sources):
                self.manifest = manifest.current(sources, on_diagnostic=self.warn)
            return self.manifest

    def entry(self, config, name):
        """A skill's manifest entry; NexusError when there is none."""
        with self.lock:  # the one-skill lookup, as `nexus skill run` does it; a rescan at a time
            return manifest.entry(configlib.sources(config), name, self.warn)

    def records(self, config):
        """Every skill with its status, as `nexus skills list --json` has them."""
        return listing.evaluate_all(self.current(config), config, self.warn)


LIST_PAGE = 50  # skills per page of list_skills
LISTED = ("ready", "needs-setup", "not-installed", "disabled", "invalid")  # list_skills: all but another platform's


def is_tool(record):
    return record.get("type") in ("tool", "script")


def tools_of(records):
    """The offered tool and script skills: each is a tool."""
    return [r for r in offered(records) if is_tool(r)]


def mode(chosen, records):
    """each or loader: `chosen` (one of MODES), auto settled by how many tool and script skills are offered."""
    if chosen != "auto":
        return chosen
    return "loader" if len(tools_of(records)) >= AUTO_LOADER else "each"


def settled_mode(chosen, config, records):
    """each or loader, for a whole connection: `chosen` (None: the config's mcp.tools; auto: by the catalogue
    as it is now, records())."""
    if chosen in (None, "auto"):
        chosen = (config.get("mcp") or {}).get("tools", "auto") if chosen is None else "auto"
        return mode(chosen, records()) if chosen == "auto" else chosen
    return chosen


def instructions_in(chosen, records):
    """The server's instructions in mode `chosen` (each or loader), of the skills records() gives."""
    if chosen == "each":
        return server_instructions("each", [], {})
    from ..usage import stats  # the loader's instructions only: how much each skill is used

    found = records()
    return server_instructions("loader", found, stats.call_counts([r["name"] for r in offered(found)]))


def server_instructions(chosen, records, calls):
    """The server's instructions in mode `chosen` (each or loader). Agents cut them: Codex keeps about the
    first 250 characters of the first line, Claude Code the first 2,048 characters. So the first line
    alone says what the server is and how to find a skill, and the whole fits MAX_INSTRUCTIONS at any
    catalogue size: in loader mode, the offered skills the most used first (`calls`: {name: calls
    lately}), each with its description cut short, as many as fit, and how to find the rest."""
    from ..style import truncate  # the instructions only

    if chosen == "each":
        return f"{FIRST_LINE}\n\n{EACH_INSTRUCTIONS}"
    shown = sorted(offered(records), key=lambda r: -calls.get(r["name"], 0))  # stable: priority, then name kept
    text = f"{FIRST_LINE}\n\n{LOADER_INSTRUCTIONS}\n\nSkills, the most used first:\n"
    room = MAX_INSTRUCTIONS - units(text) - 100  # for the line that says how many are left out
    for count, record in enumerate(shown):
        kind = f" ({READ_SKILL} only: instructions)" if record.get("type") == "prompt" else ""
        line = f"- {record['name']}{kind}: {truncate(' '.join(record.get('description', '').split()), 80)}\n"
        room -= units(line)
        if room < 0:
            return text + f"... and {len(shown) - count} more: {LIST_SKILLS} finds them (query, cursor).\n"
        text += line
    return text


def units(text):
    """The length of `text` as JavaScript counts it (UTF-16 code units: an emoji is 2), which clients cut by."""
    return len(text.encode("utf-16-le")) // 2


FIRST_LINE = (f"nexus serves the skills of this machine and runs them through its gateway, every call logged: find a "
              f"skill with the {LIST_SKILLS} tool (or skills/list), read one with {READ_SKILL}.")
EACH_INSTRUCTIONS = f"""\
The tools are the ready skills: each runs one program with `args` (a list of strings, no shell), `stdin` \
(text), `timeout` (seconds) and the `variables` a skill declares (an object), and answers with its stdout, its \
stderr and its exit status (structured: exit, ms, truncated, timedOut). {READ_SKILL}, or the prompt named \
after a skill, gives its instructions; a skill's files are resources. {LIST_SKILLS} names every skill, ready \
or not, with what one that is not ready needs."""
LOADER_INSTRUCTIONS = f"""\
{RUN_SKILL} runs a ready skill by name: its program gets `args` (a list of strings, no shell), `stdin` (text), \
`timeout` (seconds) and `variables` (an object: those the skill declares); the answer is its stdout, its \
stderr and its exit status (structured: exit, ms, truncated, timedOut; isError when it did not exit 0). Read a \
skill's instructions with {READ_SKILL} before its first use. {LIST_SKILLS} finds skills by a query, ready or \
not, with what one that is not ready needs."""


def tool(entry, hints=None):
    """A tool or script skill as an MCP tool, named after it: its description, what it runs, and its
    instructions when they are short (else they are its prompt, and read_skill's); its title, and the
    annotations that are true of it (`hints`: see hints). The result's shape (structured content:
    exit, ms, truncated, timedOut) is told once, in the server's instructions, not in an output schema
    for every tool."""
    if entry["type"] == "tool":
        description = f"{entry['description']}\n\nRuns `{entry.get('tool')}`."
    else:
        description = f"{entry['description']}\n\nRuns its script {entry.get('script')} with args."
    try:
        instructions = skillmd.prompt(entry).strip()
    except NexusError:
        instructions = ""
    if instructions and len(instructions) <= SHORT_INSTRUCTIONS:
        description += "\n\n" + instructions
    found = {"name": tool_name(entry["name"]), "title": title(entry["name"], instructions),
             "description": description, "inputSchema": input_schema(entry)}
    return {**found, "annotations": hints} if hints else found


def input_schema(entry):
    """The shared schema; for a skill that declares variables, its own, with `variables` an object of
    them (none required: a tool's may come from the server's environment, as with `nexus skill run`)."""
    declared = entry.get("variables")
    if not declared:
        return INPUT_SCHEMA
    properties = {v["name"]: {"type": "string", **described(v)} for v in declared}
    return {"type": "object", "properties": {**CALL_PROPERTIES, "variables": {
        "type": "object", "properties": properties, "additionalProperties": False}}}


def described(variable):
    """A declared variable's description, as a schema or a prompt argument holds it: none when it has none."""
    return {"description": variable["description"]} if variable.get("description") else {}


def title(name, instructions):
    """A tool's title, for people: the first heading of the skill's instructions when it opens with a
    short one (`# GitHub (gh CLI)`), else its name as words (`disk-report` is "Disk report")."""
    first = instructions.partition("\n")[0]
    if first.startswith("# ") and 0 < len(first[2:].strip()) <= MAX_TITLE:
        return first[2:].strip()
    words = name.replace("-", " ").replace("_", " ")
    return words[:1].upper() + words[1:]


MAX_TITLE = 64  # characters of a heading that serves as a tool's title


def hints(entry, config):
    """The annotations that are true of a tool or script skill and not the protocol's defaults already
    (which are: it may write, and it reaches out), from its sandbox permissions (declared, or granted in
    the config): openWorldHint false when it runs confined without the network; readOnlyHint true when it
    runs confined and writes only its own temporary and state folders (a script skill granted no folder:
    a tool skill writes its caller's folder). Said once each, 1,000 tools at a time: a skill with the
    network has openWorldHint true by default."""
    if not plan.confined(entry, config):  # nothing to say, and a list of 1,000 tools is answered the faster
        return {}
    from ..gateway import sandbox  # a confined skill's tool only

    allowed, found = sandbox.effective(entry, config), {}
    if not allowed["network"]:
        found["openWorldHint"] = False
    if set(allowed["write"]) <= {"{tmp}", "{state}"}:
        found["readOnlyHint"] = True
    return found


def tool_name(name):
    """A skill's tool name: its own when it is ASCII (a skill name is then within the protocol's
    [A-Za-z0-9_.-]); else its letters folded to ASCII and 8 hex digits of its digest, stable and distinct
    (`café` is the tool cafe-8c5d2b9e, titled "Café")."""
    if name.isascii():
        return name
    import hashlib  # a skill name that is not ASCII only
    import unicodedata  # a skill name that is not ASCII only

    folded = "".join(c for c in unicodedata.normalize("NFKD", name) if c.isascii() and (c.isalnum() or c == "-"))
    return f"{folded or 'skill'}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def skill_named(records, name):
    """The skill whose tool is called `name` when that is no skill's own name (see tool_name); else `name`."""
    return next((r["name"] for r in tools_of(records) if not r["name"].isascii() and tool_name(r["name"]) == name),
                name)


def prompt(record):
    """A skill as a prompt: its declared variables are its arguments, required unless they have a default."""
    found = {"name": record["name"], "description": record.get("description", "")}
    arguments = [{"name": v["name"], **described(v), "required": "default" not in v}
                 for v in record.get("variables") or ()]
    return {**found, "arguments": arguments} if arguments else found


def signature(kind, records, chosen="each"):
    """What a list of `kind` (tools, prompts, resources) shows of these skills: when it changes, the
    server tells the client. In loader mode the tools never change."""
    if kind == "tools":
        return [(r["name"], r["sha256"]) for r in tools_of(records)] if chosen == "each" else []
    shown = offered(records)
    if kind == "prompts":
        return [(r["name"], r["sha256"]) for r in shown]
    return [(r["name"], r["sha256"], r.get("dirMtimeNs")) for r in shown]


# -- calls ----------------------------------------------------------------------------------------


def call_arguments(arguments):
    """(args, stdin as bytes or None, timeout, variables) from a tool call's arguments; UsageError saying
    what is wrong."""
    arguments = arguments or {}
    unknown = sorted(set(arguments) - set(CALL_ARGUMENTS))
    if unknown:
        raise UsageError(f"unknown argument {unknown[0]!r}: a skill takes args (a list of strings), stdin, timeout "
                         "and variables")
    args = arguments.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise UsageError("args must be a list of strings")
    if any("\0" in arg for arg in args):
        raise UsageError("an argument contains a NUL character, which no program can be given")
    stdin = arguments.get("stdin")
    if stdin is not None and not isinstance(stdin, str):
        raise UsageError("stdin must be a string")
    timeout = arguments.get("timeout")
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise UsageError("timeout must be a number of seconds")
        timeout = number(timeout, "timeout")
    return args, None if stdin is None else stdin.encode(), timeout, given_variables(arguments.get("variables"))


def given_variables(value):
    """{name: value} of a call's `variables` (an object of strings; None: none); UsageError else. Which
    the skill declares, plan.variables checks."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise UsageError("variables must be an object whose values are strings")
    if any("\0" in v for v in value.values()):
        raise UsageError("a variable's value contains a NUL character, which no environment can hold")
    return value


def call_result(done, timeout, limit, output):
    """A finished call as a tool result: stdout, then stderr, then what else happened, as text content,
    each sent once; the figures (exit, ms, truncated, timedOut) as structured content; isError when the
    exit status is not 0. `output`: its stdout and stderr as the Call shows them (Call.output: the secrets
    nexus handed the tool masked; the agent reads what the tool printed, never a secret in it)."""
    stdout, stderr = output["stdout"], output["stderr"]
    notes = ["" if done.started else "the program could not be started",
             f"timed out after {timeout:g} s" if done.timed_out else "", f"exit status {done.exit}" if done.exit else "",
             f"output cut at {limit:,} bytes per stream" if done.truncated else "",
             getattr(done, "set_aside", "")]  # what a confined call wrote that was not applied (gateway.stage)
    texts = ([stdout] if stdout else []) + ([f"stderr:\n{stderr}"] if stderr else [])
    texts += ["; ".join(n for n in notes if n)] if any(notes) else []
    return result(content=[text_content(text) for text in texts or ["(no output)"]],
                  structuredContent={"exit": done.exit, "ms": done.ms, "truncated": done.truncated,
                                     "timedOut": done.timed_out},
                  isError=done.exit != 0)


def error_result(message):
    """A tool's error the model can read and correct: its arguments were off, or the skill refused."""
    return result(content=[text_content(message)], isError=True)


def text_content(text):
    return {"type": "text", "text": text}


def result(**fields):
    """A result in the protocol's shape. The 2026 revision requires resultType; for older ones the SDK
    leaves it out."""
    return {**fields, "resultType": "complete"}


# -- instructions and files -----------------------------------------------------------------------


def instructions(catalog, config, name, caller, given=None):
    """(the skill's entry, its instructions: {baseDir} resolved, its variables filled in from `given`, else
    their defaults, never the environment's), read as a prompt call is (gateway.call.Call.read) by `caller`
    (a gateway.call.Caller); NexusError when the skill is not found or `given` names a variable it does not
    declare, and Refused (logged) when it is kept from models, disabled, not for this platform or a
    required variable is missing, as `nexus skill run` refuses a prompt skill."""
    entry = catalog.entry(config, name)
    return entry, gateway.Call(entry, config, caller, variables=given).read()


def skill_list(records, unpublished, arguments):
    """list_skills: the skills an agent may be offered, of every status but another platform's, with why
    and how for one that is not ready, and why a ready one is not published to hosts that speak the
    Skills extension (`unpublished`: {name: why}); those whose name or description holds `query` (in any
    case), LIST_PAGE at a time from `cursor`."""
    arguments = arguments or {}
    query, cursor = arguments.get("query", ""), arguments.get("cursor", "0")
    if set(arguments) - {"query", "cursor"} or not isinstance(query, str) or not (isinstance(cursor, str) and cursor.isdigit()):
        return error_result(f"{LIST_SKILLS} takes query (text) and cursor (the nextCursor of the page before)")
    found = []
    for record in offered(records, statuses=LISTED):
        if query.lower() not in f"{record['name']} {record.get('description', '')}".lower():
            continue
        skill = {"name": record["name"], "description": record.get("description", ""),
                 "type": record.get("type"), "status": record["status"]}
        if record["status"] != "ready":
            skill["reason"] = reason(record)
        if record["status"] in ("needs-setup", "not-installed"):
            skill["setup"] = plan.setup_steps(record, record["missing"])
        if record.get("variables"):
            skill["variables"] = record["variables"]
        if record["name"] in unpublished:
            skill["notPublished"] = unpublished[record["name"]]
        found.append(skill)
    start = int(cursor)
    page, more = found[start:start + LIST_PAGE], start + LIST_PAGE < len(found)
    lines = [f"{s['name']} ({s['status']}): {s['description']}" + (f"\n  why: {s['reason']}" if "reason" in s else "")
             + (f"\n  variables: {', '.join(v['name'] for v in s['variables'])}" if "variables" in s else "")
             for s in page]
    if more:
        lines.append(f"(more: call {LIST_SKILLS} with cursor {start + LIST_PAGE})")
    structured = {"skills": page, **({"nextCursor": str(start + LIST_PAGE)} if more else {})}
    return result(content=[text_content("\n".join(lines) or "No skills.")], structuredContent=structured)


def reason(record):
    """Why a skill is not ready, ending with the one command that fixes it where there is one, as the
    gateway's refusals end."""
    why, step = plan.not_ready_reason(record), plan.next_step(record)
    return why if not step or step in why else f"{why}. To fix: {step}"


def files(entry, warn):
    """The paths of a skill's files, SKILL.md first: none hidden, none in SKIPPED_FOLDERS, at most MAX_FILES.
    A name that is not UTF-8 cannot be sent (JSON text is UTF-8): it is skipped, with a warning."""
    found = [entry["filePath"]]
    for folder, folders, names in os.walk(entry["dir"]):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in SKIPPED_FOLDERS
                            and utf8(os.path.join(folder, f), warn))
        for name in sorted(names):
            path = os.path.join(folder, name)
            if not name.startswith(".") and path != entry["filePath"] and utf8(path, warn) and inside(entry, path):
                found.append(path)
                if len(found) >= MAX_FILES:
                    return found
    return found


def utf8(path, warn):
    """True when `path` is UTF-8 (os.walk gives other bytes as surrogates), else False with a warning."""
    try:
        path.encode("utf-8")
        return True
    except UnicodeEncodeError:
        warn(f"{path.encode('utf-8', 'backslashreplace').decode()}: skipped: its name is not UTF-8")
        return False


def inside(entry, path):
    """True when `path` is a file within the skill's folder, symlinks resolved."""
    return paths.contains(entry["dir"], path) and os.path.isfile(path)


def resource(entry, path):
    """A file of a skill as a resource, by its file:// URI: its SKILL.md named after the skill, with its
    description (as the Skills extension names it), any other file by its path in the skill."""
    import mimetypes  # resources only: a server that lists none never pays for them
    import pathlib

    relative = os.path.relpath(path, entry["dir"])
    found = {"uri": pathlib.Path(path).as_uri(), "name": f"{entry['name']}/{relative}",
             "mimeType": "text/markdown" if path.endswith(".md") else mimetypes.guess_type(path)[0]}
    if path == entry["filePath"]:
        found.update(name=entry["name"], description=entry.get("description", ""))
    return {k: v for k, v in found.items() if v}


def read_resource(records, config, uri, limit, caller, warn, shelf):
    """(mime type, bytes) of a file that resources/list shows, named by its file:// URI, or that a
    published skill's entry lists, by its skill:// URI (see skills.Shelf); logged as a prompt call with
    the file's path in the skill. UsageError when it is no such file (a hidden one, say) or larger than
    `limit` (a skill:// file: than the Skills extension's limit). Over HTTP, resources/list shows only the
    published skills' skill:// files: a read reaches nothing else, as on stdio."""
    if uri.startswith("skill://"):
        try:
            entry, path = shelf.file(records, config, uri)
        except LookupError as e:
            raise UsageError(str(e)) from None
        limit = skills.MAX_BYTES
    else:
        entry, path = listed_file(records, uri, warn)
    size = os.path.getsize(path)
    if size > limit:
        raise UsageError(f"{uri} is {size:,} bytes, over the limit of {limit:,} (nexus-mcp --max-output)")
    started, ts = time.monotonic(), schema.now_iso()
    with open(path, "rb") as f:
        data = f.read(limit)
    gateway.Call(entry, config, caller, [os.path.relpath(path, entry["dir"])]).log_read(started, ts)
    return resource(entry, path).get("mimeType"), data


def listed_file(records, uri, warn):
    """(the skill's record, the path) of a file resources/list shows, by its file:// URI; UsageError else."""
    from urllib.parse import unquote, urlsplit  # a resource read only: urllib brings `re`

    parts = urlsplit(uri)
    path = os.path.normpath(unquote(parts.path)) if parts.scheme == "file" and parts.netloc in ("", "localhost") else ""
    owners = [r for r in offered(records) if path.startswith(r["dir"] + os.sep)]
    entry = max(owners, key=lambda r: len(r["dir"]), default=None)
    if entry is None or path not in files(entry, warn):
        raise UsageError(f"no resource {uri}: a resource is a file of a ready skill that resources/list shows")
    return entry, path
