"""What agents and editors read: `nexus skills cursor-rules|agents-md|prompt`, and skill names for completion."""

import os

from nexus import paths
from nexus.agents import instructions
from nexus.catalog import listing, manifest as manifestlib
from nexus.cli.command import parses
from nexus.errors import BadInput, UsageError


def cursor_rules(ctx):
    """Usage:
      nexus skills cursor-rules [--write [DIR]]
      nexus skills cursor-rules (-h | --help)

    Options:
      --write    Write the rules to DIR/.cursor/rules/nexus-skills.mdc instead (DIR: the current
                 folder), creating the folders, and print the file's path. The file belongs to nexus:
                 run the command again whenever skills change.
      -h --help  Show this help.

    Examples:
      nexus skills cursor-rules --write ~/src/app
    """
    args = ctx.args
    if args["DIR"] and not args["--write"]:
        raise UsageError(f"'{args['DIR']}': a folder goes after --write")
    text = instructions.cursor_text(listing.ready(ctx.config, ctx.warn))
    if not args["--write"]:
        return text
    top = args["DIR"] or "."
    if not os.path.isdir(top):
        raise BadInput(f"no folder '{top}'")
    rules = os.path.join(top, paths.CURSOR_RULES)
    try:
        os.makedirs(os.path.dirname(rules), exist_ok=True)
    except OSError as e:
        raise BadInput(f"cannot create '{os.path.dirname(rules)}': {e.strerror}") from None
    return instructions.rewrite(rules, lambda old: text) + "\n"


def agents_md(ctx):
    """Usage:
      nexus skills agents-md [--write FILE]
      nexus skills agents-md (-h | --help)

    Options:
      --write FILE  Update the section in FILE instead, or append it when FILE has none (creating
                    FILE), and print FILE's path. Everything outside the section is kept as it is.
      -h --help     Show this help.

    The section runs from the line <!-- nexus:skills:start --> to the line <!-- nexus:skills:end -->.
    Only that part is ever rewritten; running --write again while skills are unchanged changes nothing.

    Examples:
      nexus skills agents-md --write AGENTS.md
    """
    section = instructions.agents_section(listing.ready(ctx.config, ctx.warn))
    target = ctx.args["--write"]
    if not target:
        return section + "\n"
    return instructions.rewrite(target, lambda old: instructions.with_section(old, section, target)) + "\n"


def prompt(ctx):
    """Usage:
      nexus skills prompt [--format FORMAT]
      nexus skills prompt (-h | --help)

    Options:
      --format FORMAT  xml: an <available_skills> block, as agents built on the Agent Skills
                       convention expect; markdown: a list [default: xml].
      -h --help        Show this help.

    Each skill comes with its name, description and the location of its SKILL.md, which the agent
    reads when the skill fits the task; skills with `priority: high` come first, then by name.

    Examples:
      nexus skills prompt > ~/.config/agent/skills.xml
      nexus skills prompt --format markdown
    """
    block = instructions.PROMPT_FORMATS.get(ctx.args["--format"])
    if block is None:
        raise UsageError(f"--format is xml or markdown, not '{ctx.args['--format']}'")
    return block(listing.ready(ctx.config, ctx.warn))


@parses(lambda argv, doc: {})  # read on every TAB: no docopt
def skill_names(ctx):
    """Usage:
      nexus --list-skills

    Every skill name in the cached manifest, one per line, for shell completion: never rescans,
    never parses YAML.
    """
    cached = manifestlib.load()
    try:
        return "".join(name + "\n" for name in cached.names()) if cached else ""
    except ValueError:  # not a manifest this nexus wrote
        return ""
