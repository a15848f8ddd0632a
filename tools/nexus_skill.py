"""The porcelain's views of one skill: `nexus skill show|verify` and `nexus skills verify --all`."""

import sys

from nexus import catalog, cli, config as configlib, gateway, skillmd, state as statelib, status
from nexus.style import Style, ago, parse_iso
from nexus.tools import verify as verifytool

PROG = "nexus"

SHOW_DOC = """nexus skill show: a skill's status, requirements, usage and prompt.

Usage:
  nexus skill show NAME [--json | --prompt-only]
  nexus skill show (-h | --help)

Options:
  --json         The manifest entry with status, verified, missing, state and prompt, as JSON.
  --prompt-only  Only the prompt ({baseDir} resolved), for agents.
  -h --help      Show this help.
"""

STATUS_TEXT = {
    "ready": ("✅", "Ready"), "needs-setup": ("⚠️ ", "Needs setup"), "not-installed": ("⏳", "Not installed"),
    "disabled": ("💤", "Disabled"), "unsupported": ("🚫", "Not for this platform"),
}


def _load(name):
    config = configlib.load()
    entry = catalog.entry(config, name, lambda line: cli.warn(PROG, line))
    state = statelib.of(entry, lambda m: cli.warn(PROG, m))
    return config, entry, state, status.Checker(config).evaluate(entry, state)


def _requirements(entry, result, style):
    ok, bad = ("✓", "✗") if style.fancy else ("ok", "MISSING")
    bullet, missing = style.bullet, result["missing"]
    lines = [f"  {bullet} Binary: {b} {bad if b in missing['bins'] else ok}" for b in status.binaries(entry)]
    any_bins = status.required(entry, "anyBins")
    if any_bins:
        lines.append(f"  {bullet} Any of: {', '.join(any_bins)} {bad if missing['anyBins'] else ok}")
    lines += [f"  {bullet} Env: {var} {bad if var in missing['env'] else ok}" for var in status.env_names(entry)]
    lines += [f"  {bullet} Config: {path} {bad if path in missing['config'] else ok}"
              for path in status.required(entry, "config")]
    return lines or [f"  {bullet} None"]


def _human(entry, state, result, prompt, out):
    style = Style(out)
    bullet = style.bullet
    emoji, label = STATUS_TEXT[result["status"]]
    if result["status"] == "ready" and entry["type"] != "prompt":
        verified = parse_iso(state.get("lastVerified"))
        label = (f"Configured (last verified: {verified.date()})" if result["verified"] and verified
                 else "Ready, not verified yet (verified on first run)")
    title = f"{entry['name'].upper()} - {entry['description']}"
    lines = [style.rule(), style.emoji(entry.get("emoji")) + style.color(title, "bold"), style.rule(), ""]
    lines.append(f"Status:     {style.emoji(emoji)}{label}")
    kind = {"tool": f"tool: {entry.get('tool')}", "script": f"script: {entry.get('runner')} {entry.get('script')}"}
    lines.append(f"Type:       {kind.get(entry['type'], 'prompt')}")
    lines.append(f"Source:     {entry['source']} ({entry['filePath']})")
    if entry.get("homepage"):
        lines.append(f"Homepage:   {entry['homepage']}")
    lines += ["", "Requirements:"] + _requirements(entry, result, style)
    if state.get("totalInvocations"):
        lines += ["", "Usage Stats:",
                  f"  {bullet} Total invocations: {state['totalInvocations']}",
                  f"  {bullet} Success rate: {state.get('successRate', 0) * 100:.1f}%",
                  f"  {bullet} Last used: {ago(state.get('lastUsed'))}"]
    if state.get("lastError"):
        lines.append(f"  {bullet} Last error: {state['lastError']}")
    lines += ["", style.rule(False), "PROMPT", style.rule(False), "", prompt.rstrip()]
    if not result["verified"] or result["status"] != "ready":
        lines += ["", style.rule(False), "SETUP", style.rule(False), "", "To configure this skill:"]
        lines += gateway.setup_steps(entry, result["missing"])
    out.write("\n".join(lines) + "\n")


@cli.command(PROG)
def skill_show(argv):
    args = cli.parse(SHOW_DOC, ["skill", "show", *argv])
    _, entry, state, result = _load(args["NAME"])
    prompt = skillmd.prompt(entry)
    if args["--prompt-only"]:
        sys.stdout.write(prompt)
    elif args["--json"]:
        print(cli.dumps({**entry, **result, "state": state, "prompt": prompt}))
    else:
        _human(entry, state, result, prompt, sys.stdout)


VERIFY_DOC = """nexus skill verify: run a skill's verify command and record the outcome.

Usage:
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


def report_outcome(outcome, entry, style, out):
    name = outcome["skill"]
    if outcome["ok"]:
        if outcome["type"] == "prompt":
            out.write(f"{style.emoji('✅')}Skill '{name}' is a prompt skill: always configured.\n")
        elif not outcome["verify"]:
            out.write(f"{style.emoji('✅')}Skill '{name}' has no verification command; its requirements are met.\n")
        else:
            out.write(f"{style.emoji('✅')}Skill '{name}' verified successfully.\n")
        return
    out.write(f"{style.emoji('❌')}Skill '{name}' verification failed.\n   Error: {outcome['error']}\n")
    missing = status.Checker(configlib.load()).missing(entry)
    out.write("\n   Setup instructions:\n" + "".join(f"   {step}\n" for step in gateway.setup_steps(entry, missing)))


@cli.command(PROG)
def skill_verify(argv):
    args = cli.parse(VERIFY_DOC, ["skill", "verify", *argv])
    config, entry, state, result = _load(args["NAME"])
    style = Style(sys.stdout)
    if result["verified"] and not args["--force"]:
        outcome = {"skill": entry["name"], "type": entry["type"], "verify": entry.get("verify"), "ok": True,
                   "configured": True, "exit": None, "error": None, "ms": 0, "skipped": True}
        message = (f"Skill '{entry['name']}' is a prompt skill: always configured.\n" if entry["type"] == "prompt" else
                   f"Skill '{entry['name']}' is verified (last verified: {state.get('lastVerified')}); --force runs it again.\n")
    else:
        if not args["--json"] and entry.get("verify"):
            print(f"Verifying skill '{entry['name']}'...\nRunning: {entry['verify']}\n", file=sys.stderr)
        timeout = cli.number(args["--timeout"], "--timeout")
        outcome, message = gateway.verify(entry, config, timeout), None
    if args["--json"]:
        print(cli.dumps(outcome))
    elif message:
        sys.stdout.write(message)
    else:
        report_outcome(outcome, entry, style, sys.stdout)
    return 0 if outcome["ok"] else 1


VERIFY_ALL_DOC = """nexus skills verify: verify every tool and script skill, or only the stale ones (for cron).

Usage:
  nexus skills verify --all [--stale HOURS] [--json] [--timeout SECONDS]
  nexus skills verify (-h | --help)

Options:
  --all              Every tool and script skill in the manifest.
  --stale HOURS      Only skills never verified, or last verified over HOURS ago.
  --json             JSON Lines, one outcome per skill.
  --timeout SECONDS  How long one verify command may run [default: 30].
  -h --help          Show this help.

Exit status:
  0  every selected skill passed;  1  a skill failed;  2  usage error
"""


@cli.command(PROG)
def skills_verify(argv):
    args = cli.parse(VERIFY_ALL_DOC, ["skills", "verify", *argv])
    outcomes = verifytool.verify_all({**args, "NAME": []})
    style = Style(sys.stdout)
    for outcome in outcomes:
        if args["--json"]:
            print(cli.dumps(outcome))
        elif outcome["ok"]:
            print(f"{style.emoji('✅')}{outcome['skill']}: verified")
        else:
            print(f"{style.emoji('❌')}{outcome['skill']}: {outcome['error'].splitlines()[0]}")
    if not outcomes and not args["--json"]:
        print("nothing to verify")
    return 0 if all(o["ok"] for o in outcomes) else 1
