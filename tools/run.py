"""nexus-run: the gateway. Run a skill's tool or script, or print its prompt; log every call.

Tool skills run `TOOL ARGS` in the caller's folder; script skills run `RUNNER SCRIPT ARGS` in the
skill's folder; prompt skills print their instructions. stdin and stdout are the tool's own;
stderr streams through too, and its tail is kept for the log. A skill is verified on its first
run, after a failed run, and after its SKILL.md changed. Every call is appended to the skill's
usage log and counted in its state. `nexus skill run` is the same command.

Usage:
  nexus-run NAME [--dry-run] [--no-verify] [--no-log] [--json] [--timeout SECONDS] [-- ARGS...]
  nexus-run (-h | --help)

Options:
  --dry-run          Print the exact argv, working directory and injected env names; run nothing.
  --no-verify        Skip the verification a first run would do.
  --no-log           Leave this call out of the usage log (the state counters still count it).
  --json             Capture the tool's output into one JSON object: skill, type, exit, ms, stdout, stderr.
  --timeout SECONDS  End the tool after SECONDS as timeout(1) does: SIGTERM to its process group,
                     SIGKILL 5 s later; the exit status is then 124.
  -h --help          Show this help.

Options go right after NAME; the tool's arguments follow `--` (or start at the first word that is
not an option).

Environment:
  NEXUS_SESSION_ID  Recorded with each call, so an agent's calls can be grouped.
  The tool also gets NEXUS_CALLER_CWD (the caller's folder), the skill's configured env and apiKey,
  and skills.binPath before PATH.

Exit status:
  N    the tool's own exit status; 128+N when it was killed by signal N; 124 after --timeout
  1    the gateway refused: not found, disabled, not installed, not configured, verification failed
  2    usage error, or a malformed config

Examples:
  nexus-run tmux -- list-sessions
  nexus-run filesystem                       # prints the prompt
  nexus-run disk-report --timeout 60 -- ~/Downloads --top 5
  nexus-run gog --json -- gmail search is:unread | jq -r .stdout
"""

import os
import sys
import time

from nexus import catalog, cli, config as configlib, state as statelib, status
from nexus.errors import NexusError, UsageError
from nexus.gateway import ERROR_CHARS
from nexus.schema import now_iso

PROG = "nexus-run"
FLAGS = {"--dry-run": "dry_run", "--no-verify": "no_verify", "--no-log": "no_log", "--json": "json"}
KILL_AFTER = 5
USAGE = "usage: nexus-run NAME [--dry-run] [--no-verify] [--no-log] [--json] [--timeout SECONDS] [-- ARGS...]"


def parse(argv):
    """A hand-written parser: docopt costs more to import than the whole gateway may spend."""
    opts = dict.fromkeys(FLAGS.values(), False)
    opts.update(name=None, args=[], timeout=None)
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            opts["args"] = argv[i + 1:]
            break
        if word in ("-h", "--help"):
            sys.stdout.write(__doc__.strip("\n") + "\n")
            raise SystemExit(0)
        if word in FLAGS:
            opts[FLAGS[word]] = True
        elif word == "--timeout" or word.startswith("--timeout="):
            value = word.partition("=")[2] if "=" in word else (argv[i + 1] if i + 1 < len(argv) else "")
            i += "=" not in word
            try:
                opts["timeout"] = cli.number(value, "--timeout")
            except UsageError as e:
                raise UsageError(f"{e}\n{USAGE}") from None
        elif word.startswith("-") and word != "-":
            raise UsageError(f"unknown option {word!r} (pass the tool's options after '--')\n{USAGE}")
        elif opts["name"] is None:
            opts["name"] = word
        else:
            opts["args"] = argv[i:]
            break
        i += 1
    if opts["name"] is None:
        raise UsageError(f"which skill? a NAME is required\n{USAGE}")
    return opts


def load_entry(name, config):
    entry = catalog.entry(config, name, lambda line: cli.warn(PROG, line))
    checker = status.Checker(config)
    reason = checker.disabled_reason(entry)
    if reason:
        from nexus import paths

        fix = ("add it to skills.allowBundled" if entry["source"] == "nexus-bundled" and reason != "disabled in config"
               else f"set skills.entries.{entry.get('skillKey') or name}.enabled = true")
        raise NexusError(f"Skill '{name}' is disabled ({reason}). To enable it, {fix} in {paths.config_file()}")
    if not checker.supported(entry):
        raise NexusError(f"Skill '{name}' is not available on {checker.platform} (os: {', '.join(entry['os'])})")
    return entry, checker


def record(entry, config, opts, state_extra, ts, ms, exit_code, error=None, args=None, tool=None):
    """Log the call and count it, under the skill's lock. A failure to write is reported, never
    raised: the tool has run, and its exit status must still come through."""
    try:
        _record(entry, config, opts, state_extra, ts, ms, exit_code, error, args, tool)
    except OSError as e:
        cli.warn(PROG, f"could not record the call: {e.filename or ''}: {e.strerror}")


def _record(entry, config, opts, state_extra, ts, ms, exit_code, error, args, tool):
    from nexus import schema, usage

    with statelib.Update(entry["name"], entry, lambda m: cli.warn(PROG, m)) as state:
        state.update(state_extra)
        statelib.count_call(state, ts, exit_code == 0, ms)
        if error:
            state["lastError"] = error
        if not opts["no_log"]:
            line = schema.usage_entry(ts, entry["name"], entry["type"], ms, args=args, exit=exit_code,
                                      error=error, tool=tool, session=os.environ.get("NEXUS_SESSION_ID"))
            usage.append(entry["name"], state, line, config)


def run_prompt(entry, config, opts):
    from nexus import skillmd

    started, ts = time.monotonic(), now_iso()
    text = skillmd.prompt(entry)
    ms = int((time.monotonic() - started) * 1000)
    if opts["json"]:
        text = cli.dumps({"skill": entry["name"], "type": "prompt", "exit": 0, "ms": ms, "stdout": text, "stderr": ""}) + "\n"
    sys.stdout.write(text)
    sys.stdout.flush()
    record(entry, config, opts, {}, ts, ms, 0)
    return 0


def ensure_verified(entry, config):
    """First-run verification: state changes to record, or NexusError when it fails."""
    from nexus import gateway

    state = statelib.read(entry["name"], entry, lambda m: cli.warn(PROG, m))
    if status.is_verified(entry, state):
        return {}
    if not entry.get("verify"):  # nothing to verify beyond the binary, which exists
        return {"configured": True, "fingerprint": gateway.fingerprint(entry, None, now_iso())}
    print(f"Verifying skill '{entry['name']}'...", file=sys.stderr)
    outcome = gateway.verify(entry, config)
    if not outcome["ok"]:
        raise NexusError(f"Skill '{entry['name']}' is not configured: {outcome['error']}\n"
                         f"Run 'nexus skill show {entry['name']}' for setup instructions.")
    return {}


def dry_run(entry, argv, cwd, env_names, opts):
    import shlex

    plan = {"skill": entry["name"], "type": entry["type"], "argv": argv, "cwd": cwd or os.getcwd(),
            "env": env_names, "timeout": opts["timeout"]}
    if opts["json"]:
        print(cli.dumps(plan))
    else:
        print(shlex.join(argv))
        print(f"cwd: {plan['cwd']}")
        print("env: " + (" ".join(env_names) or "(none injected)"))
    return 0


def run(argv):
    opts = parse(argv)
    config = configlib.load()
    entry, checker = load_entry(opts["name"], config)
    if entry["type"] == "prompt":
        if opts["dry_run"]:
            return dry_run(entry, ["(prompt)", entry["filePath"]], None, [], opts)
        return run_prompt(entry, config, opts)
    from nexus import gateway
    from nexus.usage import mask

    env = gateway.environment(entry, config)
    secrets = gateway.secrets(entry, env)
    call = {"args": [mask(a, secrets) for a in opts["args"]],
            "tool": entry.get("tool") if entry["type"] == "tool" else entry.get("runner")}
    ts = now_iso()
    try:
        command, cwd = gateway.command(entry, opts["args"], config)
        missing = checker.missing(entry)
        if missing["env"] or missing["config"]:
            raise NexusError(gateway.setup_message(entry, missing))
        if opts["dry_run"]:
            return dry_run(entry, command, cwd, sorted(status.injected_env(entry, config)) + ["NEXUS_CALLER_CWD"], opts)
        state_extra = {} if opts["no_verify"] else ensure_verified(entry, config)
    except NexusError as e:
        if not opts["dry_run"]:
            record(entry, config, opts, {}, ts, 0, 1, error=mask(str(e).splitlines()[0], secrets)[-ERROR_CHARS:], **call)
        raise
    started, ts = time.monotonic(), now_iso()
    try:
        exit_code, error = (capture if opts["json"] else stream)(entry, command, cwd, env, opts["timeout"])
    except OSError as e:  # found, but the system cannot run it: no #! line, not executable, ...
        exit_code, error = 126, f"cannot run {command[0]}: {e.strerror}"
        cli.warn(PROG, error)
    ms = int((time.monotonic() - started) * 1000)
    if exit_code != 0:
        state_extra["configured"] = False  # trust until failure: verify again before the next run
    error = mask(error, secrets)[-ERROR_CHARS:] if exit_code != 0 and error else None
    record(entry, config, opts, state_extra, ts, ms, exit_code, error=error, **call)
    return exit_code


def stream(entry, command, cwd, env, timeout):
    """Run with the real stdin and stdout; tee stderr to keep its tail. Returns (exit, error)."""
    import _signal as signal  # the C module: `signal` wraps its constants in enums at a cost of ~2 ms

    capture_stderr = not os.isatty(2)  # on a terminal the tool keeps its real stderr (colours, progress)
    read_end = write_end = None
    actions = []
    if capture_stderr:
        read_end, write_end = os.pipe()
        actions.append((os.POSIX_SPAWN_DUP2, write_end, 2))
    own_group = timeout is not None
    resets = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGQUIT)
    child = {"pid": None, "timed_out": False}

    def forward(signum, _frame):
        if child["pid"]:
            try:
                os.killpg(child["pid"], signum) if own_group else os.kill(child["pid"], signum)
            except ProcessLookupError:
                pass

    def on_alarm(_signum, _frame):
        forward(signal.SIGKILL if child["timed_out"] else signal.SIGTERM, None)
        child["timed_out"] = True
        signal.setitimer(signal.ITIMER_REAL, KILL_AFTER)

    # Ctrl-C at our terminal reaches a tool in our process group by itself: then we only outlive it,
    # to log the call. Sent any other way (an agent's kill -INT), or with a group of its own, we forward it.
    by_terminal = not own_group and in_terminal_foreground()
    for signum in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_IGN if by_terminal else forward)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    if cwd:
        os.chdir(cwd)
    group = {"setpgroup": 0} if own_group else {}
    child["pid"] = os.posix_spawn(command[0], command, env, file_actions=actions, setsigdef=resets, **group)
    if timeout is not None:
        signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    tail, wait_status = b"", None
    if capture_stderr:
        os.close(write_end)
        tail, wait_status = tee(read_end, child["pid"])
    if wait_status is None:
        _, wait_status = os.waitpid(child["pid"], 0)
    signal.setitimer(signal.ITIMER_REAL, 0)
    exit_code = os.waitstatus_to_exitcode(wait_status)
    if child["timed_out"]:
        return 124, f"timed out after {timeout:g} s"
    if exit_code < 0:
        return 128 - exit_code, f"killed by signal {-exit_code}"
    return exit_code, tail.decode("utf-8", "replace").strip() or (f"exit {exit_code}" if exit_code else None)


def in_terminal_foreground():
    """True when our process group is the foreground group of the terminal we run on."""
    for fd in (0, 1, 2):
        try:
            return os.tcgetpgrp(fd) == os.getpgrp()
        except OSError:
            continue
    return False


def tee(read_end, pid):
    """Copy the tool's stderr to ours as it comes. Returns (its last bytes, the tool's wait status,
    or None when its stderr closed first). A background process that keeps the pipe open after the
    tool has exited does not keep us waiting."""
    import select

    tail, wait_status = b"", None
    while True:
        if not select.select([read_end], [], [], 0.1 if wait_status is None else 0)[0]:
            if wait_status is not None:
                break  # the tool is gone and nothing more is waiting in the pipe
            done, status = os.waitpid(pid, os.WNOHANG)
            wait_status = status if done else None
            continue
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        tail = (tail + chunk)[-4 * ERROR_CHARS:]
        try:
            view = memoryview(chunk)
            while view:
                view = view[os.write(2, view):]
        except OSError:
            pass  # our stderr is gone; keep draining so the tool is not blocked
    os.close(read_end)
    return tail, wait_status


def capture(entry, command, cwd, env, timeout):
    """--json: run with output captured, print one JSON object. Returns (exit, error)."""
    import signal
    import subprocess

    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=timeout is not None)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=KILL_AFTER)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        exit_code = 124
    else:
        exit_code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    stderr = err.decode("utf-8", "replace")
    print(cli.dumps({"skill": entry["name"], "type": entry["type"], "exit": exit_code,
                     "ms": int((time.monotonic() - started) * 1000),
                     "stdout": out.decode("utf-8", "replace"), "stderr": stderr}))
    error = f"timed out after {timeout:g} s" if exit_code == 124 and timeout else stderr.strip()
    return exit_code, error or (f"exit {exit_code}" if exit_code else None)


main = cli.command(PROG)(run)
