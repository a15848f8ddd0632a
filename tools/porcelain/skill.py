"""The porcelain's commands for one skill: `nexus skill show|verify|install`, and `nexus skills verify --all`."""

import os
import shlex
import sys

from nexus import config as configlib, trust
from nexus.catalog import capabilities, listing, status as statuslib
from nexus.cli.command import renders
from nexus.errors import NexusError
from nexus.gateway import plan, verify
from nexus.skill import entry as entrylib, installspec, skillmd
from nexus.skill.known import CONNECTOR_CHECKS
from nexus.state import skill_state
from nexus.style import Progress, Style, ask, last_line, terminal, visible, when, wrapped

EMOJI = {"ready": "✅", "needs-setup": "⚠️ ", "not-installed": "⏳", "disabled": "💤", "unsupported": "🚫", "invalid": "❌"}


def _evaluated(ctx):
    """(entry, state, {'status', 'verified', 'missing', ...}) of the skill (ctx.entry); the whole catalogue
    is read only for a skill whose status depends on others (its requirements, its connectors)."""
    entry = ctx.entry
    state = skill_state.of(entry, ctx.warn)
    if not (entry.get("implements") or entry.get("connectors") or capabilities.requirements(entry) != ([], [])):
        return entry, state, statuslib.Checker(ctx.config).evaluate(entry, state)
    record, records = listing.settled(ctx.config, entry["name"], ctx.warn)
    ready = capabilities.providers([r for r in records if r["status"] == "ready"])
    found = {c["name"]: c for c in capabilities.connectors(records, lambda r: [""])}
    connected = {name: c["connected"] for name, c in found.items()}
    result = {key: value for key, value in record.items() if key not in entry or key == "missing"}
    result["providers"] = {c: [p["name"] for p in ready.get(c, [])] for c in capabilities.requirements(entry)[0]}
    result["connected"] = {c: connected.get(c, False) for c in entry.get("connectors", [])}
    result["connect"] = {c: found[c]["unlock"]["step"] for c in entry.get("connectors", [])
                         if c in found and not found[c]["connected"] and found[c]["unlock"]["step"]}
    return entry, state, result


def _requirements(entry, result, style):
    ok, bad = ("✓", "✗") if style.fancy else ("ok", "MISSING")
    bullet, missing = style.bullet, result["missing"]
    lines = [f"  {bullet} Binary: {b} {bad if b in missing['bins'] else ok}" for b in entrylib.binaries(entry)]
    any_bins = entrylib.required(entry, "anyBins")
    if any_bins:
        lines.append(f"  {bullet} Any of: {', '.join(any_bins)} {bad if missing['anyBins'] else ok}")
    from_config_env = set(entry.get("configEnv") or [])  # the skills spec's configEnv: says the tool is set up
    lines += [f"  {bullet} Env: {var} {bad if var in missing['env'] else ok}"
              + (" (configEnv)" if var in from_config_env else "") for var in entrylib.env_names(entry)]
    lines += [f"  {bullet} Config: {path} {bad if path in missing['config'] else ok}"
              for path in entrylib.required(entry, "config")]
    return lines or [f"  {bullet} None"]


def _capabilities(entry, shown, style):
    """What the skill provides, what it needs from other skills, and the accounts it needs connected."""
    ok, bad = ("✓", "✗") if style.fancy else ("ok", "MISSING")
    bullet, lines = style.bullet, []
    if entry.get("implements"):
        lines.append(f"  {bullet} Implements: {', '.join(entry['implements'])}")
    capabilities_needed, skills_needed = capabilities.requirements(entry)
    for capability in capabilities_needed:
        ready = shown.get("providers", {}).get(capability) or []
        lines.append(f"  {bullet} Capability: {capability} " + (f"{ok} ({', '.join(ready)})" if ready else bad))
    missing = shown["missing"].get("skills", [])
    lines += [f"  {bullet} Skill: {skill} {bad if skill in missing else ok}" for skill in skills_needed]
    for connector, connected in shown.get("connected", {}).items():
        step = shown.get("connect", {}).get(connector)
        lines.append(f"  {bullet} Connector: {connector} " + ("connected" if connected else "not connected"
                                                              + (f" (to connect: {step})" if step else "")))
    if shown.get("reason"):
        lines.append(f"  {bullet} Not ready: {shown['reason']}")
    return lines


def render_prompt(shown, out):
    """--prompt-only: the prompt alone."""
    out.write(shown["text"])


def render_show(shown, out):
    style = Style(out)
    entry, state, bullet = shown, shown["state"], style.bullet
    emoji, label = EMOJI[shown["status"]], ", ".join(statuslib.state_words(shown)).capitalize()
    if shown["status"] == "ready" and entry["type"] != "prompt" and shown["verified"]:
        if state.get("lastVerified"):
            label += f" (last verified: {when(state['lastVerified'])})"
        else:  # no verify command: its first run vouched for it
            label += f" (verified by its first run: {when((state.get('fingerprint') or {}).get('capturedAt'))})"
    elif shown["status"] == "unsupported":
        label += f" (needs {', '.join(entry.get('os', []))}; this is {sys.platform})"
    title = style.emoji(entry.get("emoji")) + terminal(f"{entry['name'].upper()} - {visible(entry['description'])}", False)
    header = [style.rule(), *(style.color(part, "bold") for part in wrapped(title, style.columns)), style.rule()]
    lines = [""]
    failing = statuslib.failing(shown)
    if failing:
        emoji = "❗"
    lines.append(f"Status:     {style.emoji(emoji)}{label}")
    if failing:
        from nexus.state import health  # a failing skill's only

        aged = health.comes_back(state)
        lines.append(f"Comes back: after a successful `nexus skill verify {entry['name']}` or run at a terminal"
                     + (f", or by itself on {aged} (its failures 30 days old)" if aged else ""))
        lines.append("Offered:    to no agent while it fails")
    elif shown["status"] == "ready" and shown.get("recovered"):
        lines.append(f"Recovered:  {shown['recovered']}")
    if shown.get("untrusted"):
        lines.append(f"Refused:    {shown['untrusted']['reason']}")
    kind = {"tool": f"tool: {entry.get('tool')}", "script": f"script: {entry.get('runner')} {entry.get('script')}"}
    if entry.get("unknownType"):  # logged as `unknown`
        kind["prompt"] = f"unknown ({entry['unknownType']}): nexus cannot run it, and reads it as a prompt"
    lines.append(f"Type:       {kind.get(entry['type'], 'prompt')}")
    lines.append(f"Class:      {entrylib.CLASSES[shown['class']]}")
    lines.append(f"Source:     {entry['source']} ({entry['filePath']})")
    if entry.get("homepage"):
        lines.append(f"Homepage:   {entry['homepage']}")
    if entry.get("aliases"):
        lines.append(f"Aliases:    {', '.join(entry['aliases'])}")
    lines += ["", "Requirements:"] + _requirements(entry, shown, style) + _capabilities(entry, shown, style)
    if entry.get("variables"):  # skills spec 9.4: given with `nexus skill run NAME --var NAME=VALUE`
        lines += ["", "Variables (nexus skill run NAME --var NAME=VALUE):"]
        lines += [f"  {bullet} {v['name']}" + (f" ({v['type']})" if v.get("type") else "")
                  + (f": {v['description']}" if v.get("description") else "")
                  + (f" [default: {v['default']}]" if "default" in v else "") for v in entry["variables"]]
    from_config = shown["fromConfig"]
    if from_config["env"] or from_config["apiKey"]:
        lines += ["", "From the config (nexus skill env / nexus skill key):"]
        lines += [f"  {bullet} Env: {', '.join(from_config['env'])}"] if from_config["env"] else []
        as_env = f" (as {from_config['apiKeyEnv']})" if from_config["apiKeyEnv"] else " (no primaryEnv: unused)"
        lines += [f"  {bullet} apiKey: set{as_env}"] if from_config["apiKey"] else []
    allowed = shown.get("permissions")
    if allowed:
        lines += ["", "Sandbox:"]
        if allowed["confined"]:
            lines += [f"  {bullet} Confined ({allowed['available']})",
                      f"  {bullet} Network: {'yes' if allowed['network'] else 'no'}",
                      f"  {bullet} Writes: {', '.join(allowed['write'])}",
                      f"  {bullet} Reads: the system (/usr, /etc, /opt, ...), its folder, {{cwd}}, {{tmp}}, {{state}}"
                      + (f", {', '.join(allowed['read'])}" if allowed["read"] else "") + ", but skills.sandbox.deny"]
            lines += [f"  {bullet} Reads where its program lies: {', '.join(allowed['installed'])}"] \
                if allowed.get("installed") else []
            lines += [f"  {bullet} Unix sockets: {', '.join(allowed['unix'])}"] if allowed.get("unix") else []
        else:
            lines.append(f"  {bullet} Not confined (skills.sandbox.mode; confined it would have: network "
                         f"{'yes' if allowed['network'] else 'no'}, writes {', '.join(allowed['write'])})")
    if state.get("totalInvocations"):
        lines += ["", "Usage Stats:",
                  f"  {bullet} Total invocations: {state['totalInvocations']}",
                  *([f"  {bullet} Success rate: {state['successRate'] * 100:.1f}%"] if "successRate" in state else []),
                  *([f"  {bullet} Refused for policy: {state['policyRefusals']}"] if state.get("policyRefusals") else []),
                  f"  {bullet} Last used: {when(state.get('lastUsed'))}"]
    for flag in ("drifted",) if failing else ("degraded", "drifted"):  # failing: said in its status
        if shown.get(flag):
            lines.append(f"  {bullet} {flag.capitalize()}: {shown[flag + 'Reason']}")
    if shown.get("degraded") and (state.get("crystallizedFrom") or entry.get("requires", {}).get("skills")):
        lines.append(f"  {bullet} Fall back on the skills it replays: {', '.join(entry['requires']['skills'])}")
    lines = [terminal(line, lines=False) for line in lines]  # each one line, whatever a SKILL.md's field holds
    if state.get("lastError"):
        label = f"  {bullet} Last error: "
        lines.append(label + ("\n" + " " * len(label)).join(state["lastError"].splitlines()))
    lines += ["", style.rule(False), "PROMPT", style.rule(False), "", shown["prompt"].rstrip()]
    if failing:
        lines += ["", style.rule(False), "WHY IT FAILS", style.rule(False), "",
                  f"1. See its failed calls: nexus skill stats {entry['name']}",
                  f"2. Once fixed: nexus skill verify {entry['name']}"]
    elif not shown["verified"] or shown["status"] != "ready":
        lines += ["", style.rule(False), "SETUP", style.rule(False), "", "To configure this skill:"]
        lines += [visible(step) for step in plan.setup_steps(entry, shown["missing"])]
    out.write("".join(line + "\n" for line in header))  # at 80 columns as wide: every line wrapped, none cut
    fenced = False
    for line in "\n".join(lines).split("\n"):
        fenced ^= line.startswith("```")
        out.write("".join(part + "\n" for part in wrapped(line, style.columns, _hang(line, fenced))))


def _hang(line, code=False):
    """Where a line of `skill show` wrapped goes on: under a field's value (`Source:     ...`), a bullet's
    text, a list item's text, or the line's own indent; a line of code further in, so it reads as one."""
    head = line[:12]
    if head.endswith(" ") and head.rstrip().endswith(":") and " " not in head.rstrip():
        return 12
    indent = len(line) - len(line.lstrip(" "))
    return indent + (4 if code else 2 if line.lstrip(" ")[:2] in ("• ", "* ", "- ") else 0)


@renders(render_show, {"--prompt-only": render_prompt})
def show(ctx):
    """Says which env vars and key the config sets for the skill: their names, never their values."""
    entry, state, result = _evaluated(ctx)
    prompt = skillmd.prompt(entry)
    if ctx.args["--prompt-only"]:
        return {"text": prompt}
    skill_config = configlib.skill_entry(ctx.config, entry)
    from_config = {"env": list(skill_config.get("env", {})), "apiKey": "apiKey" in skill_config,
                   "apiKeyEnv": entrylib.primary_env(entry)}
    shown = trust.marked([{**entry, **result, "class": entrylib.skill_class(entry), "state": state,
                           "fromConfig": from_config, "prompt": prompt}])[0]
    from nexus.state import health  # how a skill that was failing came back: show alone

    came_back = health.recovery(state)
    if came_back:
        shown["recovered"] = came_back
    if entry["type"] != "prompt":
        from nexus.gateway import probes, sandbox  # a tool or script skill's permissions only

        shown["permissions"] = sandbox.effective(entry, ctx.config)
        if shown["permissions"]["confined"]:
            shown["permissions"]["available"] = probes.describe(probes.availability())
            shown["permissions"]["installed"] = sandbox.installed(entry, ctx.config)
    return shown


def render_outcome(outcome, out):
    style, name = Style(out), outcome["skill"]
    if outcome.get("skipped"):
        message = (f"Skill '{name}' is ready: a prompt skill needs no verification." if outcome["type"] == "prompt" else
                   f"Skill '{name}' is verified ({'last verified: ' + when(outcome['lastVerified']) if outcome['lastVerified'] else 'by its first run'}); "
                   "--force runs it again.")
        out.write(message + "\n")
    elif not outcome["ok"]:
        error = "\n          ".join(outcome["error"].splitlines())
        out.write(f"{style.emoji('❌')}Skill '{name}' verification failed.\n   Error: {error}\n")
        out.write("\n   Setup instructions:\n" + "".join(f"   {visible(step)}\n" for step in outcome["setup"]))
    elif outcome["type"] == "prompt":
        out.write(f"{style.emoji('✅')}Skill '{name}' is ready: a prompt skill needs no verification.\n")
    elif not outcome["verify"]:
        out.write(f"{style.emoji('✅')}Skill '{name}' has no verification command; its requirements are met.\n")
    else:
        out.write(f"{style.emoji('✅')}Skill '{name}' verified successfully.\n")
    if outcome["ok"] and outcome.get("configuredAt") and outcome["type"] != "prompt" and not outcome.get("skipped"):
        out.write(f"   Configured at: {outcome['configuredAt']}\n")
    render_connected(outcome, out)


def render_connected(outcome, out):
    """How the checks of the skill's connectors went (`gh auth status`), and the step that connects one."""
    style = Style(out)
    for name, check in outcome.get("connectors", {}).items():
        if check["ok"]:
            out.write(f"{style.emoji('🔓')}Connector {name}: connected\n")
        else:
            out.write(f"{style.emoji('🔒')}Connector {name}: not connected ({' '.join(CONNECTOR_CHECKS[name][0])}: "
                      f"{visible(last_line(check.get('error') or ''))}); to connect: {CONNECTOR_CHECKS[name][1]}\n")


def verified(entry, config, timeout=verify.VERIFY_TIMEOUT):
    """Verify a skill; its outcome, with the steps that fix a failure."""
    outcome = verify.verify(entry, config, timeout)
    if not outcome["ok"]:
        outcome["setup"] = plan.setup_steps(entry, statuslib.Checker(config).missing(entry))
    return outcome


@renders(render_outcome)
def verify_skill(ctx):
    """A verified skill stays trusted until a run fails or its SKILL.md changes: its verify command is
    then skipped (--force runs it), but its requirements (binaries, env vars, config) are checked on
    every verify, and one that is missing fails it.

    Exit status:
      0  verified;  1  verification failed, or no such skill;  2  usage error
    """
    args = ctx.args
    entry, state, result = _evaluated(ctx)
    unchecked = _unchecked_connectors(entry)
    if result["verified"] and result["status"] == "ready" and not args["--force"] and not unchecked:
        return {"skill": entry["name"], "type": entry["type"], "verify": entry.get("verify"), "ok": True,
                "configured": True, "exit": None, "error": None, "ms": 0, "skipped": True,
                "lastVerified": state.get("lastVerified"), "configuredAt": state.get("configuredAt")}
    if not args["--json"]:
        said = _what_verify_does(entry, ctx.config, unchecked)
        if said:
            print(f"Verifying skill '{entry['name']}'...\n{said}\n", file=sys.stderr)
    outcome = verified(entry, ctx.config, args["--timeout"])
    ctx.status = 0 if outcome["ok"] and all(c["ok"] for c in outcome.get("connectors", {}).values()) else 1
    return outcome


def _unchecked_connectors(entry):
    """The checks (known.CONNECTOR_CHECKS) of the skill's connectors that have not passed: a verify runs them
    even for a skill verified already."""
    checks = capabilities.checked()
    return [" ".join(CONNECTOR_CHECKS[c][0]) for c in entry.get("connectors") or []
            if c in CONNECTOR_CHECKS and not (checks.get(c) or {}).get("ok")]


def _what_verify_does(entry, config, connector_checks):
    """What a verify is about to do, said before it does it: "Checking: BRAVE_API_KEY" while a requirement
    is missing (nothing runs then), else "Running: COMMAND" of each command it runs."""
    missing = statuslib.Checker(config).missing(entry)
    lacking = [name for names in missing.values() for name in names]
    if lacking:
        return f"Checking: {visible(', '.join(lacking))} (missing: nothing runs)"
    commands = ([entry["verify"]] if entry.get("verify") and entry["type"] != "prompt" else []) + connector_checks
    return "\n".join(f"Running: {visible(command)}" for command in commands)


MANY = 10  # skipped skills beyond which they are counted, not listed one a line


def render_outcomes(outcomes, out):
    """Each verification as it ends; the failures last, then a line of totals (long work ends in one)."""
    style, skipped, failed, verified = Style(out), [], [], 0
    for outcome in outcomes:
        if outcome.get("skipped"):
            skipped.append(outcome)
            continue
        if outcome["ok"]:
            verified += 1
            drift = " (drifted: its verify command prints something else than last time)" if outcome.get("drift") else ""
            out.write(f"{style.emoji('✅')}{outcome['skill']}: verified{drift}\n")
            out.flush()
        else:
            failed.append(outcome)
    if len(skipped) <= MANY:
        out.write("".join(f"{style.emoji('⏭️ ')}{o['skill']}: skipped ({o['reason']})\n" for o in skipped))
    else:
        out.write(f"{style.emoji('⏭️ ')}skipped {len(skipped):,} that could not pass (not installed, not set up, "
                  "disabled, ...): `nexus skills list --locked` says why\n")
    out.write("".join(f"{style.emoji('❌')}{o['skill']}: {last_line(o['error'])}\n" for o in failed))
    if not (verified or failed or skipped):
        out.write("nothing to verify\n")
    elif verified + len(failed) + len(skipped) > 1:
        out.write(f"{verified:,} verified, {len(skipped):,} skipped, {len(failed):,} failed\n")


@renders(render_outcomes)
def verify_all(ctx):
    """Verifies the skills that could pass: ready ones, and those whose last verification failed. The
    others (not installed, lacking an env var or config, disabled, not for this platform) are reported
    as skipped, with the reason ("skipped": true in --json), and do not change the exit status.

    Exit status:
      0  every verification that ran passed;  1  one failed;  2  usage error
    """
    args = ctx.args
    timeout, stale, jobs = args["--timeout"], args["--stale"], args["--jobs"] or verify.CPUS
    entries, skipped = verify.select(listing.records(ctx.config, ctx.warn), stale)
    yield from skipped
    for outcome in verify.verify_all(entries, ctx.config, timeout, jobs):
        ctx.status = ctx.status or (0 if outcome["ok"] else 1)
        yield outcome


def render_planned(report, out):
    """--dry-run: the command that would run, or where the skill's tools already are."""
    out.write(f"already installed: {report['where']}\n" if report.get("alreadyInstalled") else report["command"] + "\n")


def render_install(report, out):
    if report.get("installed"):
        out.write(f"installed {report['installed']}\n")
    render_outcome(report["verification"], out)


@renders(render_install, {"--dry-run": render_planned})
def install(ctx):
    """The command is shown before it runs, and asked about on a terminal; an added skill whose files changed
    behind nexus's back is refused first, as its calls are (`nexus skill trust`). brew, node (npm), go and uv specs
    run without a shell; a shell spec's script runs with /bin/sh -c. A download is checked against its
    sha256 before anything is placed in $NEXUS_HOME/bin; add that folder to skills.binPath (the
    message says how). The installer's output streams to stderr.

    Exit status:
      0  installed and verified;  1  refused, the install failed, or verification failed;  2  usage error
    """
    from nexus.distribute import install as installer  # here: it brings urllib, which verify --all need not pay for

    args, config = ctx.args, ctx.config
    entry = ctx.entry
    refused = plan.policy_refusal(entry, None)  # an install spec is the skill's code: trust holds for it too
    if refused:
        raise refused
    dirs = statuslib.search_dirs(config)
    present = {b: statuslib.which(b, dirs) for b in entrylib.binaries(entry)}
    if present and all(present.values()) and not args["--id"]:
        where = ", ".join(f"{b} at {path}" for b, path in present.items())
        if args["--dry-run"]:
            return {"skill": entry["name"], "command": None, "dryRun": True, "alreadyInstalled": True, "where": where}
        ctx.warn(f"{entry['name']} is already installed ({where}): nothing to install; verifying it")
        outcome = _verified_after(entry, config)
        ctx.status = 0 if outcome["ok"] else 1
        return {"skill": entry["name"], "command": None, "installed": None, "alreadyInstalled": True,
                "verification": outcome}
    spec = installer.choose(entry.get("install", []), args["--id"])
    report = {"skill": entry["name"], "command": installspec.describe(spec)}
    if args["--dry-run"]:
        return {**report, "dryRun": True}
    label = visible(spec.get("label") or f"Install {entry['name']} ({spec.get('kind')})")
    ctx.warn(f"{label}: {report['command']}")
    if not args["--yes"]:
        _confirm()
    placed = installer.run(spec)
    if placed and os.path.dirname(placed) not in statuslib.search_dirs(config):
        from nexus.config.edit import inline  # a download outside skills.binPath only: config.edit brings tomli-w

        folder, listed = os.path.dirname(placed), configlib.get(config, "skills.binPath", [])
        ctx.warn(f"{folder} is not searched: add it to skills.binPath: "
                 f"nexus config set skills.binPath {shlex.quote(inline([*listed, folder]))}")
    report.update(installed=placed, verification=_verified_after(entry, config))
    ctx.status = 0 if report["verification"]["ok"] else 1
    return report


def _verified_after(entry, config):
    """`verified`, said on a terminal while its verify command runs (it may take a while)."""
    with Progress(f"verifying {entry['name']}") as progress:
        progress.show()
        return verified(entry, config)


def _confirm():
    answer = ask("Run it? [y/N] ")
    if answer is None:
        raise NexusError("no terminal to ask: run it again with --yes to install")
    if not answer:
        raise NexusError("nothing installed")
