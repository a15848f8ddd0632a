"""nexus-run and `nexus skill run`: the gateway's command side. Its two rows of the command table, what
it reads on the command line and what it prints; who calls (a Caller) and the call itself (gate, verify,
spawn, record) are nexus.gateway.call.

This is the hot path: an agent calls it hundreds of times a session, so it imports no docopt, YAML,
subprocess or `re` (its record's parser reads argv by hand), and reads the cached manifest and config.
Its rows live here, not with the table's others (tools/commands.py lists them from here), so that a call
builds no other row and loads no module more: each module costs about 0.3 M instructions of the import
system's own, whatever its size (tests/bench/bench_run.py). The table loads this module for the rows
only: the call's modules are loaded by `run`.
"""

import os
import sys

from nexus import config as configlib, fastjson, schema
from nexus.catalog import scope
from nexus.cli.command import call as command_call, leave, options_first, prepared, quiet_stdout
from nexus.cli.output import PROCESS
from nexus.cli.records import FILE, PLUMBING, SKILL, Command, Option, number
from nexus.errors import UsageError


def run(ctx):
    """Tool skills run `TOOL ARGS` in the caller's folder; script skills run `RUNNER SCRIPT ARGS` in the
    skill's folder; prompt skills print their instructions. stdin and stdout are the tool's own;
    stderr streams through too, and its tail is kept for the log. A skill is verified on its first
    run, after a failed run, and after its SKILL.md changed. Every call is appended to the skill's
    usage log and counted in its state. `nexus skill run` and `nexus-run` are the same command.

    A skill added from elsewhere runs confined (skills.sandbox.mode): it gets what it is given, never
    everything but a list. It reads the system (/usr, /etc, /opt, ...), its own folder, {cwd}, {tmp}, {state}
    and its grants, never the secrets of skills.sandbox.deny nor nexus's own files inside them; writes only
    {tmp}, {state} and (a tool) {cwd}, staged; and has no network, unless its metadata.nexus.sandbox or
    `nexus skill allow` grants more. On Linux, Landlock and a
    network namespace enforce it; where they cannot, the call is refused (exit 1) unless
    skills.sandbox.fallback is "warn". The README's Security section says what is cut and what is not.

    Options go right after NAME; the tool's arguments follow `--` (or start at the first word that is
    not an option).

    Environment:
      NEXUS_SESSION_ID  Recorded with each call, so an agent's calls can be grouped.
      NEXUS_PROFILE     The profile in force (`--profile NAME` first of all sets it): a skill outside it
                        is refused. The tool gets it too, so what it runs through nexus stays in it.
      NEXUS_MODEL, NEXUS_MODEL_VERSION, NEXUS_PROMPT_TOKENS, NEXUS_COMPLETION_TOKENS
                        Recorded with each call when an agent sets them (model,
                        modelVersion, promptTokens, completionTokens); `nexus skill
                        stats` groups calls by model.
      NEXUS_TEMPERATURE
                        Recorded with each call as temperature when an agent sets it
                        (a number), as the skills spec's 9.5 has it.
      NEXUS_PARENT_CALL
                        Set for the tool: this call's id (the `call` of its log
                        line), recorded as parentCall by the calls the tool makes in
                        turn (a crystallized replay's).
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
    from nexus.catalog import manifest  # the call's: the table loads this module for its rows alone
    from nexus.gateway import call as gateway

    args, config = ctx.args, ctx.config
    entry = manifest.entry(configlib.sources(config), args["NAME"], ctx.warn)
    caller = gateway.Caller(gateway.COMMAND, ctx.warn, ctx.note, session=os.environ.get("NEXUS_SESSION_ID"),
                            log=not args["--no-log"], no_sandbox=args["--no-sandbox"],
                            terminal=gateway.at_a_terminal())
    call = gateway.Call(entry, config, caller, args["ARGS"], given_variables(args["--var"]))
    prompt = entry["type"] not in ("tool", "script")
    if args["--dry-run"]:  # what would happen: nothing does, a refusal is said and not logged
        argv, cwd, env_names = call.plan()
        return dry_run(entry, argv, cwd, env_names, args)
    if prompt:
        if args["--background"]:
            raise UsageError(f"'{entry['name']}' is a prompt skill: it has nothing to run in the background")
        return read(call, args, ctx.warn)
    call.prepare(verify=not args["--no-verify"])
    timeout = args["--timeout"]
    if args["--background"]:
        from nexus.gateway import jobs  # only for a background run: it brings the supervisor's fork

        job = jobs.start(call, timeout)
        write_or_quit(fastjson.dumps({"skill": entry["name"], "job": job}) + "\n" if args["--json"] else job + "\n")
        return 0
    # On a terminal the tool keeps its real stderr (colours, progress); elsewhere its tail is kept, and always for
    # a confined call (it has no terminal anyway): a denial is said from what its stderr names.
    done = call.execute(capture=args["--json"], timeout=timeout, tee=call.confined or not os.isatty(2), forward=True)
    if done.timed_out:  # exit 124 says it to a script; a person and an agent's log are told in words
        ctx.warn(f"'{entry['name']}' was stopped after --timeout {timeout:g} s (exit 124)")
    if args["--json"] and done.started:  # as MCP results are: masked
        write_or_quit(fastjson.dumps({"skill": entry["name"], "type": entry["type"], "exit": done.exit,
                                      "ms": done.ms, **call.output(done, "surrogateescape")}) + "\n")
    return done.exit


def read(call, args, warn):
    """A prompt skill's call: its instructions printed (a JSON document with --json)."""
    entry = call.entry
    text = call.read()
    if args["ARGS"]:
        warn(f"'{entry['name']}' is a prompt skill: it takes no arguments; ignored: {' '.join(args['ARGS'])}")
    if entry.get("unknownType"):  # skills spec 10: the prompt, with a warning, logged as unknown
        warn(f"'{entry['name']}' has type '{entry['unknownType']}', which nexus cannot run: "
             f"here are its instructions (logged as type unknown)")
    lacking = [item for items in call.checker.missing(entry).values() for item in items]
    if lacking:  # the instructions still come: they may say how to get what is missing
        warn(f"note: '{entry['name']}' needs {', '.join(lacking)} (see `nexus skill show {entry['name']}`)")
    if args["--json"]:
        text = fastjson.dumps({"skill": entry["name"], "type": schema.logged_type(entry), "exit": 0, "ms": call.ms,
                               "stdout": text, "stderr": ""}) + "\n"
    write_or_quit(text)
    return 0


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


def dry_run(entry, argv, cwd, env_names, args):
    """What would run, and where, with which env names: printed, nothing run."""
    from nexus.style import shell_line, shell_word  # only for --dry-run: style is not on the gateway's way

    planned = {"skill": entry["name"], "type": entry["type"], "argv": argv, "cwd": cwd or os.getcwd(),
               "env": env_names, "timeout": args["--timeout"]}
    if args["--json"]:
        print(fastjson.dumps(planned))
    else:
        print(shell_line(argv))  # the exact argv, as a shell would need it, nothing in it obeyed by the terminal
        print(f"cwd: {shell_word(planned['cwd'])}")
        print("env: " + (shell_line(env_names) or "(none injected)"))
    return 0


SECONDS = number()
RUN = "nexus.tools.plumbing.run:run"
RUN_SUMMARY = "The gateway: run a skill's tool or script, or print its prompt; every call is logged."
RUN_USAGE = ("NAME [--dry-run] [--no-verify] [--no-log] [--json] [--background] [--no-sandbox] [--timeout SECONDS] "
             "[--var NAME=VALUE]... [-- ARGS...]",)
RUN_ARGUMENTS = {"NAME": SKILL, "ARGS": FILE}
RUN_OPTIONS = (Option("--dry-run", "Print the exact argv, working directory and injected env names; run nothing."),
               Option("--no-verify", "Skip the verification a first run would do."),
               Option("--no-log", "Leave this call out of the usage log (the state counters still count it)."),
               Option("--json", "Capture the tool's output into one JSON object: skill, type, exit, ms, stdout, "
                                "stderr."),
               Option("--background", "Verify, then start the tool detached and print its job id at once (see "
                                      "`nexus jobs`): stdin /dev/null, stdout and stderr kept in files, the call "
                                      "recorded when it ends."),
               Option("--no-sandbox", "Run a skill that would run confined (see skills.sandbox.mode) with all your "
                                      "rights: for a person at a terminal; refused elsewhere, and from inside a "
                                      "gateway call."),
               Option("--timeout SECONDS", "End the tool after SECONDS as timeout(1) does: SIGTERM to its process "
                                           "group, SIGKILL 5 s later; the exit status is then 124.", SECONDS),
               Option("--var NAME=VALUE", "A variable the skill declares (metadata.nexus.variables): filled in for "
                                          "${NAME} in a prompt skill's text, and in the environment of a tool or "
                                          "script skill. A variable not given comes from the environment, else its "
                                          "default; one still missing is a refusal that names it.", repeat=True))

SKILL_RUN = Command("skill run", RUN, PROCESS, RUN_SUMMARY, usage=RUN_USAGE, options=RUN_OPTIONS,
                    arguments=RUN_ARGUMENTS, parser=options_first)
NEXUS_RUN = Command("nexus-run", RUN, PROCESS,
                    "the gateway. Run a skill's tool or script, or print its prompt; log every call.",
                    usage=RUN_USAGE, options=RUN_OPTIONS, arguments=RUN_ARGUMENTS, parser=options_first,
                    category=PLUMBING)


def main(argv=None):
    """nexus-run's: --profile NAME before anything else (catalog.scope.take_option), then the row; run as its
    script (argv None), it leaves at once (cli.command.leave)."""
    words, failed = prepared("nexus-run", sys.argv[1:] if argv is None else list(argv), scope.take_option)
    status = failed if failed is not None else command_call(NEXUS_RUN, words)
    return leave(status) if argv is None else status
