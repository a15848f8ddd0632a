"""What agents and editors read: `nexus skills cursor-rules|agents-md|prompt`, and skill names for completion."""

import os

from nexus import fileio, paths
from nexus.agents import instructions
from nexus.catalog import listing, manifest as manifestlib
from nexus.errors import BadInput, UsageError
from nexus.usage import stats


def cursor_rules(ctx):
    """
    Examples:
      nexus skills cursor-rules --write ~/src/app
    """
    args = ctx.args
    if args["DIR"] and not args["--write"]:
        raise UsageError(f"'{args['DIR']}': a folder goes after --write")
    ready = listing.records(ctx.config, ctx.warn)
    text = instructions.cursor_text(instructions.offered(ready, ctx.config), instructions.aside_note(ready, ctx.config))
    if not args["--write"]:
        return text
    top = args["DIR"] or "."
    if not os.path.isdir(top):
        raise BadInput(f"no folder '{top}'")
    rules = os.path.join(top, paths.CURSOR_RULES)
    fileio.inside(rules, top)  # before a folder is made: .cursor may be a link out of the project
    try:
        os.makedirs(os.path.dirname(rules), exist_ok=True)
    except OSError as e:
        raise BadInput(f"cannot create '{os.path.dirname(rules)}': {e.strerror}") from None
    return instructions.rewrite(rules, lambda old: text, top) + "\n"


def agents_md(ctx):
    """The section runs from the line <!-- nexus:skills:start --> to the line <!-- nexus:skills:end -->.
    Only that part is ever rewritten; running --write again while skills are unchanged changes nothing.

    Examples:
      nexus skills agents-md --write AGENTS.md
    """
    ready = listing.records(ctx.config, ctx.warn)
    section = instructions.agents_section(instructions.offered(ready, ctx.config), instructions.aside_note(ready, ctx.config))
    target = ctx.args["--write"]
    if not target:
        return section + "\n"
    change = lambda old: instructions.with_section(old, section, target)  # noqa: E731
    return instructions.rewrite(target, change, os.path.dirname(os.path.abspath(target))) + "\n"


def prompt(ctx):
    """Each skill comes with its name, description and the location of its SKILL.md, which the agent
    reads when the skill fits the task; skills with `priority: high` come first, then by name. A skill
    with `disable-model-invocation: true` is left out (it stays runnable by name).

    Within a budget, the most useful skills are kept: `priority: high` first, then the most used in
    the past 30 days, then by name; descriptions are shortened before a skill is dropped. What was cut
    is said at the end of the block and on stderr, never left out silently.

    Examples:
      nexus skills prompt > skills.xml
      nexus skills prompt --format markdown --max-chars 4000
    """
    args = ctx.args
    block = instructions.PROMPT_FORMATS[args["--format"]]
    limits = [args["--max-chars"], args["--max-skills"]]
    ready = listing.records(ctx.config, ctx.warn)
    skills, aside = instructions.offered(ready, ctx.config), instructions.aside_note(ready, ctx.config)
    if aside:  # what is set aside is said in every block, beside what a budget cut
        block = (lambda render: lambda shown, note=None: render(shown, " ".join(filter(None, (aside, note)))))(block)
    if limits == [None, None]:
        return block(skills)
    calls = stats.call_counts([s["name"] for s in skills])
    skills.sort(key=lambda s: (s.get("priority") != "high", -calls.get(s["name"], 0), s["name"]))
    text, left = instructions.within_budget(skills, block, *limits)
    if left or len(text) < len(block(skills)):
        ctx.warn(f"the prompt was cut to fit: {', '.join(left) + ' left out' if left else 'descriptions shortened'}; "
                 "`nexus skills prompt` without a budget shows everything")
    return text


def skill_names(ctx):
    """Every skill name in the cached manifest, one per line, for shell completion: never rescans,
    never parses YAML.
    """
    cached = manifestlib.load()
    try:
        return "".join(name + "\n" for name in cached.names()) if cached else ""
    except ValueError:  # not a manifest this nexus wrote
        return ""
