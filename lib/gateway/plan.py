"""What running a skill means: its command line, its environment, the secrets to mask, and what to tell
a person when it cannot run yet. Nothing here runs anything."""

import os

from .. import config as configlib, paths, schema
from ..catalog import status
from ..errors import NexusError, Refused, UsageError
from ..schema import SECRET, secret_name
from ..skill import entry as entrylib

MIN_SECRET_CHARS = 6  # shorter values are not secrets: masking "a" would garble every line and show where "a" is


def environment(entry, config, caller=None, profile=None, call=None, base=None):
    """(the environment a tool or script skill's program gets, the secrets to mask in all that is shown or
    logged of its call): the one place both are made, from the skill, its caller (a gateway.call.Caller;
    None: a verify command's, for no caller) and the config. Ours,
    plus the skill's injected vars, with skills.binPath before PATH; the folder the caller works in
    (NEXUS_CALLER_CWD), the mark of a gateway call (NEXUS_SKILL), the `profile` in force (which what the
    tool runs through nexus keeps) and the call's id (NEXUS_PARENT_CALL). A confined call's is narrowed
    further (gateway.sandbox). `base`: a copy of ours made once for many (verify --all): copying a dict is
    cheaper than copying os.environ, which decodes each variable."""
    env = dict(os.environ if base is None else base)
    if caller is not None and caller.model:
        withhold(env, entry, config)
    env.update(status.injected_env(entry, config))
    extra = configlib.bin_path(config)
    if extra:
        env["PATH"] = os.pathsep.join(extra + [env.get("PATH", "")])
    env["NEXUS_CALLER_CWD"] = caller and caller.folder or os.getcwd()
    env[MARK] = entry["name"]  # inside a gateway call: what lowers the gate is refused (refuse_inside)
    if entry.get("source") in paths.ADDED:
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # trust counts __pycache__, where Python finds bytecode to run
    if profile:  # what the tool itself runs through nexus stays in the caller's profile
        env[schema.PROFILE_ENV] = profile.name
    if call:
        env["NEXUS_PARENT_CALL"] = call
    return env, secrets(entry, env, config)


MARK = schema.GATEWAY_MARK


def withhold(env, entry, config):
    """Narrow our environment for a tool a model calls (nexus-mcp, either transport): out go every variable
    another skill declares (requires.env, primaryEnv: its secret, whichever profile it is in) and every
    variable whose name says secret (schema.secret_name, or OTLP's *_HEADERS, which carry credentials) that
    this skill does not declare; its own stay. A person's shell (`nexus skill run`) keeps the whole of it:
    whoever has the shell has the environment."""
    own = declared_env(entry)
    others = declared_elsewhere() - own
    for name in list(env):
        if name not in own and (name in others or secret_name(name) or name.upper().endswith("_HEADERS")):
            del env[name]


def declared_env(entry):
    """The env vars a skill declares (requires.env, primaryEnv, its variables): what it keeps where its
    environment is narrowed (withhold; a confined call's, gateway.sandbox.handed)."""
    return {*entrylib.env_names(entry), entrylib.primary_env(entry),
            *(v.get("name") for v in entry.get("variables") or () if isinstance(v, dict))} - {None}


_DECLARED = [None, frozenset()]  # (the manifest's stamp, the variables its skills declare)


def declared_elsewhere():
    """The env vars any skill of the manifest declares (requires.env, primaryEnv), kept while the manifest
    file is unchanged."""
    from ..catalog import manifest  # a model's call only (the manifest's every skill)

    stamp = paths.mtime(paths.manifest_file())
    if stamp is None or _DECLARED[0] != stamp:
        names = set()
        for other in manifest.cached_skills().values():
            names.update(entrylib.env_names(other))
            names.add(entrylib.primary_env(other))
        names.discard(None)
        _DECLARED[:] = [stamp, frozenset(names)]
    return _DECLARED[1]


def policy_refusal(entry, profile):
    """The Refused for a skill that nothing may start, not even its verify command, or None: one outside
    the `profile` in force (scope), or an added skill whose files changed behind nexus's back (trust)."""
    if profile and not profile.admits(entry):
        return Refused("scope", f"Skill '{entry['name']}' is not available to profile {profile.name}. "
                                f"To see what it may use: nexus profiles")
    if entry.get("source") not in paths.ADDED:  # only an added skill is bound to the files approved
        return None
    from .. import trust  # an added skill's call only: the gateway's other calls never load it

    untrusted = trust.refusal(entry)
    return Refused("trust", untrusted) if untrusted else None


def inside():
    """'inside a gateway call of skill NAME' when we run in a skill's process tree (the gateway marks the
    environment it hands a tool), else None."""
    return f"inside a gateway call of skill '{os.environ[MARK]}'" if os.environ.get(MARK) else None


def refuse_inside(what):
    """NexusError when we run inside a gateway call: no skill lowers its own gate."""
    if inside():
        raise NexusError(f"refused: {what} from {inside()}")


def confined(entry, config):
    """True when the skill's calls run confined (gateway.sandbox): skills.sandbox.mode all, or untrusted (the
    default) for a skill added from elsewhere (`skills add`, a project's `skills sync`). Here, so that an unconfined call never imports the sandbox."""
    mode = configlib.get(config, "skills.sandbox.mode", "untrusted")
    return mode == "all" or mode == "untrusted" and entry.get("source") in paths.ADDED


def secrets(entry, env, config):
    """The secrets nexus hands the tool, to be masked wherever nexus writes or shows them (long enough to
    be one), longest first: the values of the env vars the skill declares, its apiKey, and the config's env
    values whose name says secret (schema.secret_name) or that `nexus skill env --secret` marked."""
    skill_config = configlib.skill_entry(config, entry)
    given, marked = skill_config.get("env") or {}, skill_config.get("secretEnv") or ()
    names = entrylib.env_names(entry) + [entrylib.primary_env(entry)]
    names += [name for name in given if name in marked or secret_name(name)]
    found = {env[n] for n in names if n and len(env.get(n) or "") >= MIN_SECRET_CHARS}
    key = skill_config.get("apiKey")
    if isinstance(key, str) and len(key) >= MIN_SECRET_CHARS:  # masked even when no primaryEnv hands it on
        found.add(key)
    return sorted(found, key=len, reverse=True)


def with_variables(found, values):
    """The secrets `found`, and the values of the skill's variables whose name says secret (DEPLOY_TOKEN),
    longest first."""
    found = set(found) | {v for name, v in values.items() if secret_name(name) and len(v) >= MIN_SECRET_CHARS}
    return sorted(found, key=len, reverse=True)


VAR_OPTION = "--var {}=..."  # how `skill run` takes a variable: a refusal for a missing one says so


def variables(entry, given, environ=None, asked=VAR_OPTION):
    """{name: value} of the skill's variables (skills spec 9.4): given with --var NAME=VALUE, else the
    environment's (a tool or script skill only: a prompt's text goes to the agent, and the environment
    holds secrets a skill must not pull into it), else its default. UsageError for a --var the skill
    does not declare; Refused (`variables`) naming each required one that is still missing, and how
    the front end takes it (`asked`, formatted with its name)."""
    environ = os.environ if environ is None else environ
    if entry.get("type") not in ("tool", "script"):
        environ = {}
    declared = {v["name"]: v for v in entry.get("variables") or [] if not entrylib.reserved_env(v["name"])}
    unknown = [name for name in given if name not in declared]
    if unknown:
        names = ", ".join(declared) or "none"
        raise UsageError(f"Skill '{entry['name']}' has no variable {unknown[0]} (it declares: {names})")
    values, missing = {}, []
    for name, variable in declared.items():
        value = given.get(name, environ.get(name) or variable.get("default"))
        if value is None:
            missing.append(name)
        else:
            values[name] = value
    if missing:
        raise Refused("variables", f"Skill '{entry['name']}' needs " + ", ".join(
            f"{name} ({declared[name].get('description') or 'a variable'}): {asked.format(name)}" for name in missing))
    return values


def fill(text, values):
    """`text` with ${NAME} of each variable replaced by its value."""
    for name, value in values.items():
        text = text.replace("${" + name + "}", value)
    return text


def mask(text, secrets):
    """`text` with every occurrence of a whole secret value replaced by ***."""
    return masking(text, secrets)[0] if secrets else text


def masking(text, secrets):
    """(`text` masked, the offset of each *** in it that stands for a secret): each secret, longest first,
    cut out of the text left between those already masked, so a literal *** is never taken for one."""
    pieces = [text]  # text, and None for a secret masked
    for secret in secrets:
        if any(piece and secret in piece for piece in pieces):
            pieces = [cut for piece in pieces for cut in ([None] if piece is None else _cut(piece, secret))]
    out, at, offset = [], [], 0
    for piece in pieces:
        if piece is None:
            at.append(offset)
            piece = SECRET
        out.append(piece)
        offset += len(piece)
    return "".join(out), at


def secrets_of(name, config):
    """The secrets a call of skill NAME would mask now (its environment and config as a call computes them),
    for output it wrote that is shown later (`nexus job logs`); [] when there is no such skill."""
    from ..catalog import manifest  # a job's output only: a call has its entry already

    try:
        entry = manifest.entry(configlib.sources(config), name, lambda message: None)
    except NexusError:
        return []
    return environment(entry, config)[1]


class Masking:
    """Masks secrets in output read a chunk at a time (`nexus job logs`): what could be the start of a
    secret that the next chunk completes is held back until it is known."""

    def __init__(self, secrets):
        self.secrets = [s.encode("utf-8", "surrogateescape") for s in secrets]
        self.keep = max(map(len, self.secrets), default=1) - 1
        self.held = b""

    def feed(self, chunk, last=False):
        """The bytes of `chunk` (after what was held) that can be shown, secrets as ***."""
        data, self.held = self.held + chunk, b""
        if not self.secrets:
            return data
        pieces = [data]
        for secret in self.secrets:
            pieces = [cut for piece in pieces for cut in ([None] if piece is None else _cut(piece, secret))]
        if not last and pieces[-1] is not None and self.keep:
            tail = pieces[-1]
            pieces[-1], self.held = tail[:-self.keep], tail[-self.keep:]
        return b"".join(SECRET.encode() if piece is None else piece for piece in pieces)


def _cut(text, secret):
    parts = text.split(secret)
    return [item for i, part in enumerate(parts) for item in ((None, part) if i else (part,))]


def runs(entry):
    """The binary a tool or script skill runs: its tool, or its script's runner."""
    return entry.get("tool") if entry["type"] == "tool" else entry.get("runner")


def command(entry, args, config):
    """(argv, cwd) to execute a tool or script skill; Refused when it may not run as it says (invalid) or
    its binary or script is missing (not-installed)."""
    unsafe = entrylib.unsafe(entry)
    if unsafe:
        raise Refused("invalid", f"Skill '{entry['name']}': {unsafe}")
    binary = runs(entry)
    found = status.which(binary, status.search_dirs(config)) if binary else None
    if not found:
        raise Refused("not-installed", not_installed_message(entry, binary))
    if entry["type"] == "tool":
        return [found, *args], None
    skill_dir = os.path.realpath(entry["dir"])
    script = os.path.realpath(os.path.join(skill_dir, entry.get("script") or ""))
    if not paths.contains(skill_dir, script) or not os.path.isfile(script):
        raise Refused("not-installed", f"Skill '{entry['name']}': script '{entry.get('script')}' is not a file inside {skill_dir}")
    return [found, script, *args], skill_dir


def not_installed_message(entry, binary):
    from ..skill import installspec  # a refusal's message: not on the way of a run that goes ahead
    from ..style import visible

    lines = [f"Tool '{visible(binary)}' not found in PATH." if binary else f"Skill '{entry['name']}' names no tool to run."]
    hints = [visible(hint) for hint in installspec.hints(entry)]  # one line each: a message of several lines
    if hints:
        lines.append(f"Install with: nexus skill install {entry['name']} (it runs: {hints[0]})")
        lines += ["          or: " + h for h in hints[1:]]
    return "\n".join(lines)


def setup_message(entry, missing):
    needs = missing["env"] + [f"config {p}" for p in missing["config"]]
    step = next_step({**entry, "status": "needs-setup", "missing": missing})
    return f"Skill '{entry['name']}' is not configured: needs {', '.join(needs)}. To fix: {step}"


def next_step(record):
    """The one command that takes a skill that is not ready on towards ready (a record of
    catalog.listing), or None when there is none to give: every refusal and 'needs setup' line ends
    with it."""
    name, status, missing = record["name"], record["status"], record.get("missing") or {}
    if record.get("reason") and status != "unsupported":  # it needs another skill: show lists every step
        return f"nexus skill show {name}"
    if status == "needs-setup":
        env, paths_ = missing.get("env", []), missing.get("config", [])
        if env and len(env) + len(paths_) == 1:
            return f"nexus skill key {name}" if env[0] == entrylib.primary_env(record) else f"nexus skill env {name} {env[0]}=..."
        if paths_ and len(paths_) + len(env) == 1:
            return f"nexus config set {paths_[0]} true"
        return f"nexus skill show {name}"  # several things to set, or its verification failed
    if status == "not-installed":
        from ..skill import installspec  # as in not_installed_message: a skill that is not installed only

        hints = installspec.hints(record)
        return hints[0] if hints else None
    if status == "disabled":
        return f"nexus skill enable {name}" if record.get("disabledReason") == "disabled in config" else f"nexus skill show {name}"
    return None


def enable_command(entry, config):
    """The command that enables a disabled skill: `nexus skill enable`, or for a bundled skill that
    skills.allowBundled leaves out, the `nexus config set` that adds it there."""
    name, allow = entry["name"], configlib.get(config, "skills.allowBundled")
    left_out = entry.get("source") == "nexus-bundled" and isinstance(allow, list) and name not in allow
    if left_out and configlib.skill_entry(config, entry).get("enabled") is not False:
        import shlex  # a bundled skill left out only; shlex brings `re`, config.edit tomllib and tomli-w

        from ..config.edit import inline

        return f"nexus config set skills.allowBundled {shlex.quote(inline([*allow, name]))}"
    return f"nexus skill enable {name}"


def not_ready_reason(record):
    """One line on why a skill with its status (a record of catalog.listing) is not ready."""
    if record.get("reason"):  # the catalogue's own: a requirement on another skill, another platform
        return record["reason"]
    status, missing = record["status"], record.get("missing", {})
    if status == "needs-setup":
        needs = missing["env"] + [f"config {p}" for p in missing["config"]]
        return "needs: " + ", ".join(needs) if needs else "verification failed"
    if status == "not-installed":
        from ..skill import installspec  # as in not_installed_message: a skill that is not installed only

        if missing.get("script") and not (missing["bins"] or missing["anyBins"]):
            return f"missing its script: {missing['script'][0]}"
        hints = installspec.hints(record)
        return "install: " + hints[0] if hints else "missing: " + ", ".join(missing["bins"] or missing["anyBins"])
    if status == "disabled":
        return record.get("disabledReason", "disabled")
    if status == "unsupported":
        return "os: " + ", ".join(record.get("os", []))
    return record.get("error", "")


def setup_steps(entry, missing):
    """Numbered steps that take a skill from where it is to verified."""
    from ..skill import installspec  # setup advice only: never on the way of a run that goes ahead

    name, steps = entry["name"], []
    if missing.get("script"):
        steps.append(f"Put its script back: {os.path.join(entry.get('dir', ''), missing['script'][0])} is not a file")
    if missing["bins"] or missing["anyBins"]:
        hints = installspec.hints(entry)
        what = ", ".join(missing["bins"]) or "one of " + ", ".join(missing["anyBins"])
        steps.append(f"Install {what}: nexus skill install {name} (it runs: {hints[0]})" if hints
                     else f"Install {what} and put it on PATH")
    key = entrylib.primary_env(entry)
    for var in missing["env"]:
        keep = f"nexus skill key {name}" if var == key else f"nexus skill env {name} {var}=..."
        steps.append(f"Set {var}: export {var}=..., or keep it in the config: {keep}")
    for path in missing["config"]:
        steps.append(f"Set {path}: nexus config set {path} true")
    for capability in missing.get("capabilities", []):
        steps.append(f"Make a provider of {capability} ready: nexus capability resolve {capability} --explain")
    for skill in missing.get("skills", []):
        steps.append(f"Make the skill {skill} ready: nexus skill show {skill}")
    if entry.get("verify"):
        steps.append(f"Make this succeed: {entry['verify']}")
    steps.append(f"Verify: nexus skill verify {name}")
    return [f"{i}. {step}" for i, step in enumerate(steps, 1)]
