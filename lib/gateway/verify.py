"""Verification: "verify once on first use, trust until failure".

A skill is verified when its requirements are met and its verify command (run with /bin/sh -c, the
skill's environment and a timeout) exits 0. The outcome is recorded in its state, with fingerprints
of the SKILL.md it vouched for and of what the command printed.

Architecture invariant: only `nexus-verify` (and the porcelain's verify commands) and the first
`nexus skill run` of a skill call verify(); listing, refreshing and showing never do.
"""

import _thread
import hashlib
import os
import select as selector  # verify.select is the skills --all verifies
import time

from .. import fileio, paths, schema
from ..catalog import scope, status
from ..catalog.capabilities import checked
from ..skill.known import CONNECTOR_CHECKS
from ..errors import NexusError
from ..state import health, skill_state
from . import plan, process

VERIFY_TIMEOUT = 30
OUTPUT_LIMIT = 1 << 20  # of each of its streams a verify command may leave in memory: its hash and its error need no more


def verify(entry, config, timeout=VERIFY_TIMEOUT, confined=None, warn=None, on_start=None, cancelled=None,
           environment=None, recover=True):
    """Check requirements, run the verify command, record the outcome in state; returns the outcome. The
    command runs confined as the skill's calls do (`confined`: as the policy says, unless told); warn(text)
    hears that it could only be confined less, where the config accepts that.

    on_start(child): called once the verify command runs, so that another thread can kill it (a front
    end's cancel); cancelled(): true when it did, and then nothing is recorded (NexusError): a
    verification cut short says nothing about the skill. environment: (env, secrets) of the call that
    verifies first (gateway.call), else the skill's as plan.environment makes it for no caller.
    recover=False: a pass does not bring a failing skill back (the gateway's first-run verification:
    state.health says why)."""
    started = time.monotonic()
    outcome, command = _checked(entry, config, status.Checker(config), environment)
    if command is None:
        return outcome if "refused" in outcome else _concluded(entry, config, outcome, b"", timeout, started, recover)
    env, secrets = command

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
    return _concluded(entry, config, outcome, _ran(outcome, done, timeout, secrets), timeout, started, recover)


def _checked(entry, config, checker, environment=None, base=None):
    """(the outcome as far as the checks go, (env, secrets) of the verify command to run or None). A skill
    refused for policy has its whole outcome ("refused"): its command is not run and nothing is recorded."""
    outcome = {"skill": entry["name"], "type": entry["type"], "verify": entry.get("verify"),
               "ok": True, "exit": None, "error": None}
    refused = plan.policy_refusal(entry, scope.chosen(config))
    if refused:
        return {**outcome, "ok": False, "error": str(refused), "refused": refused.code, "configured": False}, None
    missing = checker.missing(entry)
    if missing["bins"] or missing["anyBins"]:  # a prompt skill's too: it is not installed, as listings say
        outcome.update(ok=False, error=plan.not_installed_message(entry, (missing["bins"] or missing["anyBins"])[0]))
    elif missing.get("script"):
        outcome.update(ok=False, error=f"Skill '{entry['name']}': script '{entry.get('script')}' is not a file in "
                                       f"{entry.get('dir')}")
    elif missing["env"] or missing["config"]:
        outcome.update(ok=False, error=plan.setup_message(entry, missing))
    elif entry.get("verify") and entry["type"] != "prompt":
        return outcome, environment or plan.environment(entry, config, base=base)
    return outcome, None


def _ran(outcome, done, timeout, secrets):
    """The outcome of how the verify command went (a process.Finished); what it printed."""
    outcome.update(ok=done.exit == 0 and not done.timed_out, exit=None if done.timed_out else done.exit)
    if done.timed_out:
        outcome["error"] = f"verify command timed out after {timeout:g} s"
    elif done.exit != 0:
        text = plan.mask((done.stderr or done.stdout).decode("utf-8", "replace").strip(), secrets)
        outcome["error"] = text[-schema.ERROR_CHARS:] or f"exit {done.exit}"
    return done.stdout


def _concluded(entry, config, outcome, output, timeout, started, recover):
    """The outcome, its connectors checked where it passed, recorded in the skill's state."""
    if outcome["ok"]:
        connected = check_connectors(entry, config, min(timeout, CONNECTOR_TIMEOUT))
        if connected:
            outcome["connectors"] = connected
    outcome["ms"] = int((time.monotonic() - started) * 1000)
    # A prompt skill has no verification to keep: its status is its requirements' alone.
    drift = _record(entry, config, outcome, output, recover) if entry["type"] != "prompt" or outcome["ok"] else None
    if drift:
        outcome["drift"] = drift
    outcome["configured"] = outcome["ok"]
    return outcome


CONNECTOR_TIMEOUT = 15


def check_connectors(entry, config, timeout):
    """Run the check of each connector the skill needs that has one (known.CONNECTOR_CHECKS: `gh auth
    status`), with the skill's environment and no shell, and keep how it went in connectors.json: what
    `nexus connectors` and `nexus skill show` say until the next verify runs it again. A check whose
    binary is missing is left unrun: the skill is not installed, as its status says."""
    checks = [(c, CONNECTOR_CHECKS[c][0]) for c in entry.get("connectors") or [] if c in CONNECTOR_CHECKS]
    found = {}
    for connector, argv in checks:
        binary = status.which(argv[0], status.search_dirs(config))
        if not binary:
            continue
        done = process.Child([binary, *argv[1:]], env=plan.environment(entry, config)[0], stdin=process.DEVNULL,
                             stdout=process.CAPTURE, stderr=process.CAPTURE, group=True,
                             limit=OUTPUT_LIMIT).wait(timeout, kill_group=True)
        ok = done.exit == 0 and not done.timed_out
        error = None if ok else (f"timed out after {timeout:g} s" if done.timed_out else
                                 (done.stderr or done.stdout).decode("utf-8", "replace").strip()[-200:] or f"exit {done.exit}")
        found[connector] = {"ok": ok, "ts": schema.now_iso(), "skill": entry["name"], **({"error": error} if error else {})}
    if found:
        try:
            with fileio.Locked(paths.connectors_file(), checked) as known:
                known.update(found)
        except OSError:
            pass  # a record that cannot be written: the connector is checked again at the next verify
    return found


def _start_confined(entry, config, env, start, warn):
    """The verify command confined as the skill's calls are; a refusal is its failure, with the reason."""
    from . import sandbox  # a confined skill's verify command only

    try:
        if not sandbox.check(entry, config, warn):
            return start(env, None)
        return sandbox.run(entry, config, env, warn, start)[0]
    except NexusError as e:
        return process.Finished(1, False, None, b"", str(e).encode(), False)


def _record(entry, config, outcome, output, recover):
    ts = schema.now_iso()
    vouched = fingerprint(entry, config, hashlib.sha256(output).hexdigest(), ts) if outcome["ok"] else None
    with skill_state.Update(entry["name"], entry) as state:
        state.update(schema.execution_of(entry))
        drift = skill_state.verified(state, ts, outcome["ok"], vouched, (outcome["error"] or "")[-schema.ERROR_CHARS:],
                                     recover)
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

    One loop starts them and waits on all (spawner.Batch: a helper forked once posix_spawns each in a group of
    its own, the reaper of what they leave, so that no start copies this process), each with its own timeout.
    What ends while the loop waits is recorded together, before any of it is given out. A skill whose command
    runs confined, or that has connectors to check, is verified as verify() does it, in a thread of its own
    (as all are where there is no helper). When the caller stops reading, the commands not started yet are
    dropped and the running ones waited for, so that each outcome is recorded.
    """
    entries = list(entries)
    if len(entries) <= 1:
        yield from (verify(entry, config, timeout) for entry in entries)
        return
    from . import spawner  # verify --all alone

    try:
        helper = spawner.fork()
    except OSError:  # no process to spare (EAGAIN): each is verified as verify() does, in threads
        helper = None
    batch = _Batch(entries, config, timeout, max(1, jobs), helper and spawner.Batch(helper), spawner.Gone)
    try:
        yield from batch.outcomes()
    finally:
        batch.finish()


RECORDERS = 4  # threads that record outcomes: replacing a state file waits on the file system (ext4 frees the
               # replaced file's blocks then, a millisecond or two here), and waits in several threads overlap


class _Batch:
    """verify_all's loop: entries started in their order while fewer than `jobs` run, outcomes given in order."""

    def __init__(self, entries, config, timeout, jobs, runs, gone):
        import _queue  # the C queue (queue.SimpleQueue's): no import of `queue` and `threading` for it

        self.entries, self.config, self.timeout, self.jobs, self.runs = entries, config, timeout, jobs, runs
        self.helped, self.gone = runs is not None, gone  # helped: until the helper is found gone
        self.checker, self.next = status.Checker(config), 0  # next: the first entry not started
        self.begun = {}  # n -> (outcome so far, secrets, when it began) of a command the helper runs
        self.ended = {}  # n -> its outcome (or the exception to raise), recorded, until given out
        self.threads, self.recording = set(), set()  # n of an entry verified in a thread; of an outcome being recorded
        self.workers, self.recorders, self.tasks = [], [], _queue.SimpleQueue()  # the threads' locks, held till each ends
        self.environ = dict(os.environ)  # each command's environment starts from a copy of it: made once
        self.woken, self.wake = os.pipe()  # a thread that ends something says so here

    def outcomes(self):
        given = 0
        while given < len(self.entries):
            self._fill()
            if given not in self.ended:
                self._wait()
            while given in self.ended:
                outcome = self.ended.pop(given)
                given += 1
                if isinstance(outcome, BaseException):
                    raise outcome
                yield outcome

    def _fill(self):
        while self.next < len(self.entries) and (len(self.runs) if self.runs else 0) + len(self.threads) < self.jobs:
            n, entry = self.next, self.entries[self.next]
            self.next += 1
            if not self.helped or plan.confined(entry, self.config) or any(
                    c in CONNECTOR_CHECKS for c in entry.get("connectors") or ()):
                self._thread(n, entry)
                continue
            started = time.monotonic()
            try:
                outcome, command = _checked(entry, self.config, self.checker, base=self.environ)
                if command is None:
                    if "refused" in outcome:
                        self.ended[n] = outcome
                    else:
                        self._record(n, entry, outcome, b"", started)
                elif self.runs.start(n, ["/bin/sh", "-c", entry["verify"]], command[0], self.timeout,
                                     OUTPUT_LIMIT, f"{plan.MARK}={entry['name']}"):
                    self.begun[n] = (outcome, command[1], started)
                else:  # the helper is gone: this one and those after are verified as verify() does
                    self.helped = False
                    self._thread(n, entry)
            except Exception as e:  # noqa: BLE001 - raised again where it is given out
                self.ended[n] = e

    def _thread(self, n, entry):
        """The entry verified as verify() does, in a thread of its own."""
        self.threads.add(n)
        self.workers.append(_started(self._done, n, lambda: verify(entry, self.config, self.timeout), self.threads))

    def _record(self, n, entry, outcome, output, started):
        """The outcome concluded and recorded by a recorder thread, while the loop goes on."""
        self.recording.add(n)
        self.tasks.put((n, lambda: _concluded(entry, self.config, outcome, output, self.timeout, started, True)))
        if len(self.recorders) < min(RECORDERS, len(self.recording)):
            self.recorders.append(_started(self._recorder))

    def _recorder(self):
        while (task := self.tasks.get()) is not None:
            self._done(*task, self.recording)

    def _done(self, n, work, running):
        try:
            outcome = work()
        except BaseException as e:  # noqa: BLE001 - raised again where it is given out
            outcome = e
        self.ended[n] = outcome
        running.discard(n)
        os.write(self.wake, b"x")

    def _wait(self):
        """Wait until something ends: a command (then its outcome is recorded), or a thread's work."""
        if self.runs is not None and len(self.runs):
            finished, woken = self.runs.wait([self.woken])
        else:
            finished, woken = [], selector.select([self.woken], [], [])[0]
        if woken:
            os.read(self.woken, 512)
        for n, done in finished:
            outcome, secrets, started = self.begun.pop(n)
            if isinstance(done, self.gone):  # the helper was killed, and the program with it: verified as verify() does
                self.helped = False
                self._thread(n, self.entries[n])
            elif isinstance(done, BaseException):
                self.ended[n] = done
            else:
                self._record(n, self.entries[n], outcome, _ran(outcome, done, self.timeout, secrets), started)

    def finish(self):
        """Nothing more starts; what runs is waited for and recorded; the helper ends."""
        self.next = len(self.entries)
        try:
            while self.begun or self.threads or self.recording:
                self._wait()
        finally:
            if self.runs is not None:
                self.runs.close()
            for _ in self.recorders:
                self.tasks.put(None)
            for ended in self.workers + self.recorders:
                ended.acquire()
            os.close(self.woken)
            os.close(self.wake)


def _started(function, *args):
    """function(*args) in a thread of its own (not `threading`'s, which verify --all need not load): a lock held
    until it ends, to wait for it."""
    ended = _thread.allocate_lock()
    ended.acquire()

    def run():
        try:
            function(*args)
        finally:
            ended.release()

    _thread.start_new_thread(run, ())
    return ended
