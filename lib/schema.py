"""The shapes of nexus's records, in one place: the manifest entry, a skill's state, a usage log entry."""

import itertools
import os
import time

MANIFEST_VERSION = 2  # 2: one record per line, with the stamps of every record (catalog.manifest)
STATE_VERSION = 1
TYPES = ("tool", "script", "prompt")
# A usage log's types: TYPES, and `unknown` for a skill whose metadata names a type nexus cannot run (it
# runs as a prompt skill, with a warning; skills spec 10).
LOG_TYPES = (*TYPES, "unknown")
# The skills spec's spellings of requires (9.1), read as nexus's own: `nexus skills check --strict` suggests them.
SPEC_SPELLINGS = {"tools": "requires.skills", "connectors": "metadata.nexus.connectors"}
SECRET = "***"  # what a secret's value is logged and shown as, everywhere
# Why the gateway refused a call: the `refused` of its log line (errors.Refused). A refusal for policy (the
# skill is disabled or not for this platform, or scope, trust or sandbox rules it out) counts as a call but
# never as a failure of the skill: not in success rates, health or `nexus status --check`.
REFUSALS = ("disabled", "unsupported", "not-installed", "needs-setup", "dependency", "invalid", "variables", "scope",
            "trust", "sandbox", "busy")
# variables: the caller left out a variable the skill declares (skills spec 9.4): no failure of the skill either.
# busy: nexus-mcp had no free slot for the call (--max-calls, --calls-per-token): the server's limit, not the skill's.
POLICY_REFUSALS = frozenset(("disabled", "unsupported", "variables", "scope", "trust", "sandbox", "busy"))
ERROR_CHARS = 200  # the most of an error message a record keeps: its end, where the reason usually is
REQUIRE_KEYS = ("bins", "anyBins", "env", "config")  # in every entry's requires
DEPENDS_KEYS = ("capabilities", "skills")  # in an entry's requires only when the skill names them

# The frontmatter keys of a skill's own; every other key is kept under `extra`.
FRONTMATTER_KEYS = ("name", "description", "homepage", "metadata")
META_FIELDS = ("emoji", "os", "primaryEnv", "skillKey", "bundled", "priority", "always", "sandbox")
SANDBOX_KEYS = ("network", "write", "read", "unix")  # metadata.nexus.sandbox: what a skill needs when confined
TEXT_FIELDS = ("emoji", "primaryEnv", "skillKey", "priority", "tool", "verify", "runner", "script")
FLAG_FIELDS = ("bundled", "always", "requiresAuth")


def now_iso(t=None):
    """A time as ISO 8601 UTC with milliseconds (time, not datetime: it is cheaper to import)."""
    t = time.time() if t is None else t
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def new_id(random_bytes):
    """A fresh id (a session's, a job's): when it was made, readable and sortable, then random."""
    import secrets  # only where an id is made (a session, a job): it brings random, hmac and base64

    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(random_bytes)


def parse_iso(ts):
    """An ISO 8601 timestamp as an aware UTC datetime, or None."""
    import datetime  # not on the gateway's way: it costs more than all of this module

    try:
        value = datetime.datetime.fromisoformat(ts)  # since 3.11 it reads the "Z" of UTC too
    except (TypeError, ValueError):
        return None
    return value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)


_CAPABILITY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


def is_capability(name):
    """A capability or connector name: lowercase letters, digits, '_' and '-', 1 to 64 characters."""
    return isinstance(name, str) and 0 < len(name) <= 64 and set(name) <= _CAPABILITY_CHARS


MAX_DEPTH = 64  # the deepest nesting nexus reads in a config or a client's file: deeper is hostile, not settings


def too_deep(value, limit=MAX_DEPTH):
    """Whether lists and dicts in `value` nest deeper than `limit` (counted a level at a time, without
    recursion, so that a hostile document is refused before any code that recurses over it)."""
    level, depth = [value] if isinstance(value, (dict, list)) else [], 1
    while level:
        if depth > limit:
            return True
        level = [child for item in level for child in (item.values() if isinstance(item, dict) else item)
                 if isinstance(child, (dict, list))]
        depth += 1
    return False


def string_list(value):
    """A list of strings; OpenClaw skills often write lists as comma-separated strings."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [str(v) for v in value if v not in (None, "")]
    return []


def default_state(entry=None):
    """A skill's state before any verification: a prompt skill needs none, so it is configured."""
    state = {"version": STATE_VERSION, "configured": bool(entry) and entry.get("type") == "prompt"}
    state.update(execution_of(entry or {}))
    return state


def execution_of(entry):
    """What a skill's state records of how it runs: its type, the binary it runs as `tool` (a script
    skill's runner), and its verify command."""
    tool = entry.get("runner") if entry.get("type") == "script" else entry.get("tool")
    found = {"type": entry.get("type"), "tool": tool, "verify": entry.get("verify")}
    return {key: value for key, value in found.items() if isinstance(value, str) and value}


def is_env_name(name):
    """A portable environment variable name: ASCII letters, digits and _, not starting with a digit."""
    return isinstance(name, str) and name.isascii() and name.replace("_", "A").isalnum() and not name[0].isdigit()


SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASS", "CREDENTIAL", "AUTH")  # PASS: PASSWORD, PASSPHRASE, PASSWD


def secret_name(name):
    """Whether an env var's name says its value is a secret (DEPLOY_TOKEN, DB_PASSWORD), as DECISIONS.md's
    "Usage log and state" has it."""
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


# What an agent says of itself in the environment (skills spec 9.5), logged with each of its calls: the log
# key, the env var, and what it holds: text (None), a count, or a number (temperature). NEXUS_PARENT_CALL is set by the gateway for the program a
# call runs (a crystallized replay's inner calls name the call that ran them).
CONTEXT = (("model", "NEXUS_MODEL", None), ("modelVersion", "NEXUS_MODEL_VERSION", None),
           ("promptTokens", "NEXUS_PROMPT_TOKENS", "count"), ("completionTokens", "NEXUS_COMPLETION_TOKENS", "count"),
           ("temperature", "NEXUS_TEMPERATURE", "number"), ("parentCall", "NEXUS_PARENT_CALL", None))
CONTEXT_CHARS = 100  # the most of an agent's text a log line keeps


def call_context(environ):
    """The CONTEXT keys the environment sets (blanks are unset; a count or number that is not one is left out)."""
    found = {}
    for key, variable, kind in CONTEXT:
        value = (environ.get(variable) or "").strip()
        if value and kind == "count":
            if value.isascii() and value.isdigit() and len(value) < 16:
                found[key] = int(value)
        elif value and kind == "number":
            number = _number(value)
            if number is not None:
                found[key] = number
        elif value:
            found[key] = value[:CONTEXT_CHARS]
    return found


def _number(text):
    """A finite decimal number (0.7, 1, 1e-1), or None: what an agent writes for a temperature."""
    if not (text.isascii() and len(text) < 32) or text.strip("0123456789.eE+-") or not any(c.isdigit() for c in text):
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None


def call_id():
    """An id for one call, unique enough to link the calls it makes to it: when, in ms, and random."""
    return f"{time.time_ns() // 1_000_000:x}-{os.urandom(4).hex()}"


def invocable(entry):
    """True when a model may be offered the skill: `disable-model-invocation: true` keeps one out of every
    list an agent reads and every call an agent makes over MCP (it stays runnable by name from the
    command line), as OpenClaw reads it."""
    flag = (entry.get("extra") or {}).get("disable-model-invocation", "")
    return str(flag).strip().lower() not in ("true", "yes", "on", "1")


def logged_type(entry):
    """The type a call of this entry is logged as: `unknown` for a skill read as a prompt because its
    metadata names a type nexus cannot run."""
    return "unknown" if entry.get("unknownType") else entry.get("type")


MAX_SESSION_CHARS = 128
# The environment a gateway call hands its tool: the skill it runs (what lowers the gate is refused there:
# gateway.plan.refuse_inside), and the profile in force (catalog.scope), which the tool's own calls keep.
GATEWAY_MARK, PROFILE_ENV = "NEXUS_SKILL", "NEXUS_PROFILE"


def is_session_id(value):
    """A session id nexus records: printable text (no line break, no control character, no byte that was
    not UTF-8), 1 to 128 characters. An agent sets NEXUS_SESSION_ID: it is checked where it enters."""
    return isinstance(value, str) and 0 < len(value) <= MAX_SESSION_CHARS and value.isprintable()


_TEXT, _WHOLE, _WHOLES = "text", "a whole number", "whole numbers"
LINE_SHAPE = {"ts": _TEXT, "skill": _TEXT, "type": _TEXT, "ms": "a number", "exit": _WHOLE, "error": _TEXT, "tool": _TEXT,
              "session": _TEXT, "refused": _TEXT, "profile": _TEXT, "sandbox": _TEXT, "client": _TEXT, "token": _TEXT,
              "call": _TEXT, "args": "a list of text", "masked": _WHOLES, "maskedAt": "lists of whole numbers",
              "output": "an object", "truncated": "true or false"}


def line_problem(entry):
    """What makes a usage log line unreadable for those who read it back field by field (sessions,
    crystallize), or None: it must be an object with ts and skill, each field of LINE_SHAPE of its type."""
    if type(entry) is dict and _plain(entry):
        return None
    if not isinstance(entry, dict):
        return "not an object"
    for key in ("ts", "skill"):
        if not isinstance(entry.get(key), str):
            return f"no '{key}'"
    for key, want in LINE_SHAPE.items():
        value = entry.get(key)
        if value is not None and not _IS[want](value):
            return f"'{key}' is not {want}"
    return None


def _plain(entry):
    """True for a line as the gateway writes it, whose every field has its type: a quick answer for the lines
    `nexus sessions` reads by the million; False says nothing (line_problem looks at each field)."""
    get = entry.get
    if not (type(get("ts")) is type(get("skill")) is str and type(get("args", _NO_ARGS)) is list
            and type(get("exit", 0)) is int and type(get("ms", 0)) in (int, float) and _RARE.isdisjoint(entry)):
        return False
    try:  # str.join takes text alone: each text field absent or text, and each argument text, in C
        "".join(map(get, _TEXTS, _ABSENT))
        "".join(get("args", _NO_ARGS))
    except TypeError:
        return False
    return True


def _whole(value):
    return type(value) is int


_IS = {_TEXT: lambda value: isinstance(value, str), _WHOLE: _whole,
       _WHOLES: lambda value: isinstance(value, list) and all(map(_whole, value)),
       "a list of text": lambda value: isinstance(value, list) and all(isinstance(v, str) for v in value),
       "lists of whole numbers": lambda value: isinstance(value, list) and all(
           isinstance(v, list) and all(map(_whole, v)) for v in value),
       "an object": lambda value: isinstance(value, dict),
       "a number": lambda value: isinstance(value, (int, float)) and type(value) is not bool,
       "true or false": lambda value: type(value) is bool}
_TEXTS = tuple(key for key, want in LINE_SHAPE.items() if want == _TEXT)
_RARE = frozenset(LINE_SHAPE).difference(_TEXTS, ("ts", "skill", "args", "exit", "ms"))  # left to line_problem
_ABSENT, _NO_ARGS = itertools.repeat(""), []


def usage_entry(ts, skill, type_, ms, args=None, exit=None, error=None, tool=None, session=None, refused=None,
                masked=None, profile=None, sandbox=None, client=None, token=None):
    """One UsageLogEntry, with only the keys that apply; `masked`: the indexes of the arguments in which a
    secret was masked, given whenever an argument holds ***, so that a literal *** is never taken for one;
    `sandbox`: how a tool or script was confined, or 'none'; `client`: the agent program that made the call
    (an MCP client's name/version); `token`: the name of the bearer token it came with (nexus-mcp --http)."""
    entry = {"ts": ts, "skill": skill, "type": type_, "ms": ms}
    optional = {"args": args, "exit": exit, "error": error, "tool": tool, "session": session, "refused": refused,
                "masked": masked, "profile": profile, "sandbox": sandbox, "client": client, "token": token}
    entry.update((k, v) for k, v in optional.items() if v is not None)
    return entry
