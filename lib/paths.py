"""Every file and folder nexus reads or writes; NEXUS_HOME moves all of them.

FILES is the table the man pages' FILES section is generated from; the functions below it give the
same paths, and a test holds each function to its row.
"""

import os

from .errors import UsageError

FILES = (  # (where, what), in the order a reader meets them
    ("$NEXUS_HOME", "The nexus root: ~/nexus unless NEXUS_HOME is set."),
    ("$NEXUS_HOME/nexus.toml", "The config file (TOML), unless NEXUS_CONFIG names another."),
    ("$NEXUS_HOME/.nexus.toml.lock", "Held while a command changes the config (it lies beside the config file)."),
    ("$NEXUS_HOME/skills/", "Workspace skills: the highest precedence."),
    ("$MANAGED_SKILLS_DIR/", "Managed skills (~/.nexus/skills unless MANAGED_SKILLS_DIR is set), placed by "
                             "`nexus skills add`."),
    ("$MANAGED_SKILLS_DIR/.nexus-lock.json", "Where each added skill came from, and the SHA-256 of its files."),
    ("skills/ in the nexus package", "Bundled skills, shipped with nexus."),
    ("skills.load.extraDirs", "Extra skill folders named in the config: the lowest precedence."),
    ("$NEXUS_HOME/state/nexus/skills/manifest.json", "The manifest: the cache of discovered skills."),
    ("$NEXUS_HOME/state/nexus/skills/status-cache.json", "Each skill's status, with what it was computed from."),
    ("$NEXUS_HOME/state/nexus/skills/listing-cache", "The last listing as a whole (its counts, its --json), with "
                                                     "what it was computed from, so an unchanged catalogue is not "
                                                     "computed again."),
    ("$NEXUS_HOME/state/nexus/skills/NAME/state.json", "A skill's state: verification and lifetime counters."),
    ("$NEXUS_HOME/state/nexus/skills/NAME/usage.log", "A skill's usage log, one JSON object per call."),
    ("$NEXUS_HOME/state/nexus/skills/NAME/.lock", "Held while a skill's state or usage log changes."),
    ("$NEXUS_HOME/state/nexus/skills/NAME/data/", "A confined skill's {state}: the folder of its own it keeps, with "
                                                   "its XDG_*_HOME folders."),
    ("$NEXUS_HOME/state/nexus/skills/NAME/tmp/", "A confined skill's {tmp}: its TMPDIR."),
    ("$NEXUS_HOME/state/nexus/skills/NAME/trust.json", "An added skill's files as it was added, updated or trusted: "
                                                       "the SHA-256 and stat stamp of each; it runs only while they hold."),
    ("$NEXUS_HOME/state/nexus/stages/", "While a confined call runs, what it writes to the folder it was called from "
                                        "(an overlay's upper layer), applied after the call; one left by a gateway "
                                        "that died is set aside by the skill's next call."),
    ("$NEXUS_HOME/state/nexus/set-aside/", "What a confined call wrote that would run outside the sandbox later "
                                           "(.git, hooks, a folder on PATH, ...), kept here and never applied."),
    ("$NEXUS_HOME/state/nexus/probes.json", "What confinement this system gives (`nexus status`), as a child process "
                                            "found it, with what that depends on: the boot, the user, the sysctls "
                                            "of user namespaces."),
    ("$NEXUS_HOME/state/nexus/config-cache.json", "The parsed config, so that running a skill never parses TOML."),
    ("$NEXUS_HOME/state/nexus/upgrades.json", "The upgrade steps done and said once (lib/upgrade.py), each "
                                              "with when."),
    ("$NEXUS_HOME/state/nexus/connectors.json", "Each connector's check (`gh auth status`) as verification last ran "
                                                 "it: passed or not, and when."),
    ("$NEXUS_HOME/state/nexus/links.json", "The skill links `nexus skills link` made, by agent folder."),
    ("$NEXUS_HOME/state/nexus/jobs/ID/", "A background run: job.json (how it went), its stdout and stderr."),
    ("$NEXUS_HOME/state/nexus/mcp/tokens.json", "The bearer tokens of nexus-mcp --http (`nexus mcp token`): each "
                                                "one's name, profile, expiry and SHA-256, never the token."),
    ("$NEXUS_HOME/state/nexus/mcp/auth.log", "Requests nexus-mcp --http turned away, one JSON object a line (one "
                                              "an address a second at most; pruned past 1 MB)."),
    ("$NEXUS_HOME/state/nexus/mcp/.lock", "Held while nexus-mcp --http writes auth.log."),
    ("$NEXUS_HOME/state/nexus/mcp/servers.json", "The nexus-mcp servers running (pid, start time, HTTP sessions): "
                                                 "what one killed outright left is swept by the next to start."),
    ("$NEXUS_HOME/state/nexus/mcp/sessions/ID/", "The working folder of an HTTP session, where its tool skills run; "
                                                 "removed when the session ends."),
    ("$NEXUS_HOME/state/nexus/telemetry-cursor.json", "What `nexus telemetry push` sent last of each skill's log: the "
                                                       "line's timestamp, SHA-256 and number."),
    ("$NEXUS_HOME/state/nexus/.telemetry.lock", "Held while `nexus telemetry push` sends and moves its cursor."),
    ("$NEXUS_HOME/state/nexus/cache/", "Scratch space for clones and downloads, emptied after each use."),
    ("$NEXUS_HOME/bin/", "Where `nexus skill install` places downloaded tools."),
    ("PROJECT/nexus.toml", "A project's file: the skills it declares ([[skills]]), its only table nexus reads."),
    ("PROJECT/nexus.lock", "Each declared skill as `nexus skills sync` installed it: source, commit, SHA-256 of its "
                           "files, the permissions it declares, its trust digest."),
    ("PROJECT/.nexus/skills/", "Project skills, placed by `nexus skills sync`: above the workspace while nexus runs "
                               "inside PROJECT."),
    ("$NEXUS_HOME/state/nexus/projects/ID/", "What sync placed in one project on this machine (lock.json), and "
                                             "the trust.json of each of its skills."),
    ("DIR/.cursor/rules/nexus-skills.mdc", "The Cursor rules `nexus skills cursor-rules --write` writes."),
    ("DIR/.cursor/skills/, .claude/skills/, .codex/skills/, .agents/skills/",
     "Agent folders `nexus skills link` links ready skills into."),
)

CURSOR_RULES = os.path.join(".cursor", "rules", "nexus-skills.mdc")
AGENT_FOLDERS = {  # agent -> the folder of skills it documents reading in a project
    "cursor": ".cursor/skills", "claude-code": ".claude/skills", "codex": ".codex/skills", "agents": ".agents/skills",
    "gemini": ".gemini/skills", "opencode": ".opencode/skills", "copilot": ".github/skills", "kiro": ".kiro/skills",
    "roo-code": ".roo/skills", "windsurf": ".windsurf/skills", "cline": ".cline/skills"}

ADDED = ("nexus-managed", "nexus-project")  # the sources of skills added from elsewhere: confined, bound to trust
PROJECT_FILE, PROJECT_LOCK = "nexus.toml", "nexus.lock"

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def is_valid_name(name):
    """1 to 64 lowercase letters, digits and single hyphens, as the Agent Skills reference validator
    reads a name: letters of any script, written in NFKC form ('café')."""
    if isinstance(name, str) and name.isascii():  # the common case, without unicodedata
        return 0 < len(name) <= 64 and set(name) <= _NAME_CHARS and name[0] != "-" != name[-1] and "--" not in name
    return name_problem(name) is None


def name_problem(name):
    """What is wrong with a skill name, in a few words, or None when it is valid."""
    if not isinstance(name, str) or not name:
        return "a name is 1-64 characters"
    import unicodedata  # a name that is not plain ASCII, or a rejected one: is_valid_name's common case never comes here

    if unicodedata.normalize("NFKC", name) != name:
        return f"write it as {unicodedata.normalize('NFKC', name)!r} (NFKC form)"
    if len(name) > 64:
        return f"it is {len(name)} characters; the limit is 64"
    if name != name.lower():
        return "it must be lowercase"
    odd = sorted({c for c in name if not (c.isalnum() or c == "-")})
    if odd:
        return "it has " + ", ".join(map(repr, odd)) + ": use letters, digits and single hyphens"
    if name[0] == "-" or name[-1] == "-":
        return "it cannot start or end with a hyphen"
    if "--" in name:
        return "it cannot have two hyphens in a row"
    return None


# Letters of other scripts drawn like Latin ones (Unicode's confusables for a-z, the common ones).
_LOOKALIKES = str.maketrans({**dict.fromkeys("аɑα", "a"), "в": "b", **dict.fromkeys("сϲ", "c"), "ԁ": "d",
                             **dict.fromkeys("еҽ", "e"), "ɡ": "g", "һ": "h", **dict.fromkeys("іιӏ", "i"), "ј": "j",
                             "κ": "k", **dict.fromkeys("ӏ", "l"), "м": "m", "п": "n", **dict.fromkeys("оοσ", "o"),
                             **dict.fromkeys("рρ", "p"), "ԛ": "q", "г": "r", "ѕ": "s", "т": "t", **dict.fromkeys(
                                 "υս", "u"), "ν": "v", "ԝ": "w", **dict.fromkeys("хχ", "x"), **dict.fromkeys("уγ", "y"),
                             "ᴢ": "z"})


def lookalike(name):
    """Why a valid name could pass for another, or None: letters of another script drawn like Latin ones
    ('gіthub' with a Cyrillic і reads as 'github'), or letters of two scripts in one name."""
    if name.isascii():
        return None
    import unicodedata  # a name that is not plain ASCII only

    plain = name.translate(_LOOKALIKES)
    if plain.isascii():
        return f"it reads as '{plain}' (letters of another script drawn like Latin ones: {ascii(name)})"
    scripts = sorted({unicodedata.name(c, "?").split()[0] for c in name if c.isalpha()})
    if len(scripts) > 1:
        return f"it mixes {' and '.join(scripts)} letters ({ascii(name)})"
    return None


def contains(top, path):
    """True when `path`, its symlinks followed, is `top` (its own followed too) or lies inside it."""
    return within(os.path.realpath(path), os.path.realpath(top))


def within(path, folder):
    """True when the absolute `path` is `folder` or lies inside it, as written (no link followed)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def checked_name(name):
    """`name` when it is a valid skill name; UsageError otherwise. Call before a name becomes a path."""
    if not is_valid_name(name):
        raise UsageError(f"invalid skill name {name!r}: {name_problem(name)}")
    return name


def _from_env(name, default):
    """The folder or file an environment variable names (default: `default`), ~ expanded. A relative one
    is refused: it would name another place in every folder a command or a tool it starts runs in."""
    value = os.environ.get(name)
    path = os.path.expanduser(value or default)
    if not os.path.isabs(path):
        raise UsageError(f"{name} must be an absolute path (or start with ~), not '{value}'")
    return os.path.normpath(path)


def home():
    return _from_env("NEXUS_HOME", "~/nexus")


def config_file():
    return _from_env("NEXUS_CONFIG", os.path.join(home(), "nexus.toml"))


def workspace_skills():
    return os.path.join(home(), "skills")


def managed_skills():
    return _from_env("MANAGED_SKILLS_DIR", "~/.nexus/skills")


def managed_lockfile():
    return os.path.join(managed_skills(), ".nexus-lock.json")


def bundled_skills():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "skills")


def state_root():
    return os.path.join(home(), "state", "nexus")


def skills_state():
    return os.path.join(state_root(), "skills")


def manifest_file():
    return os.path.join(skills_state(), "manifest.json")


def status_cache():
    return os.path.join(skills_state(), "status-cache.json")


def listing_cache():
    return os.path.join(skills_state(), "listing-cache")


def skill_state_dir(name):
    """The state folder of one skill; the name is validated before it becomes a path."""
    return os.path.join(skills_state(), checked_name(name))


def state_file(name):
    return os.path.join(skill_state_dir(name), "state.json")


def usage_log(name):
    return os.path.join(skill_state_dir(name), "usage.log")


def trust_file(name, project=None):
    """An added skill's trust.json; a project skill's is kept per project (`project`: its root)."""
    if project is None:
        return os.path.join(skill_state_dir(name), "trust.json")
    return os.path.join(project_state(project), "skills", checked_name(name), "trust.json")


def project_root(start=None):
    """The project nexus runs in: the nearest folder from `start` (the current one) up that holds nexus.lock,
    or a nexus.toml with [[skills]], and is this user's; None when there is none. $NEXUS_HOME (the user's own
    nexus.toml) is never a project, and nothing at or above $HOME is (its .nexus/ is the user's own)."""
    try:
        folder = os.path.realpath(start) if start else os.getcwd()  # the kernel's answer: links resolved already
    except OSError:  # the current folder was removed
        return None
    user = os.path.expanduser("~")
    while folder not in (user, "/"):  # realpath is slow in Python: taken only for a folder that qualifies
        if _mine(os.path.join(folder, PROJECT_LOCK)) or _declares(os.path.join(folder, PROJECT_FILE)):
            if folder in (os.path.realpath(user), os.path.realpath(home())):
                return None
            return folder
        folder = os.path.dirname(folder)
    return None


def _mine(path):
    try:
        return os.stat(path).st_uid == os.getuid()
    except OSError:
        return False


def _declares(path):
    """True when the file is this user's and a line of it opens a [[skills]] table (read by hand: this is
    on the gateway's hot path, which never imports tomllib)."""
    if not _mine(path):
        return False
    try:
        with open(path, "rb") as f:
            text = f.read(1 << 20)
    except OSError:
        return False
    return any(line.replace(b" ", b"").replace(b"\t", b"").startswith(b"[[skills]]") for line in text.splitlines())


def project_skills(root):
    return os.path.join(root, ".nexus", "skills")


def project_state(root):
    """$NEXUS_HOME/state/nexus/projects/ID: what this machine keeps of one project (ID: its folder's digest)."""
    import hashlib  # a project skill's call only

    return os.path.join(state_root(), "projects", hashlib.sha256(os.fsencode(root)).hexdigest()[:16])


def skill_lock(name):
    return os.path.join(skill_state_dir(name), ".lock")


def config_cache():
    return os.path.join(state_root(), "config-cache.json")


def sandbox_folders(name):
    """(its {state}, its {tmp}): a confined skill's own folders; the name is validated before it becomes a path."""
    folder = skill_state_dir(name)
    return os.path.join(folder, "data"), os.path.join(folder, "tmp")


def stages_dir():
    return os.path.join(state_root(), "stages")


def probes_file():
    return os.path.join(state_root(), "probes.json")


def set_aside_dir():
    return os.path.join(state_root(), "set-aside")


def upgrades_file():
    return os.path.join(state_root(), "upgrades.json")


def upgrade_steps_stamp(done):
    """What upgrades.json keeps as "through" once every step of nexus.upgrade is done: that module's size and
    mtime and the number of steps done. Every command compares it (cli.command.upgraded) without loading the
    module: a nexus installed anew, or a step added, changes it. None where the module cannot be seen."""
    try:
        found = os.stat(os.path.join(os.path.dirname(__file__), "upgrade.py"))
    except OSError:
        return None
    return [found.st_size, found.st_mtime_ns, len(done)]


def connectors_file():
    return os.path.join(state_root(), "connectors.json")


def links_file():
    return os.path.join(state_root(), "links.json")


def jobs_dir():
    return os.path.join(state_root(), "jobs")


def mcp_state():
    return os.path.join(state_root(), "mcp")


def tokens_file():
    return os.path.join(mcp_state(), "tokens.json")


def auth_log():
    return os.path.join(mcp_state(), "auth.log")


def mcp_lock():
    return os.path.join(mcp_state(), ".lock")


def mcp_servers():
    return os.path.join(mcp_state(), "servers.json")


def session_folder(session):
    """The working folder of an HTTP session; its id (a server's own, `mcp-` and hex digits) is a file name."""
    if not session or "/" in session or session.startswith("."):
        raise UsageError(f"not a session id for a folder: {session!r}")
    return os.path.join(mcp_state(), "sessions", session)


def telemetry_cursor():
    return os.path.join(state_root(), "telemetry-cursor.json")


def telemetry_lock():
    return os.path.join(state_root(), ".telemetry.lock")


def cache_dir():
    return os.path.join(state_root(), "cache")


def bin_dir():
    return os.path.join(home(), "bin")


def mtime(path):
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def folder_sources(folders):
    """Folders named on a command line, as sources (the last one wins a name)."""
    return [("nexus-extra", os.path.abspath(f)) for f in folders]


def source_stamps(source_list):
    """What the manifest records of each source, to tell when one changed."""
    return [{"source": s, "path": p, "mtimeNs": mtime(p)} for s, p in source_list]
