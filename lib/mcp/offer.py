"""What nexus-mcp offers an MCP client, as plain data in the protocol's own shapes: the ready skills as
tools, prompts and resources, the two tools for clients that support only tools, a call's arguments
checked, and its outcome as a tool result. Nothing here imports the MCP SDK.
"""

import os
import threading
import time

from .. import config as configlib, paths, schema
from ..catalog import listing, manifest
from ..cli.command import number
from ..errors import NexusError, Refused, UsageError
from ..gateway import plan, run as gateway
from ..skill import skillmd

MAX_OUTPUT = 256 * 1024  # bytes of a tool's stdout, and of its stderr, in a result; also the largest resource
SHORT_INSTRUCTIONS = 400  # characters: instructions this short are part of their tool's description
MAX_FILES = 100  # resources listed per skill
SKIPPED_FOLDERS = ("node_modules", "__pycache__")  # and every hidden file and folder
LIST_SKILLS, READ_SKILL = "list_skills", "read_skill"  # never a skill's name: those have no "_"

CALL_ARGUMENTS = ("args", "stdin", "timeout")
INPUT_SCHEMA = {  # kept short: an agent reads it once for every tool, and may have 1,000 of them
    "type": "object",
    "properties": {
        "args": {"type": "array", "items": {"type": "string"}, "description": "Its arguments (no shell)."},
        "stdin": {"type": "string", "description": "Its standard input."},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds it may run."},
    },
    "additionalProperties": False,
}
BUILTIN_TOOLS = (
    {"name": LIST_SKILLS,
     "description": "Every skill nexus knows, with its status (ready, needs-setup, not-installed, disabled, "
                    "invalid) and, for one that is not ready, why and the steps that set it up: what to tell "
                    "a person when the skill a task needs is not among your tools.",
     "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False}},
    {"name": READ_SKILL,
     "description": "The instructions (SKILL.md) of one skill, with the paths of its files resolved.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "description": "The skill."}},
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


def is_tool(record):
    return record["status"] == "ready" and record.get("type") in ("tool", "script")


def ready(records):
    return [r for r in records if r["status"] == "ready"]


def tool(entry):
    """A tool or script skill as an MCP tool, named after it: its description, what it runs, and its
    instructions when they are short (else they are its prompt, and read_skill's). The result's shape
    (structured content: exit, stdout, stderr, ms, truncated, timedOut) is told once, in the server's
    instructions, not in an output schema for every tool."""
    program = entry.get("tool") if entry["type"] == "tool" else entry.get("runner")
    description = f"{entry['description']}\n\nRuns `{program}` with `args` (no shell)."
    try:
        instructions = skillmd.prompt(entry).strip()
    except NexusError:
        instructions = ""
    if instructions and len(instructions) <= SHORT_INSTRUCTIONS:
        description += "\n\n" + instructions
    return {"name": entry["name"], "description": description, "inputSchema": INPUT_SCHEMA}


def prompt(record):
    return {"name": record["name"], "description": record.get("description", "")}


def signature(kind, records):
    """What a list of `kind` (tools, prompts, resources) shows of these skills: when it changes, the
    server tells the client."""
    if kind == "tools":
        return [(r["name"], r["sha256"]) for r in records if is_tool(r)]
    shown = ready(records)
    if kind == "prompts":
        return [(r["name"], r["sha256"]) for r in shown]
    return [(r["name"], r["sha256"], r.get("dirMtimeNs")) for r in shown]


# -- calls ----------------------------------------------------------------------------------------


def call_arguments(arguments):
    """(args, stdin as bytes or None, timeout) from a tool call's arguments; UsageError saying what is wrong."""
    arguments = arguments or {}
    unknown = sorted(set(arguments) - set(CALL_ARGUMENTS))
    if unknown:
        raise UsageError(f"unknown argument {unknown[0]!r}: a skill takes args (a list of strings), stdin and timeout")
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
    return args, None if stdin is None else stdin.encode(), timeout


def call_result(done, timeout, limit, masked=lambda text: text):
    """A finished call as a tool result: stdout, then stderr, then what else happened, as text content;
    all of it as structured content; isError when the exit status is not 0. `masked` (the Call's) masks
    the secrets nexus handed the tool: the agent reads what the tool printed, never a secret in it."""
    stdout = masked(done.stdout.decode("utf-8", "replace"))
    stderr = masked(done.stderr.decode("utf-8", "replace"))
    notes = ["" if done.started else "the program could not be started",
             f"timed out after {timeout:g} s" if done.timed_out else "", f"exit status {done.exit}" if done.exit else "",
             f"output cut at {limit:,} bytes per stream" if done.truncated else ""]
    texts = ([stdout] if stdout else []) + ([f"stderr:\n{stderr}"] if stderr else [])
    texts += ["; ".join(n for n in notes if n)] if any(notes) else []
    return result(content=[text_content(text) for text in texts or ["(no output)"]],
                  structuredContent={"exit": done.exit, "stdout": stdout, "stderr": stderr, "ms": done.ms,
                                     "truncated": done.truncated, "timedOut": done.timed_out},
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


def instructions(catalog, config, name, session, warn):
    """A skill's instructions ({baseDir} resolved), logged as a prompt call; NexusError when the skill
    is not found, and Refused (logged) when it is disabled or not for this platform, as `nexus skill run`
    refuses a prompt skill."""
    entry = catalog.entry(config, name)
    try:
        gateway.gate(entry, config)
    except Refused as e:
        raise gateway.refuse({**entry, "type": "prompt"}, config, e, warn, session=session) from None
    started, ts = time.monotonic(), schema.now_iso()
    text = skillmd.prompt(entry)
    log_read(entry, config, ts, started, None, session, warn)
    return entry, text


def log_read(entry, config, ts, started, args, session, warn):
    """Reading a skill's instructions or files is a prompt call in its usage log."""
    ms = int((time.monotonic() - started) * 1000)
    try:
        gateway.record({**entry, "type": "prompt"}, config, False, ts, ms, 0, args=args, session=session)
    except OSError as e:
        warn(gateway.not_recorded(e))


def skill_list(records):
    """list_skills: every skill but those for another platform, with why and how for the ones not ready."""
    skills = []
    for record in records:
        if record["status"] == "unsupported":
            continue
        skill = {"name": record["name"], "description": record.get("description", ""),
                 "type": record.get("type"), "status": record["status"]}
        if record["status"] != "ready":
            skill["reason"] = plan.not_ready_reason(record)
        if record["status"] in ("needs-setup", "not-installed"):
            skill["setup"] = plan.setup_steps(record, record["missing"])
        skills.append(skill)
    lines = [f"{s['name']} ({s['status']}): {s['description']}" + (f"\n  why: {s['reason']}" if "reason" in s else "")
             for s in skills]
    return result(content=[text_content("\n".join(lines) or "No skills.")], structuredContent={"skills": skills})


def files(entry):
    """The paths of a skill's files, SKILL.md first: none hidden, none in SKIPPED_FOLDERS, at most MAX_FILES."""
    found = [entry["filePath"]]
    for folder, folders, names in os.walk(entry["dir"]):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in SKIPPED_FOLDERS)
        for name in sorted(names):
            path = os.path.join(folder, name)
            if not name.startswith(".") and path != entry["filePath"] and inside(entry, path):
                found.append(path)
                if len(found) >= MAX_FILES:
                    return found
    return found


def inside(entry, path):
    """True when `path` is a file within the skill's folder, symlinks resolved."""
    return paths.contains(entry["dir"], path) and os.path.isfile(path)


def resource(entry, path):
    import mimetypes  # resources only: a server that lists none never pays for them
    import pathlib

    relative = os.path.relpath(path, entry["dir"])
    found = {"uri": pathlib.Path(path).as_uri(), "name": f"{entry['name']}/{relative}",
             "mimeType": "text/markdown" if path.endswith(".md") else mimetypes.guess_type(path)[0]}
    return {k: v for k, v in found.items() if v}


def read_resource(records, config, uri, limit, session, warn):
    """(mime type, bytes) of a file that resources/list shows, named by its file:// URI, logged as a
    prompt call with the file's path in the skill; UsageError when it is no such file (a hidden one,
    say) or larger than `limit`."""
    from urllib.parse import unquote, urlsplit  # a resource read only: urllib brings `re`

    parts = urlsplit(uri)
    path = os.path.normpath(unquote(parts.path)) if parts.scheme == "file" and parts.netloc in ("", "localhost") else ""
    owners = [r for r in ready(records) if path.startswith(r["dir"] + os.sep)]
    entry = max(owners, key=lambda r: len(r["dir"]), default=None)
    if entry is None or path not in files(entry):
        raise UsageError(f"no resource {uri}: a resource is a file of a ready skill that resources/list shows")
    size = os.path.getsize(path)
    if size > limit:
        raise UsageError(f"{uri} is {size:,} bytes, over the limit of {limit:,} (nexus-mcp --max-output)")
    started, ts = time.monotonic(), schema.now_iso()
    with open(path, "rb") as f:
        data = f.read(limit)
    log_read(entry, config, ts, started, [os.path.relpath(path, entry["dir"])], session, warn)
    return resource(entry, path).get("mimeType"), data
