"""What nexus-run and nexus-verify share: a skill's command line, its environment, and verification.

Verification is "Option C": once on first use, trusted until a run fails or SKILL.md changes.
Only `nexus-verify` and the first `nexus-run` of a skill ever call verify().
"""

import os
import time

from . import config as configlib, schema, state as statelib, status
from .errors import NexusError

VERIFY_TIMEOUT = 30
ERROR_CHARS = 200


def environment(entry, config):
    """The tool's environment: ours, plus the skill's injected vars, with skills.binPath before PATH."""
    env = dict(os.environ)
    env.update(status.injected_env(entry, config))
    extra = configlib.bin_path(config)
    if extra:
        env["PATH"] = os.pathsep.join(extra + [env.get("PATH", "")])
    env["NEXUS_CALLER_CWD"] = os.getcwd()
    return env


def secrets(entry, env):
    """Values of the env vars a skill declares as secret, to be masked in logs."""
    names = status.env_names(entry) + [status.primary_env(entry)]
    return sorted({env[n] for n in names if n and env.get(n)}, key=len, reverse=True)


def command(entry, args, config):
    """(argv, cwd) to execute a tool or script skill; NexusError when its binary is missing."""
    dirs = status.search_dirs(config)
    binary = entry.get("tool") if entry["type"] == "tool" else entry.get("runner")
    found = status.which(binary, dirs) if binary else None
    if not found:
        raise NexusError(not_installed_message(entry, binary))
    if entry["type"] == "tool":
        return [found, *args], None
    skill_dir = os.path.realpath(entry["dir"])
    script = os.path.realpath(os.path.join(skill_dir, entry.get("script") or ""))
    if not script.startswith(skill_dir + os.sep) or not os.path.isfile(script):
        raise NexusError(f"Skill '{entry['name']}': script '{entry.get('script')}' is not a file inside {skill_dir}")
    return [found, script, *args], skill_dir


def not_installed_message(entry, binary):
    from . import install

    lines = [f"Tool '{binary}' not found in PATH." if binary else f"Skill '{entry['name']}' names no tool to run."]
    hints = install.hints(entry)
    if hints:
        lines.append("Install with: " + hints[0])
        lines += ["          or: " + h for h in hints[1:]]
    return "\n".join(lines)


def setup_message(entry, missing):
    from . import paths

    needs = missing["env"] + [f"config {p} (in {paths.config_file()})" for p in missing["config"]]
    return f"Skill '{entry['name']}' is not configured: needs " + ", ".join(needs)


def setup_steps(entry, missing):
    """Numbered steps that take a skill from where it is to verified."""
    from . import install, paths

    name, steps = entry["name"], []
    if missing["bins"] or missing["anyBins"]:
        hints = install.hints(entry)
        what = ", ".join(missing["bins"]) or "one of " + ", ".join(missing["anyBins"])
        steps.append(f"Install {what}: {hints[0]}" if hints else f"Install {what} and put it on PATH")
    key = status.primary_env(entry)
    for var in missing["env"]:
        also = f", or set skills.entries.{entry.get('skillKey') or name}.apiKey in {paths.config_file()}" if var == key else ""
        steps.append(f"Set {var}: export {var}=...{also}")
    for path in missing["config"]:
        steps.append(f"Set {path} = true in {paths.config_file()}")
    if entry.get("verify"):
        steps.append(f"Make this succeed: {entry['verify']}")
    steps.append(f"Verify: nexus skill verify {name}")
    return [f"{i}. {step}" for i, step in enumerate(steps, 1)]


def verify(entry, config, timeout=VERIFY_TIMEOUT):
    """Check requirements, run the verify command, record the outcome in state; returns the outcome."""
    import hashlib

    from .usage import mask

    started = time.monotonic()
    outcome = {"skill": entry["name"], "type": entry["type"], "verify": entry.get("verify"),
               "ok": True, "exit": None, "error": None}
    missing = status.Checker(config).missing(entry)
    env = environment(entry, config)
    output = b""
    if entry["type"] == "prompt":
        pass
    elif missing["bins"] or missing["anyBins"]:
        outcome.update(ok=False, error=not_installed_message(entry, (missing["bins"] or missing["anyBins"])[0]))
    elif missing["env"] or missing["config"]:
        outcome.update(ok=False, error=setup_message(entry, missing))
    elif entry.get("verify"):
        code, output, errors = _run_verify(entry["verify"], env, timeout)
        outcome.update(ok=code == 0, exit=code)
        if code is None:
            outcome["error"] = f"verify command timed out after {timeout:g} s"
        elif code != 0:
            text = mask((errors or output).decode("utf-8", "replace").strip(), secrets(entry, env))
            outcome["error"] = text[-ERROR_CHARS:] or f"exit {code}"
    outcome["ms"] = int((time.monotonic() - started) * 1000)
    ts = schema.now_iso()
    with statelib.Update(entry["name"], entry) as state:
        for key in ("type", "tool", "verify"):
            if entry.get(key):
                state[key] = entry[key]
        if outcome["ok"] and not state.get("configured"):
            state["configuredAt"] = ts
        state.update(configured=outcome["ok"], lastVerified=ts, lastVerifyOk=outcome["ok"])
        if outcome["ok"]:
            state["fingerprint"] = fingerprint(entry, hashlib.sha256(output).hexdigest(), ts)
        else:
            state["lastError"] = outcome["error"][-ERROR_CHARS:]
    outcome["configured"] = outcome["ok"]
    return outcome


def fingerprint(entry, output_hash, ts):
    """What a verification vouched for: this SKILL.md (spec 9.3), and what the verify command printed."""
    return {"skillSha256": entry.get("sha256"), "verifyOutputHash": output_hash, "capturedAt": ts}


def _run_verify(command, env, timeout):
    """(exit, stdout, stderr) of `sh -c command`; exit is None after a timeout.

    It runs in a process group of its own, which is ended once the shell is done: a background
    process the command left cannot hold verification open. Output goes to files, not pipes, for
    the same reason.
    """
    import signal
    import subprocess
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(["/bin/sh", "-c", command], env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read()
