"""What an upgrade changes for someone who used an earlier nexus: done and said once, on the first
command after it.

An upgrade step is a row of STEPS: an id that is never reused, and a function of the config that does
what the step needs (a migration) and returns the lines to say, or None when it does not concern
this user. Every pending step runs once, on the first command of a user who had nexus before (a
manifest or the single-file state of the earlier implementation is there); their lines come out as
one notice on stderr, and the ids are recorded in upgrades.json, so nothing is said or done twice. A
new user has nothing to upgrade from: their ids are recorded unsaid.

To add a notice: write a function `def _my_change(config):` that returns the lines (what changed, and
the command that restores the old behaviour) when the change concerns this user, else None, and add
`("my-change", _my_change)` to STEPS. Keep it cheap and quiet: it runs once per user, before a command.

The check on every command is one read of a small file and a stat of this module, which it does not load
(cli.command.upgraded: this is on the gateway's way).
"""

import os

from . import fastjson, fileio, paths
from .errors import BadInput

HEADER = "nexus: this version changes what works for you (said once; `man nexus` has the details):"


def _legacy_files():
    """The single-file state of the earlier implementation (skills spec 7.1), where it is."""
    root = os.path.join(paths.home(), "state")
    return [os.path.join(root, name) for name in ("skill-state.json", "skill-usage.log")]


def _api_key_primary_env(config):
    """An apiKey now stands for the skill's declared primaryEnv only (it used to cover the skill's
    first required env var)."""
    from . import config as configlib  # as in run: only when a step is pending

    entries = configlib.get(config, "skills.entries") or {}
    keyed = sorted(name for name, entry in entries.items() if isinstance(entry, dict) and entry.get("apiKey"))
    if not keyed:
        return None
    return [f"An apiKey in the config now stands for a skill's declared primaryEnv only, as in OpenClaw; it "
            f"no longer fills the first env var a skill requires (skills with a key: {', '.join(keyed)}). "
            f"To give it to that variable again: nexus skill env NAME VAR=VALUE "
            f"(`nexus skills check` warns where a key applies to nothing)."]


def _single_file_state(config):
    """The earlier implementation kept every skill's state in state/skill-state.json and every call in
    state/skill-usage.log (skills spec 7.1): import them into the per-skill files, once, keeping the
    originals. A skill that has a state.json or usage.log of its own already keeps it."""
    from .state import skill_state  # a step may reach into a layer, lazily: it runs once per user

    state_path, log_path = _legacy_files()
    states = fileio.read_json(state_path) if os.path.exists(state_path) else None
    if isinstance(states, dict) and isinstance(states.get("skills"), dict):
        states = states["skills"]  # {"version", "skills": {name: state}}, or {name: state} itself
    imported = set()
    for name, state in (states or {}).items() if isinstance(states, dict) else ():
        if paths.is_valid_name(name) and isinstance(state, dict) and not os.path.exists(paths.state_file(name)):
            with skill_state.Update(name) as current:
                current.update(skill_state.checked({**state, "version": current["version"]})[0])
            imported.add(name)
    lines = _log_lines(log_path)
    logged = 0
    for name, entries in lines.items():
        if os.path.exists(paths.usage_log(name)):
            continue
        with skill_state.Update(name) as current:
            fileio.append(paths.usage_log(name), b"".join(entries))
            current["logEntries"] = current.get("logEntries", 0) + len(entries)
        logged += len(entries)
    if not imported and not logged:
        return None
    return [f"The single-file state of the earlier nexus was imported into the per-skill files: the state "
            f"of {len(imported)} skill(s) from {state_path}, {logged} call(s) from {log_path}; both are kept "
            f"as they were (delete them once you no longer need them)."]


LEGACY_KEYS = {"exitCode": "exit", "durationMs": "ms", "timestamp": "ts"}  # the gateway design's spellings


def _log_lines(path):
    """{skill: [line, ...]} of a usage log holding every skill's calls; lines that are not a call of a
    valid skill name are left out. A line in the gateway design's spelling (exitCode, durationMs) is
    written in the spec's (exit, ms), which stats read: imported, it would otherwise be skipped for ever."""
    found = {}
    try:
        with open(path, "rb") as f:
            for line in f:
                try:
                    entry = fastjson.loads(line)
                except ValueError:
                    continue
                name = entry.get("skill") if isinstance(entry, dict) else None
                if not paths.is_valid_name(name):
                    continue
                if any(key in entry for key in LEGACY_KEYS):
                    for old, new in LEGACY_KEYS.items():
                        if old in entry:
                            value = entry.pop(old)
                            entry.setdefault(new, value)
                    line = fileio.encode(fastjson.dumps(entry))
                found.setdefault(name, []).append(line.rstrip(b"\r\n") + b"\n")
    except FileNotFoundError:
        pass
    return found


def _sandbox_untrusted(config):
    """Skills added from elsewhere (the managed folder's lockfile) now run confined (gateway.sandbox), unless
    skills.sandbox.mode says otherwise."""
    from . import config as configlib  # as in run: only when a step is pending

    if configlib.get(config, "skills.sandbox.mode", "untrusted") == "off":
        return None
    try:
        added = sorted(fileio.read_json(paths.managed_lockfile()).get("skills") or {})
    except (BadInput, AttributeError):
        return None
    if not added:
        return None
    return [f"Skills added with `nexus skills add` now run confined: they read the system and, of your home, what "
            f"they are given, write only their own folders and the one you call them from, and have no network "
            f"(README: Security). Now confined: {', '.join(added)}. To give one the network and a folder it needs: "
            f"nexus skill allow NAME network --read ~/.gitconfig --write ~/projects/app (name one project's folder, "
            f"never ~, which holds your keys, nor a folder of repositories: a grant writes their .git); to run them "
            f"all as before: nexus config set skills.sandbox.mode off"]


def _sandbox_by_construction(config):
    """Confinement grants instead of subtracting (gateway.sandbox): what a skill confined before loses."""
    from . import config as configlib  # as in run: only when a step is pending

    mode = configlib.get(config, "skills.sandbox.mode", "untrusted")
    try:
        added = sorted(fileio.read_json(paths.managed_lockfile()).get("skills") or {})
    except (BadInput, AttributeError):
        added = []
    if mode == "off" or mode == "untrusted" and not added:
        return None
    return ["Confined skills now get what they are given, not everything but a list: they read the system (/usr, "
            "/etc, /opt, ...), their own folder, the folder you call them from and their grants, and nothing else "
            "of your home, /tmp, /run/user, /srv, /mnt or /media (git needs: nexus skill allow NAME --read "
            "~/.gitconfig; any other: nexus skill allow NAME --read PATH); of a grant, never skills.sandbox.deny, "
            "which now holds ~/.claude, ~/.codex, ~/.pgpass and shell histories too; they are handed PATH, HOME, "
            "the locale, the terminal's kind and the variables they declare or your config gives them (nexus skill "
            "env NAME VAR=VALUE), and a proxy with a network grant; called from your home, /, or "
            "inside a dot-folder they do not write it (nexus skill allow NAME --write DIR); .git, .envrc, .vscode "
            "and the like are read-only to them; a network grant no longer opens Unix sockets (nexus config set "
            "skills.entries.NAME.sandbox.unix '[\"PATH\"]'); they have no terminal (/dev/tty), descriptors 0-2 "
            "only, and nothing they start outlives the call (a tmux server started by a confined call ends with it)."]


def _trust_digests(config):
    """An added skill runs only while its files are those it was added with: record them for the skills
    added before (nexus.skill.trust)."""
    from . import trust  # this step alone, once per user

    return trust.upgrade_step(config)


STEPS = (
    ("single-file-state", _single_file_state),
    ("api-key-primary-env", _api_key_primary_env),
    ("sandbox-untrusted", _sandbox_untrusted),
    ("trust-digests", _trust_digests),
    ("sandbox-by-construction", _sandbox_by_construction),
)


def _read():
    try:
        found = fileio.read_json(paths.upgrades_file())
    except BadInput:  # a torn or foreign file is rewritten: at worst a notice is said again
        return {}
    return found if isinstance(found, dict) and isinstance(found.get("done"), dict) else {}


def pending():
    """The ids of the steps not done yet (the cheap check, every command)."""
    try:
        with open(paths.upgrades_file(), "rb") as f:
            done = fastjson.loads(f.read()).get("done")
    except (OSError, ValueError, AttributeError):
        done = None
    return [step for step, _ in STEPS if not isinstance(done, dict) or step not in done]


def _stamp():
    """Every step was done before "through" was kept (or nexus was installed anew): keep it now."""
    with fileio.Locked(paths.upgrades_file(), _read, paths.home()) as doc:
        stamp = paths.upgrade_steps_stamp(doc.setdefault("done", {}))
        if stamp is not None and all(step in doc["done"] for step, _ in STEPS):
            doc["through"] = stamp


def run(warn):
    """Do and say, once, what the steps not done yet bring; quiet when there are none. A step that
    fails is reported and tried again on the next command."""
    if not pending():
        return _stamp()
    from . import config as configlib, schema  # only when a step is pending: the check itself reads one file

    upgrading = os.path.exists(paths.manifest_file()) or any(map(os.path.exists, _legacy_files()))
    said = []
    with fileio.Locked(paths.upgrades_file(), _read, paths.home()) as doc:
        done = doc.setdefault("done", {})
        config = None
        for step, function in STEPS:
            if step in done:
                continue
            if upgrading:
                try:
                    config = configlib.load() if config is None else config
                    said += function(config) or []
                except Exception as e:  # noqa: BLE001 - an upgrade step never stops the command
                    warn(f"upgrade step {step} failed: {e}; it runs again on the next command")
                    continue
            done[step] = schema.now_iso()
        doc["through"] = paths.upgrade_steps_stamp(done) if all(step in done for step, _ in STEPS) else None
    if said:
        warn("\n".join([HEADER, *("  - " + line for line in said)]))
