"""The keys nexus knows in its config, in one table: validation at load and at every write, `nexus config`,
the CONFIG section of the man page and the shell completions all read it.

A key is a dotted path; `<skill>` stands for a skill's key (its skillKey, else its name), `<VAR>` for an
environment variable's name, `<capability>` for a capability's and `<profile>` for a profile's (a
name as a skill's is). The `skills`, `profiles` and `capabilities` tables are nexus's own: a key there that this table does not name, or a value of the wrong type, is an
error, so a misspelt `enabeld = false` never leaves a skill enabled. Keys outside them belong to the
user and to the skills whose `requires.config` names them.
"""

import os

from ..errors import BadInput
from ..paths import is_valid_name
from ..schema import SECRET, is_capability, is_env_name

RULES = (
    "The `skills`, `profiles` and `capabilities` tables are nexus's own: an unknown key there, or a value of the wrong type "
    "or out of range, is an error naming the file, the line, the key and what it needs (exit 2), whatever the "
    "command; nothing guesses a skill enabled. Other keys are yours, and the paths that skills name in "
    "`requires.config`. A folder in a list must be absolute or start with ~, so that what runs never depends "
    "on the current folder. `nexus config set`, `nexus skill enable` and the other commands that change the "
    "config edit it in place: only the changed key's lines change, comments and formatting stay. "
    "`nexus config list` shows a secret (an apiKey, an env value) as ***; `nexus config get` prints it."
)


class Type:
    """What a value must be: `name` as `--type` and the man page say it, `needs` as an error says it. A
    list's items must pass `item`; a table's keys are checked one by one, as keys of their own."""

    def __init__(self, name, needs, check=None, item=None):
        self.name, self.needs, self.item, self._check = name, needs, item, check

    def check(self, value):
        if self._check:
            return self._check(value)
        if self.item:
            return isinstance(value, list) and all(self.item(x) for x in value)
        return isinstance(value, dict)

    def culprit(self, value):
        """The part of a value that fails: a list's first bad item, else the value."""
        if self.item and isinstance(value, list):
            return next(x for x in value if not self.item(x))
        return value


def _text(value):
    return isinstance(value, str) and "\0" not in value


def _folder(value):
    return _text(value) and (value.startswith("~") or os.path.isabs(value)) and _plain(value)


def _plain(value):
    """No . or .. in a folder: {state}/../../other/data would name another skill's state as if it were its own."""
    return not {".", ".."} & set(value.split("/"))


BOOL = Type("bool", "true or false", lambda v: isinstance(v, bool))
COUNT = Type("int", "a whole number from 1", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1)
TEXT = Type("string", "text", _text)
NAMES = Type("list", 'a list of skill names, as ["tmux", "github"]', item=_text)
FOLDERS = Type("list", 'a list of folders, each absolute or starting with ~ (no . or ..), as ["~/bin"]', item=_folder)
ENV_NAMES = Type("list", 'a list of environment variable names, as ["DEPLOY_TOKEN"]', item=is_env_name)
ENV = Type("table", 'a table of environment variables, as { NAME = "value" }')
PLACES = Type("list", 'a list of folders, each absolute, or starting with ~, {cwd}, {tmp} or {state} (no . or ..), as '
              '["{cwd}"]', item=lambda v: _folder(v) or _text(v) and v.split("/")[0] in ("{cwd}", "{tmp}", "{state}")
              and _plain(v))


# What a confined skill never reads inside what it is given (a read grant of ~, say): keys, tokens, password
# stores, agents' credentials, shell histories (commands typed with secrets in them), browser profiles. A * stands
# for any run of characters in a name.
SECRETS = ["~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube", "~/.netrc",
           "~/.docker/config.json", "~/.password-store", "~/.local/share/keyrings", "~/.config/gh",
           "~/.git-credentials", "~/.config/git/credentials", "~/.npmrc", "~/.pypirc", "~/.cargo/credentials",
           "~/.cargo/credentials.toml", "~/.gem/credentials", "~/.m2/settings.xml", "~/.m2/settings-security.xml",
           "~/.claude", "~/.claude.json", "~/.codex", "~/.gemini", "~/.config/op", "~/.pgpass", "~/.my.cnf",
           "~/.vault-token", "~/.terraform.d", "~/.config/rclone", "~/.s3cfg", "~/.boto", "~/.oci",
           "~/.config/doctl", "~/.config/hub", "~/.config/glab-cli", "~/.*_history", "~/.lesshst",
           "~/.local/share/fish/fish_history", "~/.config/atuin", "~/.local/share/atuin", "~/.mozilla",
           "~/.thunderbird", "~/.pki", "~/.config/google-chrome", "~/.config/chromium", "~/.config/BraveSoftware",
           "~/Library/Keychains"]


def _choice(*values):
    return Type("string", " or ".join(f'"{v}"' for v in values), lambda v: v in values)


def _pattern(value):
    """A skill name, a glob of one (`*` for any run of characters), or `capability:NAME`."""
    if _text(value) and value.startswith("capability:"):
        return is_capability(value[len("capability:"):])
    return _text(value) and (value == "*" or is_valid_name(value.replace("*", "x")))


PATTERNS = Type("list", 'a list of skill names, globs and capability:NAME, as ["git*", "capability:email_sender"]',
                item=_pattern)
PROFILE = Type("string", "the name of a [profiles.NAME] table", is_valid_name)


class Key:
    """One key: its dotted path (with placeholders), type, default (None: unset), one-line meaning, and
    whether its value is a secret that `nexus config list` never shows."""

    def __init__(self, path, type, meaning, default=None, secret=False):
        self.path, self.type, self.meaning, self.default, self.secret = path, type, meaning, default, secret
        self.parts = tuple(path.split("."))


KEYS = (
    Key("skills.allowBundled", NAMES, "Only these bundled skills are enabled; unset, every bundled skill is."),
    Key("skills.binPath", FOLDERS, "Folders searched for tools before PATH, and put before PATH for them.", []),
    Key("skills.load.extraDirs", FOLDERS, "Extra skill folders: the source of lowest precedence.", []),
    Key("skills.offerDegradedReplays", BOOL, "true keeps offering agents a crystallized skill that is degraded; by "
        "default it is set aside, and the skills it replays are named instead.", False),
    Key("skills.log.maxEntries", COUNT, "A usage log keeps at most this many entries (oldest pruned first).", 5000),
    Key("skills.log.maxBytes", COUNT, "A usage log keeps at most this many bytes (oldest entries pruned first).",
        2 * 1024 * 1024),
    Key("skills.entries.<skill>.enabled", BOOL, "false disables the skill: listed as disabled, refused by skill run.",
        True),
    Key("skills.entries.<skill>.apiKey", TEXT, "The skill's key, given to its tool as the skill's primaryEnv.",
        secret=True),
    Key("skills.entries.<skill>.env", ENV, "Environment variables given to the skill's tool.", {}, secret=True),
    Key("skills.entries.<skill>.env.<VAR>", TEXT, "One environment variable given to the skill's tool.", secret=True),
    Key("skills.entries.<skill>.secretEnv", ENV_NAMES, "Env vars of the skill's env whose values are secrets, masked "
        "as *** wherever nexus writes or shows them (`nexus skill env --secret`); a name with KEY, TOKEN, SECRET, "
        "PASS, CREDENTIAL or AUTH in it is one already.", []),
    Key("skills.sandbox.mode", _choice("off", "untrusted", "all"), "Which skills run confined: none; those added "
        "from elsewhere (the managed folder); all. See SANDBOX.", "untrusted"),
    Key("skills.sandbox.fallback", _choice("refuse", "warn"), "Where confinement cannot be given: refuse the call, "
        "or warn and run it with what can be given.", "refuse"),
    Key("skills.sandbox.deny", FOLDERS, "What a confined skill may not read inside what it is given (a * stands for "
        "any run of characters in a name; ~ is your home, as $HOME and your account say it): secrets, and nexus's own "
        "config and state besides.", SECRETS),
    Key("skills.entries.<skill>.sandbox.network", BOOL, "Whether the skill may use the network when confined "
        "(instead of its declaration)."),
    Key("skills.entries.<skill>.sandbox.write", PLACES, "The folders the skill may write when confined, besides "
        "{tmp} and {state} (instead of its declaration)."),
    Key("skills.entries.<skill>.sandbox.unix", PLACES, "The Unix sockets the skill may reach when confined (a network "
        "grant does not include them; instead of its declaration)."),
    Key("skills.entries.<skill>.sandbox.read", PLACES, "Folders the skill may read when confined, besides the system, "
        "its own folder, {cwd}, {tmp} and {state} (instead of its declaration); one of the deny list is read whole."),
    Key("skills.defaultProfile", PROFILE, "The profile in force when neither --profile nor NEXUS_PROFILE names one; "
        "unset, no profile: every skill."),
    Key("profiles.<profile>.skills.allow", PATTERNS, "The skills this profile may see and run; unset, every skill."),
    Key("profiles.<profile>.skills.deny", PATTERNS, "Skills this profile may not see or run, though allowed.", []),
    Key("mcp.publishRunnable", BOOL, "nexus-mcp publishes tool and script skills through the Skills extension too "
        "(skills/list, skill:// files): a host that runs their files itself bypasses the gate, the log and the "
        "sandbox.", False),
    Key("mcp.tools", _choice("each", "loader", "auto"), "What nexus-mcp's tools/list holds: each (a tool per "
        "skill), loader (run_skill, list_skills, read_skill) or auto (loader from 40 offered tool skills); "
        "nexus-mcp --tools overrides it.", "auto"),
    Key("telemetry.enabled", BOOL, "nexus-mcp exports a span and metrics per call over OpenTelemetry (the extra "
        "nexus-skills[otel]); on by itself when OTEL_EXPORTER_OTLP_ENDPOINT is set.", False),
    Key("telemetry.endpoint", TEXT, "The OTLP/HTTP endpoint (http://HOST:4318) where nexus-mcp and `nexus "
        "telemetry push` send, when OTEL_EXPORTER_OTLP_ENDPOINT is not set."),
    Key("capabilities.<capability>.prefer", NAMES, "The skills that provide the capability, in the order "
        "`nexus capability resolve` prefers them.", []),
)

NAMESPACES = tuple(dict.fromkeys(key.parts[0] for key in KEYS))  # the tables that are nexus's own


def split(dotted):
    """A dotted key as its parts; BadInput for an empty part."""
    parts = tuple(dotted.split("."))
    if not all(parts):
        raise BadInput(f"'{dotted}' is not a key: its parts are separated by single dots")
    return parts


def _fits(pattern, parts):
    """True when `parts` matches `pattern`; a <VAR> part must be an environment variable's name."""
    named = {"<VAR>": is_env_name, "<profile>": is_valid_name}
    return len(pattern) == len(parts) and all(
        p == s or p.startswith("<") and named.get(p, bool)(s) for p, s in zip(pattern, parts))


def find(parts):
    """The Key that names `parts`, or None."""
    return next((key for key in KEYS if _fits(key.parts, parts)), None)


def is_table(parts):
    """True when nexus reads `parts` as a table of keys: skills, skills.log, skills.entries.<skill>, ..."""
    return any(len(key.parts) > len(parts) and _fits(key.parts[:len(parts)], parts) for key in KEYS)


def is_ours(parts):
    return parts[0] in NAMESPACES


class Invalid(BadInput):
    """A value nexus cannot use, or a key it does not know, in nexus's own tables: `parts` says where."""

    def __init__(self, parts, message):
        super().__init__(message)
        self.parts = parts


def validate(config):
    """Raise Invalid for the first key of nexus's own tables that is unknown or holds a value of the
    wrong type."""
    for name in NAMESPACES:
        if name in config:
            _walk(config[name], (name,))


def _walk(value, parts):
    key = find(parts)
    if key is None and not is_table(parts):
        raise Invalid(parts, unknown(parts))
    if not (key.type.check(value) if key else isinstance(value, dict)):
        needs = key.type.needs if key else "a table"
        got = "" if key and key.secret else f", not {shown(key.type.culprit(value) if key else value)}"
        raise Invalid(parts, f"{'.'.join(parts)} needs {needs}{got}")  # a secret is never shown
    if isinstance(value, dict):
        for name, item in value.items():
            _walk(item, (*parts, name))


def unknown(parts):
    """'KEY is not a key nexus knows', with the closest key it does know."""
    dotted = ".".join(parts)
    if len(parts) == 5 and parts[:2] == ("skills", "entries") and parts[3] == "env":
        return f"{dotted}: '{parts[-1]}' is not an environment variable name (letters, digits and _)"
    if len(parts) >= 2 and parts[0] == "profiles" and not is_valid_name(parts[1]):
        return f"{dotted}: '{parts[1]}' is not a profile name (lowercase letters, digits and single hyphens)"
    close = suggestion(parts)
    return f"{dotted} is not a key nexus knows" + (f" (did you mean {close}?)" if close else "")


def suggestion(parts, others=()):
    """The known key (placeholders filled in from `parts`) or one of `others` closest to `parts`, or None."""
    import difflib  # a hint for a key not found only

    candidates = list(others)
    for key in KEYS:
        given = (*parts, *key.parts[len(parts):])
        candidates.append(".".join(g if k.startswith("<") else k for k, g in zip(key.parts, given)))
    close = difflib.get_close_matches(".".join(parts), candidates, n=1, cutoff=0.75)
    return close[0] if close else None


def shown(value):
    """A value as an error message quotes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        import json  # an error message only: json brings `re`

        return json.dumps(value if len(value) <= 40 else value[:40] + "...", ensure_ascii=False)
    if isinstance(value, (list, dict)):
        return "a list" if isinstance(value, list) else "a table"
    return str(value)


def lookup(config, parts):
    """(found, value) at `parts` in a config document."""
    node = config
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def effective(config, parts):
    """(value, origin): the file's value ('file'), else the key's default ('default'), else (None, None)."""
    found, value = lookup(config, parts)
    if found:
        return value, "file"
    key = find(parts)
    if key is not None and key.default is not None:
        return key.default, "default"
    return None, None


def listed(config):
    """The keys `nexus config list` shows, of a valid config: each key without a placeholder; for each
    skill the file has an entry for, `enabled` and what the entry sets; then every other key the file
    sets."""
    found = [key.parts for key in KEYS if "<" not in key.path]
    entries = lookup(config, ("skills", "entries"))[1] or {}
    for skill, table in entries.items():
        entry = ("skills", "entries", skill)
        found += [(*entry, "enabled"), *[p for p in leaves(table, entry) if p != (*entry, "enabled")]]
    return found + [parts for parts in leaves(config) if parts not in found]


def leaves(node, parts=()):
    """The path of every value in a document that is not a table."""
    if not isinstance(node, dict):
        yield parts
        return
    for name, value in node.items():
        yield from leaves(value, (*parts, name))


TYPES = {"bool": bool, "int": int, "string": str, "list": list, "table": dict}  # --type, and what it reads


def _set_by(parts, value):
    """Each key a value set at `parts` sets: `parts` itself, and for a table every key inside it."""
    yield parts
    if isinstance(value, dict):
        for name, inner in value.items():
            yield from _set_by((*parts, str(name)), inner)


def sets_api_key(parts, value):
    """Whether setting `value` at `parts` sets a skill's apiKey, itself or through a table above it."""
    return any(key is not None and key.path.endswith(".apiKey") for key in map(find, _set_by(parts, value)))


def masked(parts, value):
    """A value as nexus shows it: a secret, itself or inside a table, as ***."""
    key = find(parts)
    if key is not None and key.secret:
        return SECRET
    if isinstance(value, dict):
        return {name: masked((*parts, str(name)), inner) for name, inner in value.items()}
    return value


def may_hold_secret(parts):
    """Whether a value at `parts` is, or may hold, a secret: an error never quotes it."""
    key = find(parts)
    return key.secret if key is not None else is_table(parts) or is_ours(parts)


def value_of(text, kind=None):
    """A value given on the command line: read as TOML when it parses as one (`true`, `5000`, `["a"]`), else
    as text; `kind` (a name in TYPES) insists on that type: ValueError when the text is not one."""
    if kind == "string":
        return text
    import tomllib  # `nexus config set` only: loading the config reads its JSON cache

    try:
        parsed = tomllib.loads(f"v = {text}")
    except tomllib.TOMLDecodeError:
        parsed = {}
    found = list(parsed) == ["v"]  # nothing after the value: "1\nx = 2" is text
    if kind is None:
        return parsed["v"] if found else text
    if found and type(parsed["v"]) is TYPES[kind]:  # `is`: True is not an int here
        return parsed["v"]
    raise ValueError(f"not {kind}")


def problems(config, skills, bundled):
    """What `nexus skills check` warns of in a config nexus can use: [(key parts, message)] for a name in
    skills.allowBundled that is no bundled skill, a skills.entries table that names no skill, and an
    apiKey no tool would get. `skills`: {a skill's key (skillKey, else name): whether it names a
    primaryEnv}, of the skills in the catalogue; `bundled`: the names of the bundled skills."""
    found = []
    for name in lookup(config, ("skills", "allowBundled"))[1] or []:
        if name not in bundled:
            found.append((("skills", "allowBundled"), f"'{name}' is not a bundled skill"))
    for key, table in (lookup(config, ("skills", "entries"))[1] or {}).items():
        if key not in skills:
            found.append((("skills", "entries", key), "no skill has this name or skillKey"))
        elif "apiKey" in table and not skills[key]:
            found.append((("skills", "entries", key, "apiKey"),
                          "the skill names no env var for a key (primaryEnv): no tool gets it"))
    return found


def writable(parts, force, required):
    """The Key of a key `nexus config set` may write (None for one that is not nexus's); BadInput for a
    key nexus does not know, unless `force` or a skill's requires.config names it (`required()`: the
    config paths the skills name, asked for only then)."""
    key = find(parts)
    if key is not None or is_table(parts):
        return key
    if is_ours(parts):
        raise BadInput(unknown(parts))
    if force:
        return None
    wanted = required()
    if ".".join(parts) not in wanted:
        close = suggestion(parts, wanted)
        hint = f" (did you mean {close}?)" if close else ""
        raise BadInput(f"{'.'.join(parts)} is not a key nexus knows{hint}; --force sets it anyway")
    return None
