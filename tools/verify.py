"""nexus-verify: check that skills work, and record the outcome in their state.

For each NAME, checks the skill's requirements (binaries, env vars, config paths), then runs its
verify command with /bin/sh -c, the skill's injected environment and a timeout, and records
configured, configuredAt, lastVerified, lastError and fingerprints (the SKILL.md's SHA-256 and a
hash of the verify output). Prints one JSON object per skill: skill, type, verify, ok,
configured, exit, error, ms. A prompt skill is always configured; a skill with no verify command
passes once its requirements are met. Nothing else in nexus runs verify commands, except the
first `nexus skill run` of a skill.

With --static, reads manifest entries (JSON Lines, as nexus-discover prints them) on stdin and
prints each with its status, verified and missing: the requirement checks alone, nothing runs.

Usage:
  nexus-verify [--timeout SECONDS] NAME...
  nexus-verify --all [--stale HOURS] [--timeout SECONDS]
  nexus-verify --static
  nexus-verify (-h | --help)

Options:
  --all              Every tool and script skill in the manifest.
  --stale HOURS      With --all, only skills never verified, or last verified over HOURS ago.
  --timeout SECONDS  How long one verify command may run [default: 30].
  --static           Requirement checks only, for the entries on stdin.
  -h --help          Show this help.

Exit status:
  0  every skill passed (--static: every entry was read)
  1  a skill failed verification, or was not found
  2  usage error or unreadable input

Examples:
  nexus-verify gog eve
  nexus-verify --all --stale 24          # for cron
  nexus-discover | nexus-verify --static | jq -r 'select(.status != "ready") | .name'
"""

import time

from nexus import catalog, cli, config as configlib, gateway, manifest as manifestlib, paths, state as statelib, status
from nexus.errors import BadInput, UsageError
from nexus.style import parse_iso

PROG = "nexus-verify"


def is_stale(state, hours):
    verified = parse_iso(state.get("lastVerified"))
    return verified is None or time.time() - verified.timestamp() > hours * 3600


def selected(manifest, args):
    """The entries to verify: the named ones, or --all (optionally only the stale ones)."""
    if not args["--all"]:
        return [manifestlib.find(manifest, name) for name in args["NAME"]]
    entries = [e for e in manifest["skills"].values() if e.get("type") != "prompt"]
    if args["--stale"] is not None:
        hours = cli.number(args["--stale"], "--stale", zero=True)
        entries = [e for e in entries if is_stale(statelib.read(e["name"], e), hours)]
    return entries


def verify_all(args):
    """Outcomes of the selected skills, verified one by one (shared with the porcelain)."""
    timeout = cli.number(args["--timeout"] or gateway.VERIFY_TIMEOUT, "--timeout")
    config = configlib.load()
    manifest = catalog.current_manifest(config, lambda line: cli.warn(PROG, line))
    return [gateway.verify(entry, config, timeout) for entry in selected(manifest, args)]


def static():
    config = configlib.load()
    checker = status.Checker(config)
    for number, entry in enumerate(cli.read_jsonl(cli.piped_stdin()), 1):
        if entry.get("status") == "invalid":
            cli.write_jsonl([entry])
            continue
        if not paths.is_valid_name(entry.get("name")):
            raise BadInput(f"stdin:{number}: an entry needs a valid 'name'")
        cli.write_jsonl([{**entry, **checker.evaluate(entry, statelib.of(entry))}])


@cli.command(PROG)
def main(argv):
    args = cli.parse(__doc__, argv)
    if args["--static"]:
        return static()
    outcomes = verify_all(args)
    cli.write_jsonl(outcomes)
    return 0 if all(o["ok"] for o in outcomes) else 1
