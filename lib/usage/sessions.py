"""Sessions: the calls an agent made under one NEXUS_SESSION_ID, read back from every skill's usage log.

The logs are streamed, one line at a time: a summary keeps a few figures per session, and one
session's calls are merged across the logs in time order, so memory does not grow with the logs.
Calls logged without a session form a group of their own, shown as "-".
"""

import heapq
import time

from .. import fastjson, paths, schema
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
    bad = []
    try:
        with open(path, "rb") as f:
            for number, line in enumerate(f, 1):
                try:
                    entry = fastjson.loads(line.decode("utf-8", "surrogateescape"))
                except ValueError:
                    bad.append(number)
                    continue
                if schema.line_problem(entry) or not paths.is_valid_name(entry["skill"]):
                    bad.append(number)
                elif since is None or entry["ts"] >= since:
                    yield entry
    except FileNotFoundError:
        return
    if bad and warn:
        warn(f"{path}: {len(bad)} unreadable line{'s' if len(bad) > 1 else ''} skipped (line {bad[0]}"
             f"{' and more' if len(bad) > 1 else ''})")


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
        session, ts = entry.get("session"), entry["ts"]
        if type(session) is not str:
            session = NO_SESSION
        item = self.found.get(session)
        if item is None:
            item = self.found[session] = {"id": session, "first": ts, "last": ts, "calls": 0, "skills": set(),
                                          "failures": 0, "refused": 0, "clients": set(), "profiles": set()}
        item["calls"] += 1
        if ts < item["first"]:
            item["first"] = ts
        if ts > item["last"]:
            item["last"] = ts
        item["skills"].add(entry["skill"])
        for key, field in (("client", "clients"), ("profile", "profiles")):
            if type(entry.get(key)) is str:
                item[field].add(entry[key])
        if refused(entry):
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
    """Every session in the logs (within `days`), as Summary gives them; `warn` hears of unreadable lines."""
    found = Summary()
    for path in _logs():
        for entry in _entries(path, _since(days), warn):
            found.add(entry)
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

