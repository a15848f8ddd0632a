"""Health over time, read from a skill's state alone (no log is read at list time): degraded and drifted.

A skill is degraded when its recent calls fail far more often than they used to: at least
DEGRADED_FAILURES of its last RECENT calls failed while over USED_TO_WORK of its calls of the past
WINDOW_DAYS days before those (at least DEGRADED_FAILURES of them) succeeded: the recent failures are
judged against the record before them, never diluted by it; or when its last verification failed
after one had passed. A skill has drifted when its latest verification printed something else than the
one before it that passed (an expired account, an upgraded binary answering differently), until a
verification prints the same again.
"""

import os
import time

RECENT = 10
DEGRADED_FAILURES = 5
USED_TO_WORK = 0.9
WINDOW_DAYS = 30
HISTORY = 10  # verifications kept in state
IDENTITY_HASH_LIMIT = 32 * 1024 * 1024  # a binary larger than this is told by its size, mtime and inode only


def count(state, ts, ok):
    """Keep the outcomes that judge a skill: its last RECENT calls, and calls and failures per day."""
    state["recent"] = (state.get("recent", []) + [0 if ok else 1])[-RECENT:]
    day, days = ts[:10], state.get("days", {})
    calls, failures = days.get(day, [0, 0])
    days[day] = [calls + 1, failures + (0 if ok else 1)]
    cutoff = time.strftime("%Y-%m-%d", time.gmtime(time.time() - (WINDOW_DAYS + 1) * 86400))
    state["days"] = {d: v for d, v in days.items() if d >= cutoff}


def degraded(state):
    """Why the skill is degraded, in a few words, or None."""
    recent = state.get("recent") or []
    failed = sum(recent)
    cutoff = time.strftime("%Y-%m-%d", time.gmtime(time.time() - WINDOW_DAYS * 86400))
    calls = sum(v[0] for d, v in (state.get("days") or {}).items() if d >= cutoff)
    failures = sum(v[1] for d, v in (state.get("days") or {}).items() if d >= cutoff)
    before, failures_before = calls - len(recent), max(0, failures - failed)  # the record before the recent calls
    if failed >= DEGRADED_FAILURES and before >= DEGRADED_FAILURES and 1 - failures_before / before > USED_TO_WORK:
        return (f"{failed} of its last {len(recent)} calls failed, while {1 - failures_before / before:.0%} of "
                f"its {before} calls before them in the past {WINDOW_DAYS} days succeeded")
    history = state.get("verifications") or []
    if state.get("lastVerifyOk") is False and any(v.get("ok") for v in history[:-1]):
        passed = next(v["ts"] for v in reversed(history[:-1]) if v.get("ok"))
        return f"its verification failed at {history[-1]['ts']}, after passing at {passed}"
    return None


def drifted(state):
    """Why the skill has drifted, or None."""
    drift = state.get("drift")
    return f"its verify command prints something else since {drift['since']}" if isinstance(drift, dict) else None


def verified(state, ts, ok, output_hash):
    """Keep a verification in the history; a passing one that prints something else than the last passing
    one marks the drift, one that prints the same clears it. Returns the drift this one found, or None."""
    history = state.get("verifications") or []
    last_ok = next((v for v in reversed(history) if v.get("ok")), None)
    state["verifications"] = (history + [{"ts": ts, "ok": ok, "outputHash": output_hash}])[-HISTORY:]
    if not ok:
        return None
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
