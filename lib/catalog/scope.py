"""Profiles: what one agent may see and run.

A profile is a `[profiles.NAME]` table of the config. Its `skills.allow` and `skills.deny` list skill
names, `*` globs and `capability:NAME` (every skill that implements NAME). A skill is in a profile's
scope when its allow list matches it (no allow list: every skill does) and its deny list does not.
An added skill (`nexus skills add`: from elsewhere, as the sandbox's `untrusted` says) is admitted by
its name or a glob, never by `capability:NAME` in an allow list: what it claims to implement is its
author's word, and adding a skill must not widen what a profile's agent may run. A deny rule of either
kind still keeps it out.

The profile in force is `--profile`, else NEXUS_PROFILE, else the config's `skills.defaultProfile`; none of
them: no profile, every skill in scope. A name the config does not have is an error, never "everything".

This module is on the gateway's hot path: it matches globs by hand, since fnmatch imports `re`.
"""

import os

from .. import config as configlib, paths, schema
from ..errors import NexusError, UsageError

ENV = schema.PROFILE_ENV
FLAG = None  # the NAME of --profile NAME, as this process's command took it (take_option)
# The profile of the connection a server of many (nexus-mcp --http) serves, its token's: set around the work
# done for that connection (a context variable, so that every connection and its worker threads have their own;
# made by served_variable(), since contextvars loads a C module that a command never needs).
SERVED = None
CAPABILITY = "capability:"


class Scope:
    """One profile: its name and what it allows and denies."""

    def __init__(self, name, allow=None, deny=()):
        self.name, self.allow, self.deny = name, allow, list(deny)

    def admits(self, entry):
        """True when the skill of a manifest entry (an invalid one has only its name) is in scope."""
        claims = entry.get("source") not in paths.ADDED  # see the module's docstring
        return (self.allow is None or _matches(self.allow, entry, claims)) and not _matches(self.deny, entry)

    def refusal(self, name):
        return f"{name}: not available to profile {self.name}"


def _matches(patterns, entry, claims=True):
    """True when one of the patterns matches the entry; `capability:NAME` only with `claims`."""
    name = entry.get("name", "")
    implements = entry.get("implements") if claims and isinstance(entry.get("implements"), list) else ()
    for pattern in patterns:
        if pattern.startswith(CAPABILITY):
            if pattern[len(CAPABILITY):] in implements:
                return True
        elif glob(pattern, name):
            return True
    return False


def glob(pattern, name):
    """True when `name` matches `pattern`, where `*` stands for any run of characters (none too)."""
    head, *middle_and_tail = pattern.split("*")
    if not middle_and_tail:
        return name == pattern
    *middle, tail = middle_and_tail
    if not name.startswith(head) or not name.endswith(tail) or len(name) < len(head) + len(tail):
        return False
    at, end = len(head), len(name) - len(tail)
    for part in middle:
        found = name.find(part, at, end)
        if found < 0:
            return False
        at = found + len(part)
    return True


def profiles(config):
    """The config's profiles as {name: Scope}."""
    found = configlib.get(config, "profiles", {})
    return {name: of(name, table) for name, table in found.items()} if isinstance(found, dict) else {}


def of(name, table):
    rules = configlib.get(table, "skills", {}) if isinstance(table, dict) else {}
    return Scope(name, rules.get("allow"), rules.get("deny", []))


def take_option(argv):
    """argv less a leading `--profile NAME` (or `--profile=NAME`), which `nexus`, `nexus-run` and `nexus-mcp`
    take before anything else; NAME is then the profile in force (FLAG; the gateway hands it to every tool
    it runs as NEXUS_PROFILE). Inside a gateway call, whose caller's profile the gateway handed down,
    naming another is refused: no skill widens its own scope."""
    global FLAG
    FLAG = None
    if not argv or not (argv[0] == "--profile" or argv[0].startswith("--profile=")):
        return argv
    name, rest = (argv[1] if argv[1:] else "", argv[2:]) if argv[0] == "--profile" else (argv[0][10:], argv[1:])
    if not name or name.startswith("-"):
        raise UsageError("--profile needs the NAME of a profile (see `nexus profiles`)")
    inherited = os.environ.get(ENV, "").strip()
    if os.environ.get(schema.GATEWAY_MARK) and inherited and name != inherited:
        raise NexusError(f"refused: --profile {name} inside a gateway call of profile {inherited}")
    FLAG = name
    return rest


def served_variable():
    """The context variable of the profile a server serves (SERVED), made on first use, by the server's one
    thread that makes connections."""
    global SERVED
    if SERVED is None:
        import contextvars  # a server of many only (see SERVED)

        SERVED = contextvars.ContextVar("nexus_served_profile", default=None)
    return SERVED


def named():
    """The profile named for this process (--profile, then NEXUS_PROFILE), or None: skills.defaultProfile
    is the user's default, not a profile an agent was given."""
    return FLAG or os.environ.get(ENV, "").strip() or None


def origin(config):
    """What puts the profile in force: "--profile", the variable, or "skills.defaultProfile" (its undoing
    is said with it, where a listing names the profile)."""
    if SERVED is not None and SERVED.get():
        return "the token's profile"
    if FLAG:
        return "--profile"
    return ENV if os.environ.get(ENV, "").strip() else "skills.defaultProfile"


def chosen(config, flag=None):
    """The Scope in force (see the module's docstring; a served connection's first of all), or None;
    UsageError for a profile the config lacks."""
    served = SERVED.get() if SERVED is not None else None
    flag = flag or served or FLAG
    name = flag or os.environ.get(ENV, "").strip() or configlib.get(config, "skills.defaultProfile")
    if not name:
        return None
    table = configlib.get(config, "profiles", {}).get(name) if isinstance(config.get("profiles"), dict) else None
    if table is None:
        known = ", ".join(sorted(configlib.get(config, "profiles", {}))) or "none"
        origin = ("the token's profile" if served and flag == served else "--profile" if flag
                  else ENV if os.environ.get(ENV, "").strip() else "skills.defaultProfile")
        raise UsageError(f"profile '{name}' ({origin}) is not in the config (profiles: {known})")
    return of(name, table)
