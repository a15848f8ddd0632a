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
  --all              Every tool and script skill that could pass (ready, or its last verification
                     failed); the others are printed with "skipped": true and the reason.
  --stale HOURS      With --all, only skills never verified, or last verified over HOURS ago.
  --timeout SECONDS  How long one verify command may run [default: 30].
  --static           Requirement checks only, for the entries on stdin.
  -h --help          Show this help.

Exit status:
  0  every verification that ran passed (--static: every entry was read)
  1  a skill failed verification, or a NAME was not found (each NAME gets its own object)
  2  usage error or unreadable input

Examples:
  nexus-verify gog eve
  nexus-verify --all --stale 24          # for cron
  nexus-discover | nexus-verify --static | jq -r 'select(.status != "ready") | .name'
"""

from nexus.catalog import listing, manifest as manifestlib, status
from nexus.cli.command import STREAM, number, tool
from nexus.cli.output import piped_stdin, read_jsonl
from nexus.errors import BadInput, NexusError
from nexus.gateway import verify
from nexus.paths import is_valid_name
from nexus.state import skill_state


def verify_skills(ctx):
    args = ctx.args
    if args["--static"]:
        return static(ctx)
    timeout = number(args["--timeout"], "--timeout")
    stale = number(args["--stale"], "--stale", zero=True) if args["--stale"] is not None else None
    if args["--all"]:
        entries, skipped = verify.select(listing.records(ctx.config, ctx.warn), stale)
        return outcomes(ctx, [*skipped, *verify.verify_all(entries, ctx.config, timeout)])
    manifest = listing.current_manifest(ctx.config, ctx.warn)
    return outcomes(ctx, (verified(manifest, name, ctx.config, timeout) for name in args["NAME"]))


def verified(manifest, name, config, timeout):
    """The outcome of verifying one NAME, or of looking for it: every name gets its answer."""
    try:
        entry = manifestlib.find(manifest, name)
    except NexusError as e:
        return {"skill": name, "ok": False, "configured": False, "exit": None, "error": str(e).splitlines()[0],
                "ms": 0}
    return verify.verify(entry, config, timeout)


def outcomes(ctx, found):
    for outcome in found:
        if outcome.get("ok") is False:
            ctx.status = 1
        yield outcome


def static(ctx):
    checker = status.Checker(ctx.config)
    for line, entry in enumerate(read_jsonl(piped_stdin()), 1):
        if entry.get("status") == "invalid":
            yield entry
            continue
        if not is_valid_name(entry.get("name")):
            raise BadInput(f"stdin:{line}: an entry needs a valid 'name'")
        yield {**entry, **checker.evaluate(entry, skill_state.of(entry))}


main = tool("nexus-verify", STREAM, __doc__, verify_skills)
