"""The gateway: one call of one skill, the way every front end makes it (`nexus skill run` and `nexus-run`,
nexus-mcp on stdio and over HTTP, a background job), top to bottom.

A front end says who calls (a `Caller`, built once) and which skill; the `Call` does the rest: gate (the
caller's policy, the profile, trust, enabled, for this platform, what it requires) -> for a prompt skill,
`read` (its instructions, variables filled in) -> for a tool or script skill, `prepare` (variables, the
command line, installed, configured, verified on first use) and `execute` (spawn without a shell, stream
or capture, time out: SIGTERM, then SIGKILL, to its process group) -> record (one usage log line and the
state's counters, under the skill's lock). A refusal anywhere is recorded the same way (`Call.refuse`),
whichever front end called.

This is the hot path: an agent calls it hundreds of times a session, so it imports no docopt, YAML,
subprocess or `re`, and reads the cached manifest and config. What is read on the command line and
printed is the command's (tools/plumbing/run.py); this module writes to no terminal.
"""

import os
import stat
import time

from .. import config as configlib, schema
from ..catalog import scope, status
from ..errors import NexusError, Refused, UsageError
from ..skill import entry as entrylib
from ..state import health, skill_state, usage_log
from . import plan, process

SIGPIPE = 13

COMMAND, MCP, HTTP, JOB = "command", "mcp", "http", "job"  # who calls: a Caller's `via`
MODELS = (MCP, HTTP)  # the callers that are a model: a skill kept from models is unknown to them


class Caller:
    """Who calls the gateway, as its front end decided once: nothing about the caller is patched onto a
    call afterwards. `via`: COMMAND (`nexus skill run`, `nexus-run`), MCP (nexus-mcp on stdio), HTTP
    (nexus-mcp --http), JOB (a background job's call, settled after its supervisor was lost).

    warn, note: how the gateway warns this caller, and says what it does ("Verifying skill ...");
    session: its session id (one that is not (schema.is_session_id) is said, and the call logged without
    it); client: the agent program (an MCP client's name/version); token: the bearer token's name
    (HTTP); profile: the Scope it is served (None: the one chosen, scope.chosen, which over HTTP is the
    token's: scope.SERVED);
    folder: where it works (NEXUS_CALLER_CWD; None: our own folder), and with `runs_there`, where its tool
    skills run (an HTTP session's own folder, made private on first use); log: whether its calls go to
    the usage log; terminal: a person at a terminal (stdin and stderr are one), the only caller that may
    lower the sandbox (no_sandbox); asked: how it gives a variable, for a refusal naming a missing one."""

    def __init__(self, via, warn, note=None, session=None, client=None, token=None, profile=None, folder=None,
                 runs_there=False, log=True, terminal=False, no_sandbox=False, asked=plan.VAR_OPTION, exported=False):
        self.via, self.warn, self.note = via, warn, note or warn
        self.exported = exported  # its calls' spans are sent as they are made (nexus-mcp's): `telemetry push` skips them
        self.session = session_id(session, warn)
        self.client, self.token, self.profile, self.folder, self.runs_there = client, token, profile, folder, runs_there
        self.log, self.terminal, self.no_sandbox, self.asked = log, terminal, no_sandbox, asked

    @property
    def model(self):
        return self.via in MODELS

    def refusal(self, entry):
        """The caller's own policy for this skill: the Refused when it may not call it, else None. A model
        is never offered a skill kept from models (`disable-model-invocation`), nor may it call one by
        name (`unseen`: its front end answers as for a skill it does not know); only a person at a
        terminal lowers the sandbox, never a program, nor anything a skill runs."""
        if self.model and not schema.invocable(entry):
            return Refused("scope", f"Skill '{entry['name']}' is not offered to agents (disable-model-invocation: "
                                    "true); a person runs it with `nexus skill run`", unseen=True)
        if self.no_sandbox:
            why = plan.inside() or (None if self.terminal else "stdin and stderr are not a terminal")
            if why:
                return Refused("sandbox", f"--no-sandbox is for a person at a terminal: refused ({why})")
        return None


def at_a_terminal():
    """True when a person is at a terminal: our stdin and stderr are one."""
    return os.isatty(0) and os.isatty(2)


def said_degraded(entry, warn, state):
    """A crystallized skill that is degraded says so, and names the skills it replays (skills spec 9.2)."""
    why = health.degraded(state)
    if why:
        replays = ", ".join(entrylib.required(entry, "skills")) or "its skills"
        warn(f"'{entry['name']}' is degraded ({why}): it replays {replays}; if it fails, run those directly")


class Call:
    """One call of a skill, from its gate to its record, for every kind of skill and every front end.

        call = Call(entry, config, caller, args, variables)
        text = call.read()        # a prompt skill: gated, its variables filled in, recorded
        call.plan()               # --dry-run: what would run; a refusal is raised, not recorded
        call.prepare()            # a tool or script: gated, installed, configured, verified on first use
        done = call.execute(...)  # spawned, waited for, recorded: done.exit, done.ms; call.output(done)

    A refusal on the way is recorded (`refuse`) and raised. The profile in force, the skill's Checker and
    its state are asked once a call and kept here; the config is the front end's, read once.
    """

    def __init__(self, entry, config, caller, args=(), variables=None):
        self.entry, self.config, self.caller, self.args = entry, config, caller, list(args)
        self.warn, self.note = caller.warn, caller.note
        self.profile = caller.profile or scope.chosen(config)
        self.variables = variables or {}  # as given: prepare adds the environment's and the defaults
        self.id = schema.call_id()  # in its log line, and NEXUS_PARENT_CALL of the calls its program makes
        self.confined = not caller.no_sandbox and plan.confined(entry, config)  # the sandbox module: only when confined
        self.sandbox = "none"  # how the call was confined, as its log line says
        self.reads = False  # a read of the skill's instructions or files: logged as a prompt call
        self.checker = self.state = self._env = self._secrets = self.expected = None
        self.argv = self.cwd = self.ms = None
        self.changes = {}
        self.cancelled = False  # set by the front end that kills the call (on_start's child), so the log says so
        self.logged = None  # the usage log entry of the call, once recorded
        self.cancel_mark = None  # or a file whose existence says the same (`nexus job kill` makes it)

    @property
    def env(self):
        """The tool's environment (plan.environment), made on first use: a read or a refusal never needs it."""
        if self._env is None:
            env, self._secrets = plan.environment(self.entry, self.config, self.caller, self.profile, self.id)
            self.expected = env.pop(EXPECTED_OUTPUT, None)  # a replay's step (usage.crystallize): not the tool's
            self._env = env
        return self._env

    @property
    def secrets(self):
        """The secrets nexus hands the tool (plan.environment)."""
        return self._secrets if self.env is not None else ()

    def masked(self, text):
        """`text` with every secret nexus hands the tool masked: the one mask of all a call shows or logs."""
        return plan.mask(text, self.secrets)

    def output(self, done, errors="replace"):
        """{"stdout", "stderr"} of a captured call as text, masked: all a front end shows of a tool's output.
        errors="surrogateescape": bytes that are not UTF-8 come out as \\udcXX escapes, which decode back."""
        return {key: self.masked(getattr(done, key).decode("utf-8", errors)) for key in ("stdout", "stderr")}

    def gate(self):
        """Refused (recorded by the caller of gate: see admit) when the caller's own policy, the profile in
        force (scope), trust, the config, the platform or a skill it requires rules the skill out. Keeps the
        Checker, once."""
        if self.checker is not None:
            return
        entry, config = self.entry, self.config
        refused = self.caller.refusal(entry) or plan.policy_refusal(entry, self.profile) or self.set_aside()
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

            record, _ = listing.settled(config, entry["name"])
            if record.get("reason") or record["status"] == "invalid":
                raise Refused("dependency", f"Skill '{entry['name']}' is not ready: {record.get('reason') or record.get('error')}. "
                                            f"To fix: {plan.next_step(record) or 'nexus skills check ' + entry['dir']}")
        self.checker = checker

    def set_aside(self):
        """A failing skill is offered to no agent (agents.instructions.set_aside: a replay may be, by the
        config), and a model that calls it by name is refused the same: the Refused, else None."""
        if not self.caller.model:
            return None
        why = health.degraded(self.read_state())
        replays = self.entry.get("crystallized") and configlib.get(self.config, "skills.offerDegradedReplays") is True
        if not why or replays:
            return None
        name = self.entry["name"]
        return Refused("scope", f"Skill '{name}' is {why}: it is offered to no agent until a person's run of it "
                                f"or `nexus skill verify {name}` succeeds")

    def admit(self):
        """The gate, a refusal recorded and raised: for a front end with a step of its own between the gate
        and prepare (a token's budget), which then gates no more."""
        try:
            self.gate()
        except Refused as e:
            raise self.refuse(e) from None

    def read(self):
        """A prompt skill's call (or a skill's instructions, read over MCP): gated, its variables filled in
        (given, else their defaults: never the environment's, which holds secrets) and recorded; the text.
        Refused, recorded, when it may not be read or a required variable is missing; UsageError for a
        variable it does not declare, or one given for a tool or script skill's instructions."""
        from ..skill import skillmd  # lazily, as verify below: each serves one kind of call

        self.reads = True
        try:
            self.gate()
            if self.entry.get("type") == "prompt":
                values = plan.variables(self.entry, self.variables, environ={}, asked=self.caller.asked)
            elif self.variables:
                raise UsageError(f"{self.entry['name']} is a {self.entry['type']} skill: its variables go with a "
                                 "call of it, not into its instructions")
            else:
                values = {}
        except Refused as e:
            raise self.refuse(e) from None
        started, ts = time.monotonic(), schema.now_iso()
        text = plan.fill(skillmd.prompt(self.entry), values)
        self.log_read(started, ts)
        return text

    def log_read(self, started, ts):
        """Record a read of the skill's instructions, or of one of its files (its path the call's args), that
        began at `started` (time.monotonic) and `ts`: a prompt call."""
        self.reads, self.ms = True, int((time.monotonic() - started) * 1000)
        self.record(ts, self.ms, 0)

    def plan(self):
        """What `--dry-run` answers: (argv, cwd, the names of the environment variables nexus sets), its
        secrets masked; Refused, not recorded, when the call would be refused. Nothing runs."""
        if self.entry["type"] not in ("tool", "script"):
            self.gate()
            plan.variables(self.entry, self.variables, environ={}, asked=self.caller.asked)
            return ["(prompt)", self.entry["filePath"]], None, []
        self._ready()
        injected = {*status.injected_env(self.entry, self.config), *(v["name"] for v in self.entry.get("variables") or [])}
        return [self.masked(a) for a in self.argv], self.cwd, sorted(injected) + ["NEXUS_CALLER_CWD", plan.MARK]

    def _ready(self):
        """Gate, variables, the command line, what it needs set, whether it can be confined."""
        self.gate()
        values = plan.variables(self.entry, self.variables, asked=self.caller.asked)
        self.env.update(values)
        self._secrets = plan.with_variables(self.secrets, values)
        self.argv, self.cwd = plan.command(self.entry, self.args, self.config)
        if self.caller.runs_there and self.entry["type"] == "tool":  # a remote client's tool runs in its folder
            from .. import fileio, paths  # an HTTP session's call only

            fileio.private_dirs(self.caller.folder, paths.state_root())
            self.cwd = self.caller.folder
        missing = self.checker.missing(self.entry)
        if missing["env"] or missing["config"]:
            raise Refused("needs-setup", plan.setup_message(self.entry, missing))
        if self.confined:
            from . import sandbox  # a confined skill only: the sandbox module is not on other calls' way

            self.confined = sandbox.check(self.entry, self.config, self.warn)

    def prepare(self, verify=True, on_start=None):
        """Gate the skill, resolve the command line and check what it needs; verify on first use
        (on_start(child) once a verify command runs, so that another thread can kill it). Refused,
        recorded, when the skill cannot run; NexusError, the call logged as cancelled, when a front end
        cancelled it during its verification."""
        started, ts = time.monotonic(), schema.now_iso()
        try:
            self._ready()
            if self.entry.get("crystallized"):
                said_degraded(self.entry, self.warn, self.read_state())
            if verify:
                self.changes = ensure_verified(self, on_start)
        except Refused as e:
            raise self.refuse(e) from None
        except NexusError:
            if self.cancelled:
                self.record(ts, int((time.monotonic() - started) * 1000), 137, error="cancelled")
            raise

    def read_state(self):
        """The skill's state.json, read once a call."""
        if self.state is None:
            self.state = skill_state.read(self.entry["name"], self.entry, self.warn)
        return self.state

    def refuse(self, refused):
        """Record this call as refused (exit 1; `refused`: the Refused's code, its first line the error) and
        return the Refused, to raise: the one way every refusal is logged, whether the gateway, a sandbox,
        trust, a profile or the caller's own policy refuses. A refusal for policy is a call, but never a
        failure of the skill (schema.POLICY_REFUSALS)."""
        self.record(schema.now_iso(), 0, 1, error=str(refused).splitlines()[0], refused=refused.code)
        return refused

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
                                      stdout=stdout, stdin=stdin, parent_death=parent_death, prepare=prepare,
                                      secrets=[s.encode("utf-8", "surrogateescape") for s in self.secrets])
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
            error = "cancelled" if self.cancelled else getattr(done, "set_aside", None) or outcome_error(done, timeout)
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
        error = error if done.exit != 0 and error else None  # masked, then cut with "truncated" said, by record
        # Where nexus holds the output anyway (captured, or in a job's file), its fingerprint is kept, so that
        # a replay can tell whether it still answers the same; a streamed call's output is never read.
        # A capture cut at its limit (an MCP server's --max-output) is not the output: no fingerprint, so that
        # a replay of it never reports a difference that is only the cut.
        held = done.stdout if capture and not done.truncated else None
        output = fingerprint(held, out_file, start_at or 0) if done.started else None
        differs = self.differs(output)
        self.record(ts, done.ms, done.exit, error=error, changes=self.changes, output=output, differs=differs)
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

        denied = sandbox.hint(self.entry, self.config, done.stderr)
        if denied:
            self.warn(f"{self.entry['name']} ran confined ({self.sandbox}) and was denied {denied}")


    def record(self, ts, ms, exit_code, error=None, refused=None, changes=None, output=None, differs=None):
        """Log the call and count it, under the skill's lock: the caller's fields (session, client, token),
        the profile in force, its arguments and error masked; for a call that ran, its id, how it was
        confined, and its output's fingerprint. A failure to write is said, never raised: the tool has
        run, and its exit status must still come through."""
        entry, caller = self.entry, self.caller
        found = [plan.masking(a, self.secrets) for a in self.args]
        args = [logged for logged, _ in found]
        clear = not any(schema.SECRET in a for a in args)  # said only where a *** could mislead
        masked = None if clear else [i for i, (_, at) in enumerate(found) if at]
        masked_at = None if clear else [[i, *at] for i, (_, at) in enumerate(found) if at]  # each ***, for a replay
        ran = not (self.reads or refused)
        policy = refused in schema.POLICY_REFUSALS
        error = self.masked(error) if error else None
        try:
            with skill_state.Update(entry["name"], entry) as state:
                state.update(changes or {})
                # A person's success at a terminal brings a failing skill back (state.health); an agent's does not.
                person = caller.via == COMMAND and caller.terminal and not plan.inside()
                skill_state.count_call(state, ts, exit_code == 0, ms, policy=policy, person=person)
                if error and not policy:
                    state["lastError"] = error[-schema.ERROR_CHARS:]
                if not caller.log:
                    return
                kind = schema.logged_type({**entry, "type": "prompt"} if self.reads else entry)
                line = schema.usage_entry(ts, entry["name"], kind, ms, args=args or None, exit=exit_code,
                                          error=error, tool=None if self.reads else plan.runs(entry),
                                          session=caller.session, refused=refused, masked=masked,
                                          profile=self.profile.name if self.profile else None,
                                          sandbox=self.sandbox if ran else None, client=caller.client,
                                          token=caller.token)
                line.update(schema.call_context(os.environ), **({"call": self.id} if ran and self.id else {}),
                            **({"output": output} if output else {}), **({"outputDiffers": differs} if differs else {}),
                            **({"exported": True} if caller.exported else {}),
                            **({"maskedAt": masked_at} if masked_at else {}))
                usage_log.append(entry["name"], state, line, self.config)
                self.logged = line
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


def ensure_verified(call, on_start=None):
    """First-run verification of a prepared call: the state changes to record, or Refused when it fails
    (NexusError when it was cancelled: see verify.verify). A skill whose binary changed since it was
    verified is verified again, and says why; call.note says that it verifies."""
    entry, config, binary, warn = call.entry, call.config, call.argv[0], call.warn
    state = call.read_state()
    if status.is_verified(entry, state):
        if not health.changed(state["fingerprint"].get("binary"), binary):
            return {}
        warn(f"{entry['name']} changed since it was verified ({binary}): verifying again")
    from . import verify  # a first run only: a skill already verified never loads it (nor hashlib)

    if not entry.get("verify"):  # nothing to verify beyond the binary, which exists
        ts = schema.now_iso()
        return {"configured": True, "fingerprint": verify.fingerprint(entry, config, None, ts),
                "configuredAt": state.get("configuredAt") or ts}
    call.note(f"Verifying skill '{entry['name']}'...")
    outcome = verify.verify(entry, config, confined=call.confined, warn=warn, on_start=on_start,
                            cancelled=lambda: call.cancelled, environment=(call.env, call.secrets), recover=False)
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

