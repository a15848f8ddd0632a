"""The bearer tokens of `nexus-mcp --http` (`nexus mcp token add|list|revoke`).

A token is shown once, when it is made; the file keeps only its SHA-256 (a token holds 256 random
bits, so a fast hash is as good as a slow one: nothing can be guessed from it), with its name, the
profile it is bound to, when it expires and how many tool calls it may make. The server reads the file
again whenever its stat stamp moves, so that a token added or revoked counts at once.
"""

import hashlib
import hmac
import os
import time

from .. import fileio, paths, schema
from ..errors import NexusError, Refused, UsageError

PREFIX = "nexus_"  # a token says what it is, so that a secret scanner or a person recognises a leaked one
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def loopback(host):
    if host == "localhost":
        return True
    import ipaddress  # a server's address only

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_door(host, no_auth, certfile=None, keyfile=None, store=None):
    """Refuse to serve where anyone could come in (UsageError: --no-auth off loopback) or nobody could
    (NexusError: no usable token); checked before the server's heavy imports."""
    if no_auth and not loopback(host):
        raise UsageError(f"--no-auth serves loopback addresses alone, not {host}: anyone who reaches it could run "
                         "your skills (make a token: nexus mcp token add NAME)")
    if bool(certfile) != bool(keyfile):
        raise UsageError("--certfile and --keyfile go together: the certificate and its private key")
    if not no_auth and not (store or Store()).usable():
        raise NexusError(f"refused: no usable token in {paths.tokens_file()}, so nobody could connect to {host}: "
                         "make one with `nexus mcp token add NAME`" + (", or serve loopback alone with --no-auth"
                                                                      if loopback(host) else ""))


def digest(token):
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def checked_name(name):
    if not (0 < len(name) <= 64 and set(name) <= NAME_CHARS and name[0] not in "-."):
        raise UsageError(f"a token's name is 1 to 64 letters, digits, '-', '_' and '.', not '{name}'")
    return name


def read():
    """{name: record} of the tokens file (none: {})."""
    found = fileio.read_json(paths.tokens_file())
    return found.get("tokens", {}) if isinstance(found, dict) and isinstance(found.get("tokens"), dict) else {}


def changed():
    """`with changed() as tokens:` the tokens as {name: record}, written back (0600) when the block changed them."""
    return _Change()


class _Change(fileio.Locked):
    def __init__(self):
        super().__init__(paths.tokens_file(), lambda: {"version": 1, "tokens": read()}, paths.state_root())

    def __enter__(self):
        return super().__enter__()["tokens"]


def add(name, profile=None, days=None, max_calls=None):
    """A new token called `name`: (the token, its record). NexusError when the name is taken."""
    import secrets  # only where a token is made

    token = PREFIX + secrets.token_urlsafe(32)
    now = time.time()
    record = {"sha256": digest(token), "profile": profile, "created": schema.now_iso(now),
              "expires": schema.now_iso(now + days * 86400) if days else None, "maxCalls": max_calls, "calls": 0}
    with changed() as tokens:
        if checked_name(name) in tokens:
            raise NexusError(f"{paths.tokens_file()}: a token '{name}' exists already: revoke it first "
                             f"(nexus mcp token revoke {name})")
        tokens[name] = record
    return token, {"name": name, **record}


def revoke(name):
    """Forget the token `name`; NexusError when there is none."""
    with changed() as tokens:
        if tokens.pop(name, None) is None:
            raise NexusError(f"{paths.tokens_file()}: no token '{name}' (nexus mcp token list names them)")


def listing():
    """Every token as a record without its hash, with `expired`, sorted by name."""
    now = schema.now_iso()
    return [{"name": name, **{k: v for k, v in record.items() if k != "sha256"}, "expired": expired(record, now)}
            for name, record in sorted(read().items())]


def expired(record, now=None):
    return bool(record.get("expires")) and record["expires"] <= (now or schema.now_iso())


def why_unusable(record, now=None):
    """Why a token may not be used now (expired, its calls spent), or None."""
    if expired(record, now):
        return f"expired at {record['expires']}"
    return None


class Store:
    """The tokens as the server checks them: read again when the file's stat stamp moves."""

    def __init__(self):
        self.stamp, self.by_digest, self.tokens = None, {}, {}

    def current(self):
        try:
            info = os.stat(paths.tokens_file())
            stamp = (info.st_ino, info.st_size, info.st_mtime_ns)
        except FileNotFoundError:
            stamp = None
        if stamp != self.stamp:
            self.tokens = read() if stamp else {}
            self.by_digest = {record.get("sha256"): name for name, record in self.tokens.items()}
            self.stamp = stamp
        return self.tokens

    def usable(self):
        """The names of the tokens that may be used now."""
        now = schema.now_iso()
        return [name for name, record in self.current().items() if why_unusable(record, now) is None]

    def check(self, token):
        """(the token's name, None) when `token` is a usable token; (its name or None, why not) else."""
        tokens = self.current()
        if not token:
            return None, "no bearer token"
        found = digest(token)
        name = self.by_digest.get(found)
        if name is None or not hmac.compare_digest(tokens[name].get("sha256", ""), found):
            return None, "unknown or revoked token"
        why = why_unusable(tokens[name])
        return name, why

    def valid(self, name):
        """True while the token `name` exists and may be used."""
        record = self.current().get(name)
        return record is not None and why_unusable(record) is None

    def valid_digest(self, found):
        """True while a token of this SHA-256 exists and may be used: a token revoked and made again under the
        same name is another token."""
        self.current()
        name = self.by_digest.get(found)
        return name is not None and self.valid(name) and self.tokens[name].get("sha256") == found

    def profile(self, name):
        return (self.current().get(name) or {}).get("profile")


def spend(name):
    """Count one tool call of the token `name`; Refused (a refusal of scope) once it has made its
    --max-calls. Only a token with a limit is counted, under the file's lock."""
    record = read().get(name)
    if not record or not record.get("maxCalls"):
        return
    with changed() as tokens:
        record = tokens.get(name)
        if record is None:
            raise Refused("scope", f"token '{name}' was revoked")
        if record.get("calls", 0) >= record["maxCalls"]:
            raise Refused("scope", f"token '{name}' has made the {record['maxCalls']} calls it may make "
                                   "(nexus mcp token add --max-calls)")
        record["calls"] = record.get("calls", 0) + 1
