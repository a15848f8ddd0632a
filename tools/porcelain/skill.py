"""The porcelain's commands for one skill: `nexus skill show|verify|install`, and `nexus skills verify --all`."""

import os
import sys

from nexus import paths
from nexus.catalog import listing, status as statuslib
from nexus.cli.command import number, renders
from nexus.errors import NexusError
from nexus.gateway import plan, verify
from nexus.schema import parse_iso
from nexus.skill import entry as entrylib, installspec, skillmd
from nexus.state import skill_state
from nexus.style import Style, ago

STATUS_TEXT = {
    "ready": ("✅", "Ready"), "needs-setup": ("⚠️ ", "Needs setup"), "not-installed": ("⏳", "Not installed"),
    "disabled": ("💤", "Disabled"), "unsupported": ("🚫", "Not for this platform"),
}


def _evaluated(ctx, name):
    """(entry, state, {'status', 'verified', 'missing'}) of one skill."""
    entry = listing.entry(ctx.config, name, ctx.warn)
    state = skill_state.of(entry, ctx.warn)
    return entry, state, statuslib.Checker(ctx.config).evaluate(entry, state)


def _requirements(entry, result, style):
    ok, bad = ("✓", "✗") if style.fancy else ("ok", "MISSING")
    bullet, missing = style.bullet, result["missing"]
    lines = [f"  {bullet} Binary: {b} {bad if b in missing['bins'] else ok}" for b in entrylib.binaries(entry)]
    any_bins = entrylib.required(entry, "anyBins")
    if any_bins:
        lines.append(f"  {bullet} Any of: {', '.join(any_bins)} {bad if missing['anyBins'] else ok}")
    lines += [f"  {bullet} Env: {var} {bad if var in missing['env'] else ok}" for var in entrylib.env_names(entry)]
    lines += [f"  {bullet} Config: {path} {bad if path in missing['config'] else ok}"
              for path in entrylib.required(entry, "config")]
    return lines or [f"  {bullet} None"]


def render_show(shown, out):
    if "prompt" not in shown or "status" not in shown:  # --prompt-only
        out.write(shown["text"])
        return
    style = Style(out)
    entry, state, bullet = shown, shown["state"], style.bullet
    emoji, label = STATUS_TEXT[shown["status"]]
    if shown["status"] == "ready" and entry["type"] != "prompt":
        verified = parse_iso(state.get("lastVerified"))
        label = (f"Configured (last verified: {verified.date()})" if shown["verified"] and verified
                 else "Ready, not verified yet (verified on first run)")
    title = f"{entry['name'].upper()} - {entry['description']}"
    lines = [style.rule(), style.emoji(entry.get("emoji")) + style.color(title, "bold"), style.rule(), ""]
    lines.append(f"Status:     {style.emoji(emoji)}{label}")
    kind = {"tool": f"tool: {entry.get('tool')}", "script": f"script: {entry.get('runner')} {entry.get('script')}"}
    lines.append(f"Type:       {kind.get(entry['type'], 'prompt')}")
    lines.append(f"Source:     {entry['source']} ({entry['filePath']})")
    if entry.get("homepage"):
        lines.append(f"Homepage:   {entry['homepage']}")
    lines += ["", "Requirements:"] + _requirements(entry, shown, style)
    if state.get("totalInvocations"):
        lines += ["", "Usage Stats:",
                  f"  {bullet} Total invocations: {state['totalInvocations']}",
                  f"  {bullet} Success rate: {state.get('successRate', 0) * 100:.1f}%",
                  f"  {bullet} Last used: {ago(state.get('lastUsed'))}"]
    if state.get("lastError"):
        lines.append(f"  {bullet} Last error: {state['lastError']}")
    lines += ["", style.rule(False), "PROMPT", style.rule(False), "", shown["prompt"].rstrip()]
    if not shown["verified"] or shown["status"] != "ready":
        lines += ["", style.rule(False), "SETUP", style.rule(False), "", "To configure this skill:"]
        lines += plan.setup_steps(entry, shown["missing"])
    out.write("\n".join(lines) + "\n")


@renders(render_show)
def show(ctx):
    """Usage:
      nexus skill show NAME [--json | --prompt-only]
      nexus skill show (-h | --help)

    Options:
      --json         The manifest entry with status, verified, missing, state and prompt, as JSON.
      --prompt-only  Only the prompt ({baseDir} resolved), for agents.
      -h --help      Show this help.
    """
    entry, state, result = _evaluated(ctx, ctx.args["NAME"])
    prompt = skillmd.prompt(entry)
    if ctx.args["--prompt-only"]:
        return {"text": prompt}
    return {**entry, **result, "state": state, "prompt": prompt}


def render_outcome(outcome, out):
    style, name = Style(out), outcome["skill"]
    if outcome.get("skipped"):
        message = (f"Skill '{name}' is a prompt skill: always configured." if outcome["type"] == "prompt" else
                   f"Skill '{name}' is verified (last verified: {outcome['lastVerified']}); --force runs it again.")
        out.write(message + "\n")
    elif not outcome["ok"]:
        out.write(f"{style.emoji('❌')}Skill '{name}' verification failed.\n   Error: {outcome['error']}\n")
        out.write("\n   Setup instructions:\n" + "".join(f"   {step}\n" for step in outcome["setup"]))
    elif outcome["type"] == "prompt":
        out.write(f"{style.emoji('✅')}Skill '{name}' is a prompt skill: always configured.\n")
    elif not outcome["verify"]:
        out.write(f"{style.emoji('✅')}Skill '{name}' has no verification command; its requirements are met.\n")
    else:
        out.write(f"{style.emoji('✅')}Skill '{name}' verified successfully.\n")


def verified(entry, config, timeout=verify.VERIFY_TIMEOUT):
    """Verify a skill; its outcome, with the steps that fix a failure."""
    outcome = verify.verify(entry, config, timeout)
    if not outcome["ok"]:
        outcome["setup"] = plan.setup_steps(entry, statuslib.Checker(config).missing(entry))
    return outcome


@renders(render_outcome)
def verify_skill(ctx):
    """Usage:
      nexus skill verify NAME [--force] [--json] [--timeout SECONDS]
      nexus skill verify (-h | --help)

    Options:
      --force            Run the verify command even when the skill is already verified.
      --json             Print the outcome as JSON: skill, type, verify, ok, configured, exit, error, ms.
      --timeout SECONDS  How long the verify command may run [default: 30].
      -h --help          Show this help.

    A verified skill stays trusted until a run fails or its SKILL.md changes.

    Exit status:
      0  verified;  1  verification failed, or no such skill;  2  usage error
    """
    args = ctx.args
    entry, state, result = _evaluated(ctx, args["NAME"])
    if result["verified"] and not args["--force"]:
        return {"skill": entry["name"], "type": entry["type"], "verify": entry.get("verify"), "ok": True,
                "configured": True, "exit": None, "error": None, "ms": 0, "skipped": True,
                "lastVerified": state.get("lastVerified")}
    if not args["--json"] and entry.get("verify"):
        print(f"Verifying skill '{entry['name']}'...\nRunning: {entry['verify']}\n", file=sys.stderr)
    outcome = verified(entry, ctx.config, number(args["--timeout"], "--timeout"))
    ctx.status = 0 if outcome["ok"] else 1
    return outcome


def render_outcomes(outcomes, out):
    style, any_outcome = Style(out), False
    for outcome in outcomes:
        any_outcome = True
        if outcome["ok"]:
            out.write(f"{style.emoji('✅')}{outcome['skill']}: verified\n")
        else:
            out.write(f"{style.emoji('❌')}{outcome['skill']}: {outcome['error'].splitlines()[0]}\n")
        out.flush()
    if not any_outcome:
        out.write("nothing to verify\n")


@renders(render_outcomes)
def verify_all(ctx):
    """Usage:
      nexus skills verify --all [--stale HOURS] [--jobs N] [--json] [--timeout SECONDS]
      nexus skills verify (-h | --help)

    Options:
      --all              Every tool and script skill in the manifest.
      --stale HOURS      Only skills never verified, or last verified over HOURS ago.
      --jobs N           How many verify commands run at once (default: one per CPU).
      --json             An array of outcomes, one per skill, in the order of their names.
      --timeout SECONDS  How long one verify command may run [default: 30].
      -h --help          Show this help.

    Exit status:
      0  every selected skill passed;  1  a skill failed;  2  usage error
    """
    args = ctx.args
    timeout = number(args["--timeout"], "--timeout")
    stale = number(args["--stale"], "--stale", zero=True) if args["--stale"] is not None else None
    jobs = verify.parse_jobs(args["--jobs"])
    entries = verify.select(listing.current_manifest(ctx.config, ctx.warn), stale)
    for outcome in verify.verify_all(entries, ctx.config, timeout, jobs):
        ctx.status = ctx.status or (0 if outcome["ok"] else 1)
        yield outcome


def render_install(report, out):
    if report.get("dryRun"):
        out.write(report["command"] + "\n")
        return
    if report.get("installed"):
        out.write(f"installed {report['installed']}\n")
    render_outcome(report["verification"], out)


@renders(render_install)
def install(ctx):
    """Usage:
      nexus skill install NAME [--id ID] [--dry-run] [--yes] [--json]
      nexus skill install (-h | --help)

    Options:
      --id ID    The install spec with this id (default: the best fit whose package manager is here).
      --dry-run  Print the command, run nothing.
      --yes      Run without asking (needed when there is no terminal, as under cron or an agent).
      --json     The outcome as JSON: skill, command, installed, verification.
      -h --help  Show this help.

    The command is shown before it runs, and asked about on a terminal. brew, node (npm), go and uv specs
    run without a shell; a shell spec's script runs with /bin/sh -c. A download is checked against its
    sha256 before anything is placed in $NEXUS_HOME/bin; add that folder to skills.binPath. The installer's
    output streams to stderr.

    Exit status:
      0  installed and verified;  1  refused, the install failed, or verification failed;  2  usage error
    """
    from nexus.distribute import install as installer  # here: it brings urllib, which verify --all need not pay for

    args, config = ctx.args, ctx.config
    entry = listing.entry(config, args["NAME"], ctx.warn)
    spec = installer.choose(entry.get("install", []), args["--id"])
    report = {"skill": entry["name"], "command": installspec.describe(spec)}
    if args["--dry-run"]:
        return {**report, "dryRun": True}
    label = spec.get("label") or f"Install {entry['name']} ({spec.get('kind')})"
    ctx.warn(f"{label}: {report['command']}")
    if not args["--yes"]:
        _confirm()
    placed = installer.run(spec)
    if placed and os.path.dirname(placed) not in statuslib.search_dirs(config):
        folder = os.path.dirname(placed)
        ctx.warn(f"{folder} is not searched: add it to skills.binPath in {paths.config_file()}, "
                 f"as  [skills] binPath = [\"{folder}\"]")
    report.update(installed=placed, verification=verified(entry, config))
    ctx.status = 0 if report["verification"]["ok"] else 1
    return report


def _confirm():
    if sys.stdin is None or sys.stdin.closed or not sys.stdin.isatty():
        raise NexusError("no terminal to ask: run it again with --yes to install")
    sys.stderr.write("Run it? [y/N] ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise NexusError("nothing installed")
