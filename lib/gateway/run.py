"""The gateway: run one skill, the way `nexus skill run` and `nexus-run` both do, top to bottom.

resolve (the manifest entry, kept fresh) -> gate (enabled, for this platform, installed, configured)
-> verify (on first use, and after a failure or an edit) -> spawn (no shell) -> stream (stdin and
stdout are the tool's; stderr is copied through, its tail kept) -> time out (SIGTERM, then SIGKILL, to
its process group) -> record (one usage log line and the state's counters, under the skill's lock).

This is the hot path: an agent calls it hundreds of times a session, so it imports no docopt, YAML,
subprocess or `re`, and reads the cached manifest and config.
"""

import os
import sys
import time

from .. import config as configlib, fastjson, schema, trust
from ..catalog import manifest, scope, status
from ..cli.command import Help, number, quiet_stdout
from ..errors import NexusError, Refused, UsageError
from ..skill import entry as entrylib
from ..state import health, skill_state, usage_log
from . import plan, process

DESCRIPTION = """\
Tool skills run `TOOL ARGS` in the caller's folder; script skills run `RUNNER SCRIPT ARGS` in the
skill's folder; prompt skills print their instructions. stdin and stdout are the tool's own;
stderr streams through too, and its tail is kept for the log. A skill is verified on its first
run, after a failed run, and after its SKILL.md changed. Every call is appended to the skill's
usage log and counted in its state.

A skill added from elsewhere runs confined (skills.sandbox.mode): it reads all but the secrets of
skills.sandbox.deny and nexus's own files, writes only {tmp}, {state} and (a tool) {cwd}, and has no
network, unless its metadata.nexus.sandbox or `nexus skill allow` grants more. On Linux, Landlock and a
network namespace enforce it; where they cannot, the call is refused (exit 1) unless
skills.sandbox.fallback is "warn". The README's Security section says what is cut and what is not.
"""

USAGE = """\
Usage:
  PROG NAME [--dry-run] [--no-verify] [--no-log] [--json] [--background] [--no-sandbox] [--timeout SECONDS] [--var NAME=VALUE]... [-- ARGS...]
  PROG (-h | --help)

Options:
  --dry-run          Print the exact argv, working directory and injected env names; run nothing.
  --no-verify        Skip the verification a first run would do.
  --no-log           Leave this call out of the usage log (the state counters still count it).
  --json             Capture the tool's output into one JSON object: skill, type, exit, ms, stdout, stderr.
  --background       Verify, then start the tool detached and print its job id at once (see `nexus jobs`):
                     stdin /dev/null, stdout and stderr kept in files, the call recorded when it ends.
  --no-sandbox       Run a skill that would run confined (see skills.sandbox.mode) with all your rights:
                     for a person at a terminal; refused elsewhere, and from inside a gateway call.
  --timeout SECONDS  End the tool after SECONDS as timeout(1) does: SIGTERM to its process group,
                     SIGKILL 5 s later; the exit status is then 124.
  --var NAME=VALUE   A variable the skill declares (metadata.nexus.variables): filled in for ${NAME} in a
                     prompt skill's text, and in the environment of a tool or script skill. A variable
                     not given comes from the environment, else its default; one still missing is a
                     refusal that names it.
  -h --help          Show this help.

Options go right after NAME; the tool's arguments follow `--` (or start at the first word that is
not an option).

Environment:
  NEXUS_SESSION_ID  Recorded with each call, so an agent's calls can be grouped.
  NEXUS_MODEL, NEXUS_MODEL_VERSION, NEXUS_PROMPT_TOKENS, NEXUS_COMPLETION_TOKENS
                    Recorded with each call when an agent sets them (model, modelVersion,
                    promptTokens, completionTokens); `nexus skill stats` groups calls by model.
  NEXUS_PARENT_CALL
                    Set for the tool: this call's id (the `call` of its log line), recorded as
                    parentCall by the calls the tool makes in turn (a crystallized replay's).
  NEXUS_CALLER_CWD  Set for the tool: the folder nexus was called from (a script runs in its skill's
                    folder). The tool also gets the skill's configured env and apiKey, and
                    skills.binPath before PATH.
  NEXUS_SKILL       Set for the tool: the skill's name. Where it is set, what would lower the sandbox
                    (--no-sandbox, nexus skill allow, config set of sandbox keys) is refused.

Exit status:
  N    the tool's own exit status; 128+N when it was killed by signal N; 124 after --timeout
  1    the gateway refused: not found, disabled, not installed, not configured, verification failed
  2    usage error, a malformed config, or stdout closed

Examples:
  PROG disk-report -- . --top 3
  PROG filesystem                       # prints the prompt
  PROG disk-report --timeout 60 -- ~/Downloads --top 5
  PROG disk-report --json -- ~/Downloads | jq -r .stdout
"""

FLAGS = ("--dry-run", "--no-verify", "--no-log", "--json", "--background", "--no-sandbox")
SIGPIPE = 13


def usage(prog):
    """The usage text, for `nexus-run` or `nexus skill run`."""
    return USAGE.replace("PROG", prog)


def parse(argv, doc):
    """The arguments as docopt would give them, read by hand: docopt costs more to import than the
    whole gateway may spend. The tests check that both agree on every form the usage allows."""

    synopsis = "usage: " + doc.partition("Usage:\n")[2].partition("\n")[0].strip()
    args = dict.fromkeys(FLAGS, False)
    args.update({"NAME": None, "ARGS": [], "--timeout": None, "--var": [], "--": False, "--help": False})
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            args["--"], args["ARGS"] = True, argv[i + 1:]
            break
        if word in ("-h", "--help"):
            raise Help()
        if word in FLAGS:
            args[word] = True
        elif word == "--timeout" or word.startswith("--timeout="):
            value = word.partition("=")[2] if "=" in word else (argv[i + 1] if i + 1 < len(argv) else "")
            i += "=" not in word
            try:
                number(value, "--timeout")
            except UsageError as e:
                raise UsageError(f"{e}\n{synopsis}") from None
            args["--timeout"] = value
        elif word == "--var" or word.startswith("--var="):
            if "=" not in word and i + 1 >= len(argv):
                raise UsageError(f"--var requires argument\n{synopsis}")
            args["--var"].append(word.partition("=")[2] if "=" in word else argv[i + 1])
            i += "=" not in word
        elif word.startswith("-") and word != "-":
            raise UsageError(f"unknown option {word!r} (pass the tool's options after '--')\n{synopsis}")
        elif args["NAME"] is None:
            args["NAME"] = word
        else:
            args["ARGS"] = argv[i:]
            break
        i += 1
    if args["NAME"] is None:
        raise UsageError(f"which skill? a NAME is required\n{synopsis}")
    return args


def command(ctx):
    """Run one skill through the gateway: the body of `nexus skill run` and `nexus-run`."""
    args, config = ctx.args, ctx.config
    entry = manifest.entry(configlib.sources(config), args["NAME"], ctx.warn)
    given = given_variables(args["--var"])
    if entry["type"] == "prompt":
        try:
            checker = gate(entry, config)
            values = plan.variables(entry, given)
        except Refused as e:  # a dry run asks what would happen: nothing did, nothing is logged
            raise e if args["--dry-run"] else refuse(entry, config, e, ctx.warn, no_log=args["--no-log"])
        if args["--background"]:
            raise UsageError(f"'{entry['name']}' is a prompt skill: it has nothing to run in the background")
        if args["ARGS"]:
            ctx.warn(f"'{entry['name']}' is a prompt skill: it takes no arguments; ignored: {' '.join(args['ARGS'])}")
        if args["--dry-run"]:
            return dry_run(entry, ["(prompt)", entry["filePath"]], None, [], args)
        if entry.get("unknownType"):  # skills spec 10: the prompt, with a warning, logged as unknown
            ctx.warn(f"'{entry['name']}' has type '{entry['unknownType']}', which nexus cannot run: "
                     f"here are its instructions (logged as type unknown)")
        lacking = [item for items in checker.missing(entry).values() for item in items]
        if lacking:  # the instructions still come: they may say how to get what is missing
            ctx.warn(f"note: '{entry['name']}' needs {', '.join(lacking)} (see `nexus skill show {entry['name']}`)")
        return prompt(entry, config, args, ctx.warn, values)
    if args["--no-sandbox"]:  # a person at a terminal lowers the gate; no skill, agent or script does
        why = plan.inside() or (None if os.isatty(0) and os.isatty(2) else "stdin and stderr are not a terminal")
        if why:
            raise refuse(entry, config, Refused("sandbox", f"--no-sandbox is for a person at a terminal: refused "
                                                           f"({why})"), ctx.warn, args["ARGS"], args["--no-log"])
    if entry.get("crystallized"):
        said_degraded(entry, ctx.warn)
    call = Call(entry, config, args["ARGS"], ctx.warn, no_log=args["--no-log"], no_sandbox=args["--no-sandbox"],
                variables=given)
    if args["--dry-run"]:
        call.prepare(verify=False, record_refusal=False)
        argv = [call.masked(a) for a in call.argv]
        injected = {*status.injected_env(entry, config), *(v["name"] for v in entry.get("variables") or [])}
        return dry_run(entry, argv, call.cwd, sorted(injected) + ["NEXUS_CALLER_CWD", plan.MARK], args)
    call.prepare(verify=not args["--no-verify"])
    timeout = float(args["--timeout"]) if args["--timeout"] else None
    if args["--background"]:
        from . import jobs

        job = jobs.start(call, timeout)
        write_or_quit(fastjson.dumps({"skill": entry["name"], "job": job}) + "\n" if args["--json"] else job + "\n")
        return 0
    # On a terminal the tool keeps its real stderr (colours, progress); elsewhere its tail is kept.
    done = call.execute(capture=args["--json"], timeout=timeout, tee=not os.isatty(2), forward=True)
    if args["--json"] and done.started:
        # Bytes that are not UTF-8 come out as \\udcXX escapes, which decode back to the same bytes.
        output = {key: getattr(done, key).decode("utf-8", "surrogateescape") for key in ("stdout", "stderr")}
        write_or_quit(fastjson.dumps({"skill": entry["name"], "type": entry["type"], "exit": done.exit,
                                      "ms": done.ms, **output}) + "\n")
    return done.exit


def said_degraded(entry, warn):
    """A crystallized skill that is degraded says so, and names the skills it replays (skills spec 9.2)."""
    why = health.degraded(skill_state.read(entry["name"], entry))
    if why:
        replays = ", ".join(entrylib.required(entry, "skills")) or "its skills"
        warn(f"'{entry['name']}' is degraded ({why}): it replays {replays}; if it fails, run those directly")


def given_variables(words):
    """{NAME: VALUE} of the --var words; UsageError for one that is not NAME=VALUE."""
    given = {}
    for word in words:
        name, equals, value = word.partition("=")
        if not equals or not schema.is_env_name(name):
            raise UsageError(f"--var takes NAME=VALUE, NAME a variable's name: not {word!r}")
        given[name] = value
    return given


def write_or_quit(text):
    """Write to stdout; a reader that has gone away is no failure of the tool, whose call is recorded."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_stdout()


def gate(entry, config, profile=None):
    """The Checker for this config; Refused when the profile in force (`profile`, else the one chosen:
    scope.chosen), the config, the platform or a skill it requires rules the skill out, or when an added
    skill's files changed behind nexus's back (trust). Nothing is recorded here: a caller that refuses
    records it (refuse, Call.prepare)."""
    profile = profile or scope.chosen(config)
    if profile and not profile.admits(entry):
        raise Refused("scope", f"Skill '{entry['name']}' is not available to profile {profile.name}. "
                               f"To see what it may use: nexus profiles")
    untrusted = trust.refusal(entry)
    if untrusted:
        raise Refused("trust", untrusted)
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


def refuse(entry, config, refused, warn, args=(), no_log=False, session=None, secrets=(), profile=None):
    """Record a refused call of the skill (exit 1, `refused`: the Refused's code, its first line as the
    error) and return the Refused for the caller to raise: the one way every refusal is logged, whether
    the gateway, a sandbox, trust or a profile's scope refuses. A refusal for policy is a call, but never
    a failure of the skill (schema.POLICY_REFUSALS)."""
    try:
        record(entry, config, no_log, schema.now_iso(), 0, 1, error=plan.mask(str(refused).splitlines()[0], secrets),
               args=[plan.mask(a, secrets) for a in args] or None, tool=plan.runs(entry),
               session=session or os.environ.get("NEXUS_SESSION_ID"), refused=refused.code, profile=profile)
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
                 variables=None):
        self.entry, self.config, self.args, self.warn, self.no_log = entry, config, list(args), warn, no_log
        self.profile = profile or scope.chosen(config)  # a server gives the profile of its connection
        self.confined = not no_sandbox and plan.confined(entry, config)  # the sandbox module: only when confined
        self.sandbox = "none"  # how the call was confined, as its log line says
        self.variables = variables or {}  # as given (--var): prepare adds the environment's and defaults
        self.id = schema.call_id()  # in its log line, and NEXUS_PARENT_CALL of the calls its program makes
        self.session = session_id(session or os.environ.get("NEXUS_SESSION_ID"), warn)
        self.env = plan.environment(entry, config)
        self.secrets = plan.secrets(entry, self.env, config)
        self.env["NEXUS_PARENT_CALL"] = self.id
        self.argv = self.cwd = None
        self.changes = {}
        self.cancelled = False  # set by the front end that kills the call (on_start's child), so the log says so
        self.cancel_mark = None  # or a file whose existence says the same (`nexus job kill` makes it)

    def masked(self, text):
        return plan.mask(text, self.secrets)

    def prepare(self, verify=True, record_refusal=True):
        """Gate the skill, resolve the command line and check what it needs; verify on first use. Refused
        (recorded as a refused call unless told otherwise) when the skill cannot run."""
        try:
            gate(self.entry, self.config, self.profile)
            self.env.update(plan.variables(self.entry, self.variables))
            self.argv, self.cwd = plan.command(self.entry, self.args, self.config)
            missing = status.Checker(self.config).missing(self.entry)
            if missing["env"] or missing["config"]:
                raise Refused("needs-setup", plan.setup_message(self.entry, missing))
            if self.confined:
                from . import sandbox

                self.confined = sandbox.check(self.entry, self.config, self.warn)
            self.changes = ensure_verified(self.entry, self.config, self.argv[0], self.warn,
                                           self.confined) if verify else {}
        except Refused as e:
            if record_refusal:
                self.refuse(e)
            raise

    def refuse(self, refused):
        """Record this call as refused (see refuse); the Refused, to raise."""
        return refuse(self.entry, self.config, refused, self.warn, self.args, self.no_log, self.session, self.secrets,
                      self.profile)

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
        if capture:
            stdout = stderr = process.CAPTURE
        elif stderr is None:
            stderr = process.TEE if tee else None
        started, ts = time.monotonic(), schema.now_iso()

        def start(env, prepare):
            with process.Forwarding(group) if forward else _Nothing() as forwarding:
                child = process.Child(self.argv, cwd=self.cwd, env=env, group=group, limit=limit, stderr=stderr,
                                      stdout=stdout, stdin=stdin, parent_death=parent_death, prepare=prepare)
                forwarding.child = child
                if on_start:
                    on_start(child)
                return child.wait(timeout)

        try:
            if self.confined:
                from . import sandbox

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
        output = fingerprint(done.stdout if capture else None, out_file) if done.started else None
        self.record(ts, done.ms, done.exit, error=error, changes=self.changes, call=self.id, output=output)
        if self.confined and done.started and done.exit != 0 and not self.cancelled:
            self.warn_denied(done)
        return done

    def warn_denied(self, done):
        """A confined call that failed: the permission to grant, where its stderr says what it was denied."""
        from . import sandbox

        grant = sandbox.hint(self.entry, self.config, done.stderr)
        if grant:
            self.warn(f"{self.entry['name']} ran confined ({self.sandbox}) and was denied: to grant it, {grant}")

    def record(self, ts, ms, exit_code, error=None, changes=None, call=None, output=None):
        """Log the call and count it, under the skill's lock. A failure to write is reported, never
        raised: the tool has run, and its exit status must still come through."""
        args = [self.masked(a) for a in self.args]
        masked = ([i for i, (given, logged) in enumerate(zip(self.args, args)) if given != logged]
                  if any(schema.SECRET in a for a in args) else None)  # said only where a *** could mislead
        try:
            record(self.entry, self.config, self.no_log, ts, ms, exit_code, error, changes, args=args,
                   tool=plan.runs(self.entry), session=self.session, masked=masked, profile=self.profile,
                   sandbox=self.sandbox, call=call, output=output)
        except OSError as e:
            self.warn(not_recorded(e))


def session_id(value, warn):
    """The session a call is logged under: NEXUS_SESSION_ID (or a front end's id) when it is one
    (schema.is_session_id); else None, with a warning, and the call is logged without a session."""
    if not value or schema.is_session_id(value):
        return value or None
    warn("NEXUS_SESSION_ID is not a session id (printable, at most 128 characters): the call is logged without one")
    return None


def fingerprint(data, fd=None):
    """{"sha256", "bytes"} of a call's output: `data` captured, or the file behind `fd` (a job's); None
    when there is neither."""
    if data is None and fd is None:
        return None
    import hashlib  # only for a call whose output nexus holds anyway

    digest, size = hashlib.sha256(), 0
    if data is not None:
        digest.update(data)
        size = len(data)
    else:
        while chunk := os.pread(fd, 1 << 20, size):
            digest.update(chunk)
            size += len(chunk)
    return {"sha256": digest.hexdigest(), "bytes": size}


def not_recorded(error):
    return f"could not record the call: {error.filename or 'usage log'}: {error.strerror}"


class _Nothing:
    """Stands in for process.Forwarding where signals are not ours to pass on."""

    child = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def record(entry, config, no_log, ts, ms, exit_code, error=None, changes=None, args=None, tool=None, session=None,
           refused=None, masked=None, profile=None, sandbox=None, call=None, output=None):
    """Count one call in the skill's state and append it to its usage log, under the skill's lock; the
    profile in force (`profile`, else the one chosen) is logged with it, and with `call`, its id and what
    the agent says of itself in the environment (schema.call_context)."""
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
                                      profile=profile.name if profile else None, sandbox=sandbox)
            line.update(schema.call_context(os.environ), **({"call": call} if call else {}),
                        **({"output": output} if output else {}))
            usage_log.append(entry["name"], state, line, config)


def prompt(entry, config, args, warn, values=None):
    """A prompt skill: print its instructions, its variables filled in, and record the call."""
    from ..skill import skillmd  # lazily, as verify and shlex below: each serves one kind of call

    started, ts = time.monotonic(), schema.now_iso()
    text = plan.fill(skillmd.prompt(entry), values or {})
    ms = int((time.monotonic() - started) * 1000)
    if args["--json"]:
        text = fastjson.dumps({"skill": entry["name"], "type": schema.logged_type(entry), "exit": 0, "ms": ms,
                               "stdout": text, "stderr": ""}) + "\n"
    write_or_quit(text)
    try:
        record(entry, config, args["--no-log"], ts, ms, 0, session=session_id(os.environ.get("NEXUS_SESSION_ID"), warn))
    except OSError as e:
        warn(not_recorded(e))
    return 0


def ensure_verified(entry, config, binary, warn, confined=False):
    """First-run verification: the state changes to record, or Refused when it fails. A skill whose
    binary changed since it was verified is verified again, and says why."""
    state = skill_state.read(entry["name"], entry, warn)
    if status.is_verified(entry, state):
        if not health.changed(state["fingerprint"].get("binary"), binary):
            return {}
        warn(f"{entry['name']} changed since it was verified ({binary}): verifying again")
    from . import verify

    if not entry.get("verify"):  # nothing to verify beyond the binary, which exists
        ts = schema.now_iso()
        return {"configured": True, "fingerprint": verify.fingerprint(entry, config, None, ts),
                "configuredAt": state.get("configuredAt") or ts}
    print(f"Verifying skill '{entry['name']}'...", file=sys.stderr)
    outcome = verify.verify(entry, config, confined=confined, warn=warn)
    if outcome.get("drift"):
        warn(f"{entry['name']}: its verify command prints something else than when it last passed")
    if not outcome["ok"]:
        raise Refused("needs-setup", f"Skill '{entry['name']}' is not configured: {outcome['error']}\n"
                         f"Run 'nexus skill show {entry['name']}' for setup instructions.")
    return {}


def dry_run(entry, argv, cwd, env_names, args):
    from ..style import shell_line, shell_word

    timeout = float(args["--timeout"]) if args["--timeout"] else None
    planned = {"skill": entry["name"], "type": entry["type"], "argv": argv, "cwd": cwd or os.getcwd(),
               "env": env_names, "timeout": timeout}
    if args["--json"]:
        print(fastjson.dumps(planned))
    else:
        print(shell_line(argv))  # the exact argv, as a shell would need it, nothing in it obeyed by the terminal
        print(f"cwd: {shell_word(planned['cwd'])}")
        print("env: " + (shell_line(env_names) or "(none injected)"))
    return 0


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


# The same command is `nexus skill run` (the command table points here) and `nexus-run` (its own usage).
command.parser = parse
command.__doc__ = DESCRIPTION + "\n" + usage("nexus skill run")
