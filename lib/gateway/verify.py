"""Verification: "verify once on first use, trust until failure".

A skill is verified when its requirements are met and its verify command (run with /bin/sh -c, the
skill's environment and a timeout) exits 0. The outcome is recorded in its state, with fingerprints
of the SKILL.md it vouched for and of what the command printed.

Architecture invariant: only `nexus-verify` (and the porcelain's verify commands) and the first
`nexus skill run` of a skill call verify(); listing, refreshing and showing never do.
"""

import hashlib
import os
import time

from .. import schema
from ..catalog import scope, status
from ..errors import NexusError
from ..state import health, skill_state
from . import plan, process

VERIFY_TIMEOUT = 30
OUTPUT_LIMIT = 1 << 20  # of each of its streams a verify command may leave in memory: its hash and its error need no more


def verify(entry, config, timeout=VERIFY_TIMEOUT, confined=None, warn=None, on_start=None, cancelled=None,
           environment=None):
    """Check requirements, run the verify command, record the outcome in state; returns the outcome. The
    command runs confined as the skill's calls do (`confined`: as the policy says, unless told); warn(text)
    hears that it could only be confined less, where the config accepts that.

    on_start(child): called once the verify command runs, so that another thread can kill it (a front
    end's cancel); cancelled(): true when it did, and then nothing is recorded (NexusError): a
    verification cut short says nothing about the skill. environment: (env, secrets) of the call that
    verifies first (gateway.call), else the skill's as plan.environment makes it for no caller."""
    started = time.monotonic()
    outcome = {"skill": entry["name"], "type": entry["type"], "verify": entry.get("verify"),
               "ok": True, "exit": None, "error": None}
    refused = plan.policy_refusal(entry, scope.chosen(config))
    if refused:  # its verify command is not run, and nothing is recorded against the skill
        return {**outcome, "ok": False, "error": str(refused), "refused": refused.code, "configured": False}
    missing = status.Checker(config).missing(entry)
    output = b""
    if missing["bins"] or missing["anyBins"]:  # a prompt skill's too: it is not installed, as listings say
        outcome.update(ok=False, error=plan.not_installed_message(entry, (missing["bins"] or missing["anyBins"])[0]))
    elif missing["env"] or missing["config"]:
        outcome.update(ok=False, error=plan.setup_message(entry, missing))
    elif entry.get("verify") and entry["type"] != "prompt":
        env, secrets = environment or plan.environment(entry, config)
        def start(env, prepare):
            # A group of its own, ended once the shell is done: a background process the command
            # left behind cannot hold verification open.
            child = process.Child(["/bin/sh", "-c", entry["verify"]], env=env, stdin=process.DEVNULL,
                                  stdout=process.CAPTURE, stderr=process.CAPTURE, group=True, limit=OUTPUT_LIMIT,
                                  prepare=prepare)
            if on_start:
                on_start(child)
            return child.wait(timeout, kill_group=True)

        done = _start_confined(entry, config, env, start, warn or (lambda text: None)) if (
            plan.confined(entry, config) if confined is None else confined) else start(env, None)
        if cancelled and cancelled():
            raise NexusError(f"Skill '{entry['name']}': verification cancelled")
        output = done.stdout
        outcome.update(ok=done.exit == 0 and not done.timed_out, exit=None if done.timed_out else done.exit)
        if done.timed_out:
            outcome["error"] = f"verify command timed out after {timeout:g} s"
        elif done.exit != 0:
            text = plan.mask((done.stderr or done.stdout).decode("utf-8", "replace").strip(), secrets)
            outcome["error"] = text[-schema.ERROR_CHARS:] or f"exit {done.exit}"
    outcome["ms"] = int((time.monotonic() - started) * 1000)
    # A prompt skill has no verification to keep: its status is its requirements' alone.
    drift = _record(entry, config, outcome, output) if entry["type"] != "prompt" or outcome["ok"] else None
    if drift:
        outcome["drift"] = drift
    outcome["configured"] = outcome["ok"]
    return outcome


def _start_confined(entry, config, env, start, warn):
    """The verify command confined as the skill's calls are; a refusal is its failure, with the reason."""
    from . import sandbox  # a confined skill's verify command only

    try:
        if not sandbox.check(entry, config, warn):
            return start(env, None)
        return sandbox.run(entry, config, env, warn, start)[0]
    except NexusError as e:
        return process.Finished(1, False, None, b"", str(e).encode(), False)


def _record(entry, config, outcome, output):
    ts = schema.now_iso()
    vouched = fingerprint(entry, config, hashlib.sha256(output).hexdigest(), ts) if outcome["ok"] else None
    with skill_state.Update(entry["name"], entry) as state:
        state.update(schema.execution_of(entry))
        drift = skill_state.verified(state, ts, outcome["ok"], vouched, (outcome["error"] or "")[-schema.ERROR_CHARS:])
        if outcome["ok"]:
            outcome["configuredAt"] = state.get("configuredAt")
        return drift


def fingerprint(entry, config, output_hash, ts):
    """What a verification vouched for: this SKILL.md, what the verify command printed, and the binary
    it ran (a changed binary is verified again before it is trusted)."""
    vouched = {"skillSha256": entry.get("sha256"), "verifyOutputHash": output_hash, "capturedAt": ts}
    binary = plan.runs(entry) if entry.get("type") != "prompt" else None
    found = status.which(binary, status.search_dirs(config)) if binary else None
    if found:
        vouched["binary"] = health.identity(found)
    return vouched


def is_stale(state, hours, now=None):
    """True when a skill was never verified, or last verified over `hours` ago."""
    verified = schema.parse_iso(state.get("lastVerified"))
    return verified is None or (now or time.time()) - verified.timestamp() > hours * 3600


def select(records, stale_hours=None):
    """(entries, skipped): the tool and script skills `--all` verifies, and outcomes for those it leaves.

    It verifies what could pass: ready skills, and skills whose last verification failed (never or not
    lately verified, with `stale_hours`); the others (not installed, lacking an env var or config,
    disabled, not for this platform, invalid) are skipped, each with the reason, since running their
    verify command could only fail."""
    from ..catalog.capabilities import why_not_ready  # verify --all alone: not on the way of one verification

    entries, skipped = [], []
    for record in records:
        if record.get("type") not in ("tool", "script"):
            continue
        missing = record.get("missing") or {}
        failed_only = record["status"] == "needs-setup" and not any(missing.get(k) for k in missing)
        if record["status"] != "ready" and not failed_only:
            skipped.append({"skill": record["name"], "type": record["type"], "ok": None, "skipped": True,
                            "reason": why_not_ready(record)})
        elif stale_hours is None or is_stale(skill_state.read(record["name"], record), stale_hours):
            entries.append(record)
    return entries, skipped


CPUS = os.cpu_count() or 1  # how many verify commands run at once unless told


def verify_all(entries, config, timeout=VERIFY_TIMEOUT, jobs=1):
    """The outcome of each entry, in their order, with up to `jobs` verify commands running at once.

    Each runs in a thread of a small pool, waiting on its own command as verify() does (no polling),
    with its own timeout and process group. When the caller stops reading, the commands not started
    yet are dropped and the running ones waited for, so that each outcome is recorded.
    """
    entries = list(entries)
    if jobs <= 1 or len(entries) <= 1:
        yield from (verify(entry, config, timeout) for entry in entries)
        return
    import threading  # not concurrent.futures: it brings logging and re, which cost more than this does

    todo, outcomes, changed = list(enumerate(entries))[::-1], {}, threading.Condition()

    def work():
        while True:
            with changed:
                if not todo:
                    return
                n, entry = todo.pop()
            try:
                outcome = verify(entry, config, timeout)
            except BaseException as e:  # noqa: BLE001 - raised again where it is read
                outcome = e
            with changed:
                outcomes[n] = outcome
                changed.notify()

    pool = [threading.Thread(target=work, name="verify", daemon=True) for _ in range(min(jobs, len(entries)))]
    for thread in pool:
        thread.start()
    try:
        for n in range(len(entries)):
            with changed:
                changed.wait_for(lambda: n in outcomes)
                outcome = outcomes.pop(n)
            if isinstance(outcome, BaseException):
                raise outcome
            yield outcome
    finally:
        with changed:
            todo.clear()
        for thread in pool:
            thread.join()
