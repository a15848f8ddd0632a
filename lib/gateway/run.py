"""The gateway: run one skill, the way `nexus skill run`, `nexus-run` and `nexus-mcp` all do, top to bottom.

resolve (the manifest entry, kept fresh) -> gate (enabled, for this platform, installed, configured)
-> verify (on first use, and after a failure or an edit) -> spawn (no shell) -> stream (stdin and
stdout are the tool's; stderr is copied through, its tail kept) -> time out (SIGTERM, then SIGKILL, to
its process group) -> record (one usage log line and the state's counters, under the skill's lock).

This is the hot path: an agent calls it hundreds of times a session, so it imports no docopt, YAML,
subprocess or `re`, and reads the cached manifest and config. What is read on the command line and
printed is the command's (tools/plumbing/run.py); this module writes to no terminal.
"""

import os
import stat
import time

from .. import schema
from ..catalog import scope, status
from ..errors import NexusError, Refused
from ..skill import entry as entrylib
from ..state import health, skill_state, usage_log
from . import plan, process

SIGPIPE = 13


def said_degraded(entry, warn):
    """A crystallized skill that is degraded says so, and names the skills it replays (skills spec 9.2)."""
    why = health.degraded(skill_state.read(entry["name"], entry))
    if why:
        replays = ", ".join(entrylib.required(entry, "skills")) or "its skills"
        warn(f"'{entry['name']}' is degraded ({why}): it replays {replays}; if it fails, run those directly")


def gate(entry, config, profile=None):
    """The Checker for this config; Refused when the profile in force (`profile`, else the one chosen:
    scope.chosen), the config, the platform or a skill it requires rules the skill out, or when an added
    skill's files changed behind nexus's back (trust). Nothing is recorded here: a caller that refuses
    records it (refuse, Call.prepare)."""
    refused = plan.policy_refusal(entry, profile or scope.chosen(config))
    if refused:
        raise refused
    checker = status.Checker(config)
    reason = checker.disabled_reason(entry)
    if reason:
        raise Refused("disabled", f"Skill '{entry['name']}' is disabled ({reason}). "
                                  f"To enable it: {plan.enable_command(entry, config)}")
    if not checker.supported(entry):
        raise Refused("unsupported", f"Skill '{entry['name']}' is not available on {checker.platform} "
                                     f"(os: {', '.join(entry['os'])})")
    if any(entrylib.required(entry, key) for key in schema.DEPENDS_KEYS):
        from ..catalog import listing  # the whole catalogue, for the few skills that depend on others

        record = next(r for r in listing.records(config, None) if r["name"] == entry["name"])
        if record.get("reason") or record["status"] == "invalid":
            raise Refused("dependency", f"Skill '{entry['name']}' is not ready: {record.get('reason') or record.get('error')}. "
                                        f"To fix: {plan.next_step(record) or 'nexus skills check ' + entry['dir']}")
    return checker


def refuse(entry, config, refused, warn, args=(), no_log=False, session=None, secrets=(), profile=None, client=None,
           token=None, call=None):
    """Record a refused call of the skill (exit 1, `refused`: the Refused's code, its first line as the
    error) and return the Refused for the caller to raise: the one way every refusal is logged, whether
    the gateway, a sandbox, trust or a profile's scope refuses. A refusal for policy is a call, but never
    a failure of the skill (schema.POLICY_REFUSALS). `call`: the Call refused, which keeps the entry logged."""
    try:
        logged = record(entry, config, no_log, schema.now_iso(), 0, 1, error=plan.mask(str(refused).splitlines()[0], secrets),
               args=[plan.mask(a, secrets) for a in args] or None, tool=plan.runs(entry),
               session=session or os.environ.get("NEXUS_SESSION_ID"), refused=refused.code, profile=profile,
               client=client, token=token)
        if call is not None:
            call.logged = logged
    except OSError as e:
        warn(not_recorded(e))
    return refused


class Call:
    """One call of a tool or script skill, from its gate to its record: what `nexus skill run` does,
    and what any other front end (an MCP server) does to run a skill the same way.

        call = Call(entry, config, args, warn)
        call.prepare()            # installed, configured, verified on first use; a refusal is recorded
        done = call.execute(...)  # spawned, waited for, recorded: done.exit, done.ms, done.stdout, ...
    """

    def __init__(self, entry, config, args, warn, no_log=False, session=None, profile=None, no_sandbox=False,
                 variables=None, note=None, client=None, asked=plan.VAR_OPTION, token=None):
        self.entry, self.config, self.args, self.warn, self.no_log = entry, config, list(args), warn, no_log
        self.note = note or warn  # what the gateway says as it goes ("Verifying skill ..."), on stderr
        self.client = client  # the agent program calling, when a front end knows it (an MCP client)
        self.token = token  # the name of the bearer token the call came with (nexus-mcp --http)
        self.profile = profile or scope.chosen(config)  # a server gives the profile of its connection
        self.confined = not no_sandbox and plan.confined(entry, config)  # the sandbox module: only when confined
        self.sandbox = "none"  # how the call was confined, as its log line says
        self.variables = variables or {}  # as given (--var): prepare adds the environment's and defaults
        self.asked = asked  # how the front end takes a variable (plan.variables), for a refusal naming one
        self.id = schema.call_id()  # in its log line, and NEXUS_PARENT_CALL of the calls its program makes
        self.session = session_id(session or os.environ.get("NEXUS_SESSION_ID"), warn)
        self.env = plan.environment(entry, config)
        if self.profile:  # what the tool itself runs through nexus stays in the caller's profile
            self.env[scope.ENV] = self.profile.name
        self.secrets = plan.secrets(entry, self.env, config)
        self.env["NEXUS_PARENT_CALL"] = self.id
        self.expected = self.env.pop(EXPECTED_OUTPUT, None)  # a replay's step (usage.crystallize): not the tool's
        self.argv = self.cwd = None
        self.changes = {}
        self.cancelled = False  # set by the front end that kills the call (on_start's child), so the log says so
        self.logged = None  # the usage log entry of the call, once recorded
        self.cancel_mark = None  # or a file whose existence says the same (`nexus job kill` makes it)

    def masked(self, text):
        return plan.mask(text, self.secrets)

    def prepare(self, verify=True, record_refusal=True, on_start=None):
        """Gate the skill, resolve the command line and check what it needs; verify on first use
        (on_start(child) once a verify command runs, so that another thread can kill it). Refused
        (recorded as a refused call unless told otherwise) when the skill cannot run; NexusError, the
        call logged as cancelled, when a front end cancelled it during its verification."""
        started, ts = time.monotonic(), schema.now_iso()
        try:
            gate(self.entry, self.config, self.profile)
            self.env.update(plan.variables(self.entry, self.variables, asked=self.asked))
            self.argv, self.cwd = plan.command(self.entry, self.args, self.config)
            missing = status.Checker(self.config).missing(self.entry)
            if missing["env"] or missing["config"]:
                raise Refused("needs-setup", plan.setup_message(self.entry, missing))
            if self.confined:
                from . import sandbox  # a confined skill only: the sandbox module is not on other calls' way

                self.confined = sandbox.check(self.entry, self.config, self.warn)
            self.changes = ensure_verified(self.entry, self.config, self.argv[0], self.warn, self.note,
                                           self.confined, on_start, lambda: self.cancelled) if verify else {}
        except Refused as e:
            if record_refusal:
                self.refuse(e)
            raise
        except NexusError:
            if self.cancelled:
                self.record(ts, int((time.monotonic() - started) * 1000), 137, error="cancelled")
            raise

    def refuse(self, refused):
        """Record this call as refused (see refuse); the Refused, to raise."""
        return refuse(self.entry, self.config, refused, self.warn, self.args, self.no_log, self.session, self.secrets,
                      self.profile, self.client, self.token, self)

    def execute(self, capture=False, stdin=None, timeout=None, limit=None, tee=True, forward=False, on_start=None,
                stdout=None, stderr=None, parent_death=False):
        """Spawn the tool, wait for it (ending it after `timeout` seconds), and record the call.

        capture: read stdout and stderr (at most `limit` bytes each) instead of passing ours on;
        stdin: bytes to feed it, or process.DEVNULL (else it reads ours); stdout, stderr: file
        descriptors to give it instead of ours; tee: copy its stderr to ours and keep its tail;
        forward: pass on the signals we get (main thread only); on_start(child): called once it runs,
        so that another thread can kill() it; parent_death: the tool is killed when this thread ends (a
        server's calls: see process.Child). Returns a process.Finished with `ms` and `started`.
        """
        group = timeout is not None or not forward  # a group of its own can be ended as a whole
        to_file, out_file = stderr, stdout if isinstance(stdout, int) and not capture else None
        start_at = _held_stdout() if self.expected and not capture and stdout is None else None
        if start_at is not None:  # a replay's step writes to a file the replay reads: the tool's own stdout still
            out_file = 1
        if capture:
            stdout = stderr = process.CAPTURE
        elif stderr is None:
            stderr = process.TEE if tee else None
        started, ts = time.monotonic(), schema.now_iso()

        def start(env, prepare):
            with process.Forwarding(group) if forward else _Nothing() as forwarding:
                child = process.Child(self.argv, cwd=self.cwd, env=env, group=group, limit=limit, stderr=stderr,
                                      stdout=stdout, stdin=stdin, parent_death=parent_death, prepare=prepare)
                forwarding.attach(child)
                if on_start:
                    on_start(child)
                return child.wait(timeout)

        try:
            if self.confined:
                from . import sandbox  # a confined call only

                done, self.sandbox = sandbox.run(self.entry, self.config, self.env, self.warn, start)
            else:
                done = start(self.env, None)
            done.started = True
            if isinstance(to_file, int) and not capture:  # its stderr went to a file: the tail is there
                done.stderr = os.pread(to_file, process.TAIL, max(0, os.fstat(to_file).st_size - process.TAIL))
            self.cancelled = self.cancelled or bool(self.cancel_mark and os.path.exists(self.cancel_mark))
            error = "cancelled" if self.cancelled else outcome_error(done, timeout)
        except Refused as e:  # it had to run confined, and could not be: recorded as refused, as in prepare
            self.refuse(e)
            self.warn(str(e))
            done = process.Finished(1, False, None, b"", b"", False)
            done.started, done.ms = False, int((time.monotonic() - started) * 1000)
            return done
        except OSError as e:  # found, but the system cannot run it: no #! line, not executable, ...
            done = process.Finished(126, False, None, b"", b"", False)
            done.started, error = False, f"cannot run {self.argv[0]}: {e.strerror}"
            self.warn(error)
        done.ms = int((time.monotonic() - started) * 1000)
        # a reader that closed the pipe, or a front end that cancelled the call, is not the tool failing
        if done.exit != 0 and done.signal != SIGPIPE and not self.cancelled:
            self.changes["configured"] = False  # trust until failure: verify again before the next run
        error = self.masked(error)[-schema.ERROR_CHARS:] if done.exit != 0 and error else None
        # Where nexus holds the output anyway (captured, or in a job's file), its fingerprint is kept, so that
        # a replay can tell whether it still answers the same; a streamed call's output is never read.
        # A capture cut at its limit (an MCP server's --max-output) is not the output: no fingerprint, so that
        # a replay of it never reports a difference that is only the cut.
        held = done.stdout if capture and not done.truncated else None
        output = fingerprint(held, out_file, start_at or 0) if done.started else None
        differs = self.differs(output)
        self.record(ts, done.ms, done.exit, error=error, changes=self.changes, call=self.id, output=output,
                    differs=differs)
        if self.confined and done.started and done.exit != 0 and not self.cancelled:
            self.warn_denied(done)
        return done

    def differs(self, output):
        """The fingerprint a replay's step expected (from the session it was crystallized from, skills spec
        9.2) when the output it gave now is another, said on stderr; else None."""
        if not self.expected or not output:
            return None
        digest, _, size = self.expected.partition(":")
        if (digest, size) == (output["sha256"], str(output["bytes"])) or not size.isdigit():
            return None
        self.warn(f"{self.entry['name']}: its output differs from the one the crystallized session saw "
                  f"({int(size):,} bytes then, {output['bytes']:,} now): the replay may no longer do what it did")
        return {"sha256": digest, "bytes": int(size)}

    def warn_denied(self, done):
        """A confined call that failed: the permission to grant, where its stderr says what it was denied."""
        from . import sandbox  # a confined call only

        grant = sandbox.hint(self.entry, self.config, done.stderr)
        if grant:
            self.warn(f"{self.entry['name']} ran confined ({self.sandbox}) and was denied: to grant it, {grant}")

    def record(self, ts, ms, exit_code, error=None, changes=None, call=None, output=None, differs=None):
        """Log the call and count it, under the skill's lock. A failure to write is reported, never
        raised: the tool has run, and its exit status must still come through."""
        found = [plan.masking(a, self.secrets) for a in self.args]
        args = [logged for logged, _ in found]
        clear = not any(schema.SECRET in a for a in args)  # said only where a *** could mislead
        masked = None if clear else [i for i, (_, at) in enumerate(found) if at]
        masked_at = None if clear else [[i, *at] for i, (_, at) in enumerate(found) if at]  # each ***, for a replay
        try:
            self.logged = record(self.entry, self.config, self.no_log, ts, ms, exit_code, error, changes, args=args,
                                 tool=plan.runs(self.entry), session=self.session, masked=masked, masked_at=masked_at,
                                 profile=self.profile, sandbox=self.sandbox, call=call, output=output, client=self.client, differs=differs,
                                 token=self.token)
        except OSError as e:
            self.warn(not_recorded(e))


def session_id(value, warn):
    """The session a call is logged under: NEXUS_SESSION_ID (or a front end's id) when it is one
    (schema.is_session_id); else None, with a warning, and the call is logged without a session."""
    if not value or schema.is_session_id(value):
        return value or None
    warn("NEXUS_SESSION_ID is not a session id (printable, at most 128 characters): the call is logged without one")
    return None


def fingerprint(data, fd=None, start=0):
    """{"sha256", "bytes"} of a call's output: `data` captured, or the file behind `fd` from `start` (a
    job's, a replay step's); None when there is neither."""
    if data is None and fd is None:
        return None
    import hashlib  # only for a call whose output nexus holds anyway

    digest, size = hashlib.sha256(), 0
    if data is not None:
        digest.update(data)
        size = len(data)
    else:
        while chunk := os.pread(fd, 1 << 20, start + size):
            digest.update(chunk)
            size += len(chunk)
    return {"sha256": digest.hexdigest(), "bytes": size}


EXPECTED_OUTPUT = "NEXUS_EXPECTED_OUTPUT"  # SHA256:BYTES: what a replay's step gave in its session


def _held_stdout():
    """Where in our stdout the tool's output begins, when stdout is a regular file we may read back (a replay
    opens it so: `1<>FILE`); else None."""
    try:
        if not stat.S_ISREG(os.fstat(1).st_mode):
            return None
        os.pread(1, 0, 0)  # EBADF: opened for writing only
        return os.lseek(1, 0, os.SEEK_CUR)
    except OSError:
        return None


def not_recorded(error):
    return f"could not record the call: {error.filename or 'usage log'}: {error.strerror}"


class _Nothing:
    """Stands in for process.Forwarding where signals are not ours to pass on."""

    def attach(self, child):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def record(entry, config, no_log, ts, ms, exit_code, error=None, changes=None, args=None, tool=None, session=None,
           refused=None, masked=None, profile=None, sandbox=None, call=None, output=None, client=None, differs=None,
           token=None, masked_at=None):
    """Count one call in the skill's state and append it to its usage log, under the skill's lock; the
    profile in force (`profile`, else the one chosen) is logged with it, and with `call`, its id and what
    the agent says of itself in the environment (schema.call_context). Returns the entry logged (None: no_log)."""
    profile = profile or scope.chosen(config)
    policy = refused in schema.POLICY_REFUSALS
    session = session if schema.is_session_id(session) else None  # what no front end checked is not logged
    with skill_state.Update(entry["name"], entry) as state:
        state.update(changes or {})
        skill_state.count_call(state, ts, exit_code == 0, ms, policy=policy)
        if error and not policy:
            state["lastError"] = error
        if not no_log:
            line = schema.usage_entry(ts, entry["name"], schema.logged_type(entry), ms, args=args, exit=exit_code,
                                      error=error, tool=tool, session=session, refused=refused, masked=masked,
                                      profile=profile.name if profile else None, sandbox=sandbox, client=client,
                                      token=token)
            line.update(schema.call_context(os.environ), **({"call": call} if call else {}),
                        **({"output": output} if output else {}), **({"outputDiffers": differs} if differs else {}),
                        **({"maskedAt": masked_at} if masked_at else {}))
            usage_log.append(entry["name"], state, line, config)
            return line
    return None


def prompt(entry, config, no_log, warn, values=None):
    """A prompt skill's call: its instructions, its variables filled in, and how long reading them took
    (ms), the call recorded."""
    from ..skill import skillmd  # lazily, as verify below: each serves one kind of call

    started, ts = time.monotonic(), schema.now_iso()
    text = plan.fill(skillmd.prompt(entry), values or {})
    ms = int((time.monotonic() - started) * 1000)
    try:
        record(entry, config, no_log, ts, ms, 0, session=session_id(os.environ.get("NEXUS_SESSION_ID"), warn))
    except OSError as e:
        warn(not_recorded(e))
    return text, ms


def ensure_verified(entry, config, binary, warn, note, confined=False, on_start=None, cancelled=None):
    """First-run verification: the state changes to record, or Refused when it fails (NexusError when it
    was cancelled: see verify.verify). A skill whose binary changed since it was verified is verified
    again, and says why; note(text) says that it verifies."""
    state = skill_state.read(entry["name"], entry, warn)
    if status.is_verified(entry, state):
        if not health.changed(state["fingerprint"].get("binary"), binary):
            return {}
        warn(f"{entry['name']} changed since it was verified ({binary}): verifying again")
    from . import verify  # a first run only: a skill already verified never loads it (nor hashlib)

    if not entry.get("verify"):  # nothing to verify beyond the binary, which exists
        ts = schema.now_iso()
        return {"configured": True, "fingerprint": verify.fingerprint(entry, config, None, ts),
                "configuredAt": state.get("configuredAt") or ts}
    note(f"Verifying skill '{entry['name']}'...")
    outcome = verify.verify(entry, config, confined=confined, warn=warn, on_start=on_start, cancelled=cancelled)
    if outcome.get("drift"):
        warn(f"{entry['name']}: its verify command prints something else than when it last passed")
    if not outcome["ok"]:
        raise Refused("needs-setup", f"Skill '{entry['name']}' is not configured: {outcome['error']}\n"
                         f"Run 'nexus skill show {entry['name']}' for setup instructions.")
    return {}


def outcome_error(done, timeout):
    """What the log says went wrong: a timeout, a signal, or the tail of stderr."""
    if done.timed_out:
        return f"timed out after {timeout:g} s"
    if done.signal == SIGPIPE:
        return "its reader closed the pipe (SIGPIPE)"
    if done.signal:
        return f"killed by signal {done.signal}"
    tail = (done.stderr or b"").decode("utf-8", "replace").strip()
    return tail or (f"exit {done.exit}" if done.exit else None)

