"""nexus-verify: check that skills work, and record the outcome in their state.

Its usage and options are its record in the command table (tools/commands.py).
"""

from nexus.catalog import listing, manifest as manifestlib, status
from nexus.cli.output import piped_stdin, read_jsonl
from nexus.errors import BadInput, NexusError
from nexus.gateway import verify
from nexus.paths import is_valid_name
from nexus.state import skill_state


def verify_skills(ctx):
    """For each NAME, checks the skill's requirements (binaries, env vars, config paths), then runs its
    verify command with /bin/sh -c, the skill's injected environment and a timeout, and records
    configured, configuredAt, lastVerified, lastError and fingerprints (the SKILL.md's SHA-256 and a
    hash of the verify output). Prints one JSON object per skill: skill, type, verify, ok,
    configured, exit, error, ms. A prompt skill is always configured; a skill with no verify command
    passes once its requirements are met. Nothing else in nexus runs verify commands, except the
    first `nexus skill run` of a skill.

    With --static, reads manifest entries (JSON Lines, as nexus-discover prints them) on stdin and
    prints each with its status, verified and missing: the requirement checks alone, nothing runs.

    Exit status:
      0  every verification that ran passed (--static: every entry was read)
      1  a skill failed verification, or a NAME was not found (each NAME gets its own object)
      2  usage error or unreadable input

    Examples:
      nexus-verify disk-report filesystem
      nexus-verify --all --stale 24          # for cron
      nexus-discover | nexus-verify --static | jq 'select(.status != "ready").name'
    """
    args = ctx.args
    if args["--static"]:
        return static(ctx)
    timeout, stale, jobs = args["--timeout"], args["--stale"], args["--jobs"] or verify.CPUS
    if args["--all"]:
        entries, skipped = verify.select(listing.records(ctx.config, ctx.warn), stale)
        return outcomes(ctx, [*skipped, *verify.verify_all(entries, ctx.config, timeout, jobs)])
    manifest = listing.current_manifest(ctx.config, ctx.warn)
    found = {name: lookup(manifest, name) for name in args["NAME"]}  # a name given twice is verified once
    checked = verify.verify_all([f for f in found.values() if "skill" not in f], ctx.config, timeout, jobs)

    def answers():  # in the order given, each as soon as it is known
        for name in args["NAME"]:
            if "skill" not in found[name]:
                found[name] = next(checked)
            yield found[name]

    return outcomes(ctx, answers())


def lookup(manifest, name):
    """The entry of NAME, or when there is none the outcome that says so (it has "skill", an entry has
    not): every name gets its answer, in the order given."""
    try:
        return manifestlib.find(manifest, name)
    except NexusError as e:
        return {"skill": name, "ok": False, "configured": False, "exit": None, "error": str(e).splitlines()[0],
                "ms": 0}


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
