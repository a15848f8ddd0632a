"""Sessions: the calls an agent made under one NEXUS_SESSION_ID, read back from every skill's usage log.

The logs are streamed, one line at a time: a summary keeps a few figures per session, and one
session's calls are merged across the logs in time order, so memory does not grow with the logs.
Calls logged without a session form a group of their own, shown as "-".
"""

import heapq
import time

from .. import fastjson, paths, schema, shares
from ..state import usage_log

NO_SESSION = "-"  # the id under which calls without a session are shown and asked for


def new_id():
    """A fresh session id: when it began, then 8 random hex digits (schema.new_id)."""
    return schema.new_id(4)


def _since(days):
    return None if days is None else schema.now_iso(time.time() - days * 86400)


def _entries(path, since=None, warn=None):
    """The well-formed entries of one log at or after `since` (ISO strings compare as times); a line that
    is not JSON or not of a log line's shape (schema.line_problem) is skipped, and `warn` told how many."""
    bad, first = 0, None
    problem, valid, names = schema.line_problem, paths.is_valid_name, set()
    try:
        # Text as the bytes give it (a stray byte spoils one line, not the log), lines ended by "\n" alone.
        with open(path, encoding="utf-8", errors="surrogateescape", newline="\n") as f:
            for number, entry in enumerate(fastjson.values(f), 1):
                if problem(entry) or entry["skill"] not in names and not valid(entry["skill"]):
                    bad += 1
                    first = first or number
                    continue
                names.add(entry["skill"])  # a log holds a name or two: each is checked once
                if since is None or entry["ts"] >= since:
                    yield entry
    except FileNotFoundError:
        return
    if bad and warn:
        warn(f"{path}: {bad} unreadable line{'s' if bad > 1 else ''} skipped (line {first}"
             f"{' and more' if bad > 1 else ''})")


def _logs():
    return [paths.usage_log(name) for name in usage_log.logged_skills()]


def refused(entry):
    """Whether the gateway refused the call (its log line's `refused` code): the skill never ran."""
    return type(entry.get("refused")) is str


def failed(entry):
    """Whether a call that ran failed; a refused call did not run, so it never failed (see `refused`)."""
    if refused(entry):
        return False
    return entry.get("exit", 0) != 0 if "exit" in entry else bool(entry.get("error"))


class Summary:
    """A few running figures per session: id, first and last call, calls, skills, failures, refusals (calls
    the gateway refused: never failures), the agent programs that made the calls (`clients`: what an MCP
    client said it is, as name/version) and the profiles they were made under (`profiles`)."""

    def __init__(self):
        self.found = {}

    def add(self, entry, failure=None):
        """Count one entry; `failure` when the caller knows already whether it failed (a refusal never did)."""
        get = entry.get  # once per line of every log: what it costs is most of `nexus sessions`
        session, ts = get("session"), entry["ts"]
        if type(session) is not str:
            session = NO_SESSION
        item = self.found.get(session)
        if item is None:
            item = self.found[session] = {"id": session, "first": ts, "last": ts, "calls": 0, "skills": set(),
                                          "failures": 0, "refused": 0, "clients": set(), "profiles": set()}
        item["calls"] += 1
        if ts < item["first"]:
            item["first"] = ts
        elif ts > item["last"]:
            item["last"] = ts
        item["skills"].add(entry["skill"])
        client, profile = get("client"), get("profile")
        if type(client) is str:
            item["clients"].add(client)
        if type(profile) is str:
            item["profiles"].add(profile)
        if type(get("refused")) is str:  # refused(entry)
            item["refused"] += 1
        else:
            item["failures"] += failed(entry) if failure is None else failure

    def merge(self, found):
        """Add the sessions another Summary found (its `found`)."""
        for session, other in found.items():
            item = self.found.get(session)
            if item is None:
                self.found[session] = other
                continue
            item["calls"] += other["calls"]
            item["failures"] += other["failures"]
            item["refused"] += other["refused"]
            item["first"], item["last"] = min(item["first"], other["first"]), max(item["last"], other["last"])
            item["skills"] |= other["skills"]
            item["clients"] |= other["clients"]
            item["profiles"] |= other["profiles"]

    def result(self):
        """The sessions, the one with the latest call first."""
        ordered = sorted(self.found.values(), key=lambda s: (s["last"], s["id"]), reverse=True)
        return [{**s, **{key: sorted(s[key]) for key in ("skills", "clients", "profiles")}} for s in ordered]


def summary(days=None, warn=None):
    """Every session in the logs (within `days`), as Summary gives them; `warn` hears of unreadable lines.
    Large logs are read in a process per CPU (nexus.shares), each summing its share."""
    since, logs = _since(days), _logs()

    def summed(share):
        found, said = Summary(), {}
        for path in share:
            for entry in _entries(path, since, said.setdefault(path, []).append):
                found.add(entry)
        return found.found, said

    found, said = Summary(), {}
    for gathered, told in shares.mapped(summed, shares.dealt(logs)):
        found.merge(gathered)
        said.update(told)
    for line in (line for path in logs for line in said.get(path, ())) if warn else ():  # in the logs' order
        warn(line)
    return found.result()


def calls(session, warn=None):
    """The calls of one session across every log, oldest first, each numbered from 1 as `session show` shows
    them; `warn` hears of unreadable lines."""
    def of(path):
        for entry in _entries(path, warn=warn):
            if (entry.get("session") if isinstance(entry.get("session"), str) else NO_SESSION) == session:
                yield entry["ts"], entry

    for number, (_, entry) in enumerate(heapq.merge(*(of(p) for p in _logs()), key=lambda pair: pair[0]), 1):
        yield {"n": number, **{k: entry[k] for k in ("ts", "skill", "type", "args", "exit", "ms", "error", "truncated",
                                                     "masked", "maskedAt", "output", "refused")
                               if k in entry}}

