"""Who provides what: `nexus capabilities`, `nexus capability resolve` and `nexus connectors`."""

from nexus import config as configlib, schema
from nexus.catalog import capabilities, listing
from nexus.catalog.status import state_words
from nexus.cli.command import renders
from nexus.errors import UsageError
from nexus.gateway import plan
from nexus.style import Style
from nexus.usage import stats


def chosen(capability, records, config):
    """The ranking of a capability's providers (see capabilities.ranking), the config's preference first."""
    prefer = configlib.get(config, f"capabilities.{capability}.prefer", [])
    prefer = [p for p in prefer if isinstance(p, str)] if isinstance(prefer, list) else []
    names = [p["name"] for p in capabilities.providers(records).get(capability, [])]
    return capabilities.ranking(capability, records, prefer, stats.success_rates(names))


def render_capabilities(found, out):
    if not found:
        out.write("No skill implements or requires a capability.\n")
        return
    style = Style(out)
    for item in found:
        choice = item["chosen"] or "none ready"
        out.write(style.color(style.clip(f"{item['name']}  (chosen: {choice})"), "bold") + "\n")
        for provider in item["providers"]:
            mark = style.emoji("✅") if provider["status"] == "ready" else style.emoji("⏳")
            out.write(style.clip(f"  {mark}{provider['name']}: {', '.join(state_words(provider))}") + "\n")
        if not item["providers"]:
            out.write("  no skill provides it\n")
        if item["consumers"]:
            out.write(style.clip(f"  needed by: {', '.join(item['consumers'])}") + "\n")


@renders(render_capabilities)
def list_capabilities(ctx):
    """A skill provides capabilities with `implements: [email_sender]` in its metadata.nexus, and needs
    them with `requires.capabilities`. `chosen` is the provider `nexus capability resolve` picks.
    """
    records = listing.records(ctx.config, ctx.warn)
    found = capabilities.catalogue(records)
    for item in found:
        ranked = chosen(item["name"], records, ctx.config) if item["providers"] else []
        item["chosen"] = ranked[0]["name"] if ranked and ranked[0]["ready"] else None
    return found


def render_ranking(resolved, out):
    """--explain: every provider in its place, with the reasons."""
    for rank, provider in enumerate(resolved["ranking"], 1):
        out.write(f"{rank}. {provider['name']}: {', '.join(provider['why'])}\n")


def render_resolved(resolved, out):
    if resolved["chosen"]:
        out.write(resolved["chosen"] + "\n")


@renders(render_resolved, {"--explain": render_ranking})
def resolve(ctx):
    """Prints the name of the ready provider to use, for scripts:
      nexus skill run "$(nexus capability resolve email_sender)" -- ...
    The choice: the preference list capabilities.CAPABILITY.prefer in the config, then a skill you
    have before one added with `nexus skills add` (what it claims is its author's word), then a verified
    provider before an unverified one, then the best success rate over the past 30 days, then the name.

    Exit status:
      0  a ready provider was found;  1  none is ready (the reasons on stderr);  2  usage error
    """
    name = ctx.args["CAPABILITY"]
    if not schema.is_capability(name):
        raise UsageError(f"invalid capability name {name!r}: lowercase letters, digits, _ and -, 1-64 characters")
    records = listing.records(ctx.config, ctx.warn)
    ranked = chosen(name, records, ctx.config)
    ready = [p for p in ranked if p["ready"]]
    if not ready:
        why = ", ".join(p["why"][0] for p in ranked) or "no skill provides it"
        ctx.warn(f"no ready provider of {name}: {why}")
        ctx.status = 1
    return {"capability": name, "chosen": ready[0]["name"] if ready else None, "ranking": ranked,
            "explain": ctx.args["--explain"]}


def render_connectors(found, out):
    if not found:
        out.write("No skill needs a connector.\n")
        return
    style = Style(out)
    for item in found:
        if item["connected"]:
            out.write(style.clip(f"{style.emoji('🔓')}{item['name']}: connected (through {item['connectedBy']})") + "\n")
        else:
            out.write(style.clip(f"{style.emoji('🔒')}{item['name']}: locked; to unlock ({item['unlock']['skill']}): "
                                 f"{item['unlock']['step']}") + "\n")
        out.write(style.clip(f"   needed by: {', '.join(item['skills'])}") + "\n")


@renders(render_connectors)
def list_connectors(ctx):
    """A connector is an account a person connects (google, apple, 1password, github): a skill names
    it with `connectors: [google]`, or it follows from the tool the skill runs. It is connected once a
    skill that needs it is ready and has passed verification. nexus stores no credentials: each tool
    keeps its own sign-in, and nexus records only what verification proved.
    """
    records = listing.records(ctx.config, ctx.warn)
    return capabilities.connectors(records, lambda record: unlock_steps(record))


def unlock_steps(record):
    """The steps that make a skill ready and verified, without their numbers."""
    if record["status"] == "ready" and not record.get("verified"):
        return [f"nexus skill verify {record['name']}"]
    return [step.split(". ", 1)[1] for step in plan.setup_steps(record, record.get("missing") or {})]


def capability_names(ctx):
    """Every capability a skill in the cached manifest implements or requires, for shell completion:
    never rescans, never parses YAML."""
    from nexus.catalog import manifest  # the manifest alone: the statuses of skills are not needed

    entries = manifest.cached_skills().values()
    names = {c for entry in entries for c in [*(entry.get("implements") or []), *capabilities.requirements(entry)[0]]}
    return "".join(name + "\n" for name in sorted(names))
