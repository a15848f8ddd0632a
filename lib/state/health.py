"""Health over time, read from a skill's state alone (no log is read at list time): degraded and drifted.

A skill is degraded (failing) when its recent calls mostly fail: at least DEGRADED_FAILURES of its last
RECENT calls of the past WINDOW_DAYS days failed, whatever its record before them (a skill that never
worked is no more ready than one that stopped); or when its last verification failed after one had
passed. It comes back when a person's run at a terminal or a `nexus skill verify` succeeds (`recovered`
says which), or when its failures are over WINDOW_DAYS days old. A first-run verification by the gateway
does not bring it back: it passes for a tool that is there, however its calls end. A skill has drifted
when its latest verification printed something else than the one before it that passed (an expired
account, an upgraded binary answering differently), until a verification prints the same again.

`degraded` is the one decision: listings, `nexus status`, the report and what agents are offered all
take it from here.
"""

import os
import time

RECENT = 10
DEGRADED_FAILURES = 5
USED_TO_WORK = 0.9
WINDOW_DAYS = 30
HISTORY = 10  # verifications kept in state
IDENTITY_HASH_LIMIT = 32 * 1024 * 1024  # a binary larger than this is told by its size, mtime and inode only


def count(state, ts, ok, person=False):
    """Keep the outcomes that judge a skill: its last RECENT calls (and the day of each, so that they age
    out), and calls and failures per day. A person's successful run brings a failing skill back."""
    day = ts[:10]
    if ok and person and failing(state):
        recovered(state, ts, "run")
    recent, days_of = _recent(state)
    state["recent"] = (recent + [0 if ok else 1])[-RECENT:]
    state["recentDays"] = (days_of + [day])[-RECENT:]
    days = state.get("days", {})
    calls, failures = days.get(day, [0, 0])
    days[day] = [calls + 1, failures + (0 if ok else 1)]
    cutoff = time.strftime("%Y-%m-%d", time.gmtime(time.time() - (WINDOW_DAYS + 1) * 86400))
    state["days"] = {d: v for d, v in days.items() if d >= cutoff}


def _recent(state):
    """(outcomes, their days) of the recent calls; a state written before days were kept counts its
    outcomes as of today's (they age out with the next calls)."""
    recent = list(state.get("recent") or [])
    days = state.get("recentDays")
    if not isinstance(days, list) or len(days) != len(recent):
        days = [time.strftime("%Y-%m-%d", time.gmtime())] * len(recent)
    return recent, list(days)


def failing(state):
    """(failed, calls) of the recent calls of the window when at least DEGRADED_FAILURES of them failed;
    else None."""
    cutoff = time.strftime("%Y-%m-%d", time.gmtime(time.time() - WINDOW_DAYS * 86400))
    recent = [outcome for outcome, day in zip(*_recent(state)) if day >= cutoff]
    return (sum(recent), len(recent)) if sum(recent) >= DEGRADED_FAILURES else None


def recovered(state, ts, by):
    """A failing skill comes back: its recent failures are forgotten, and `by` ("run", "verify") kept."""
    state["recent"], state["recentDays"] = [], []
    state["recovered"] = {"ts": ts, "by": by}


def degraded(state):
    """Why the skill is degraded, in a few words ("failing 8 of the last 10 calls"), or None."""
    found = failing(state)
    if found:
        return f"failing {found[0]} of the last {found[1]} calls"
    history = state.get("verifications") or []
    if state.get("lastVerifyOk") is False and any(v.get("ok") for v in history[:-1]):
        passed = next(v["ts"] for v in reversed(history[:-1]) if v.get("ok"))
        return f"its verification failed at {history[-1]['ts']}, after passing at {passed}"
    return None


def comes_back(state):
    """The day a failing skill's failures are old enough that it comes back by itself (YYYY-MM-DD), or None."""
    import datetime  # `nexus skill show` of a failing skill only

    failed_days = sorted(d for outcome, d in zip(*_recent(state)) if outcome)
    if len(failed_days) < DEGRADED_FAILURES:
        return None
    # Failing while DEGRADED_FAILURES failures are in the window: until the one that many from the newest leaves it.
    day = datetime.date.fromisoformat(failed_days[-DEGRADED_FAILURES][:10])
    return (day + datetime.timedelta(days=WINDOW_DAYS + 1)).isoformat()


def recovery(state):
    """How a skill that was failing came back, in a few words, or None: a person's run, a verify, or its
    failures aging out of the window."""
    found = state.get("recovered")
    if isinstance(found, dict) and isinstance(found.get("ts"), str):
        how = {"run": "a successful run at a terminal", "verify": "a passing verification"}.get(found.get("by"), "")
        return f"came back at {found['ts']} by {how}" if how else None
    recent, days = _recent(state)
    if sum(recent) >= DEGRADED_FAILURES and not failing(state):
        return f"came back: its failures are over {WINDOW_DAYS} days old"
    return None


def drifted(state):
    """Why the skill has drifted, or None."""
    drift = state.get("drift")
    return f"its verify command prints something else since {drift['since']}" if isinstance(drift, dict) else None


def verified(state, ts, ok, output_hash, recover=True):
    """Keep a verification in the history; a passing one that prints something else than the last passing
    one marks the drift, one that prints the same clears it; with `recover`, a passing one brings a failing
    skill back (not the gateway's first-run verification: see the module's docstring). Returns the drift this one found, or None."""
    history = state.get("verifications") or []
    last_ok = next((v for v in reversed(history) if v.get("ok")), None)
    state["verifications"] = (history + [{"ts": ts, "ok": ok, "outputHash": output_hash}])[-HISTORY:]
    if not ok:
        return None
    if recover and failing(state):
        recovered(state, ts, "verify")
    if last_ok and last_ok.get("outputHash") and output_hash and last_ok["outputHash"] != output_hash:
        state["drift"] = {"since": ts, "was": last_ok["outputHash"], "now": output_hash}
        return state["drift"]
    state.pop("drift", None)
    return None


def identity(path):
    """What tells a binary from another: its path, size, mtime and inode, and its SHA-256 when not huge."""
    import hashlib  # at verification only, never on the gateway's way

    info = os.stat(path)
    found = {"path": path, "size": info.st_size, "mtimeNs": info.st_mtime_ns, "inode": info.st_ino}
    if info.st_size <= IDENTITY_HASH_LIMIT:
        with open(path, "rb") as f:
            found["sha256"] = hashlib.file_digest(f, "sha256").hexdigest()
    return found


def changed(recorded, path):
    """True when the binary at `path` is not the one verified (one stat: this is on the gateway's way)."""
    if not isinstance(recorded, dict):
        return False
    try:
        info = os.stat(path)
    except OSError:
        return True
    return (recorded.get("path"), recorded.get("size"), recorded.get("mtimeNs"), recorded.get("inode")) != (
        path, info.st_size, info.st_mtime_ns, info.st_ino)
