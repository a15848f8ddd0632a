"""What agents and editors read: the prompt block, the AGENTS.md section and the Cursor rules.

Each lists the ready skills only: what an agent can use right now. Files are rewritten atomically,
and only when their text changes.
"""

import os

from .. import config as configlib, fileio, schema
from ..errors import BadInput
from ..style import plural, truncate

HOW_TO_CURSOR = """\
# Nexus Skills

When you need to use a Nexus skill, use the CLI:

```bash
# List available skills
nexus skills list --ready

# Get skill details
nexus skill show <skill-name>

# Run a skill
nexus skill run <skill-name> [-- args]
```

The CLI will handle verification and logging automatically.
"""

HOW_TO_AGENTS = """\
## Skills

All capabilities go through the nexus CLI:

```bash
# See what's available
nexus skills list --ready

# Get skill details
nexus skill show <name>

# Use a skill
nexus skill run <name> [-- arguments]
```

If a skill isn't configured, the CLI will tell you what's needed.
"""

START, END = "<!-- nexus:skills:start -->", "<!-- nexus:skills:end -->"


def offered(records, config=None, statuses=("ready",)):
    """What an agent is offered of the catalogue `records` (every skill with its status, as
    `listing.records` gives them): the skills whose status is in `statuses` (ready: what it can use right
    now) that a model may invoke, `priority: high` first, then by name. Every front end takes its list
    from here: nexus-mcp's tools, prompts, resources, skills and list_skills, `skills prompt`,
    `agents-md`, `cursor-rules` and `skills link`. Whatever narrows what an agent sees narrows it here,
    never in a copy: a profile's scope (`listing.records` gives only what it admits), a skill kept from
    models (`schema.invocable`), an added skill changed behind nexus's back (`trust.refusal`: it would be refused),
    a crystallized skill that is degraded (set_aside, unless skills.offerDegradedReplays keeps it)."""
    from .. import trust  # cheap for every skill but an added one

    aside = {s["name"] for s in set_aside(records, config)}
    found = [r for r in records if r["status"] in statuses and schema.invocable(r) and not trust.refusal(r)
             and r["name"] not in aside]
    return sorted(found, key=lambda r: (r.get("priority") != "high", r["name"]))


def set_aside(skills, config=None):
    """The degraded crystallized skills among `skills` that agents are not offered."""
    if config and configlib.get(config, "skills.offerDegradedReplays") is True:
        return []
    return [s for s in skills if s.get("crystallized") and s.get("degraded")]


def aside_note(skills, config=None):
    """One sentence per skill set aside, naming the skills to use instead; None when there is none."""
    said = [f"{s['name']} is set aside while it is degraded: use {', '.join((s.get('requires') or {}).get('skills') or [])} "
            "directly." for s in set_aside(skills, config)]
    return " ".join(said) or None


def escaped(text):
    """One line with &, < and > escaped, so a skill's text can never close the block or section around it."""
    return " ".join(str(text).split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def markdown_list(skills, locations=False):
    if not skills:
        return "None yet: run `nexus skills list` to see what needs setup.\n"
    lines = []
    for skill in skills:
        line = f"- **{escaped(skill['name'])}**: {escaped(skill.get('description', ''))}"
        lines.append(line + (f" ({escaped(skill['filePath'])})" if locations else ""))  # no code span: it would show &amp;
    return "\n".join(lines) + "\n"


def read_text(path):
    """(text, permission bits) of a file; ("", None) when there is none."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read(), os.stat(f.fileno()).st_mode & 0o7777
    except FileNotFoundError:
        return "", None
    except UnicodeDecodeError:
        raise BadInput(f"cannot read '{path}': not UTF-8 text") from None
    except OSError as e:
        raise BadInput(f"cannot read '{path}': {e.strerror}") from None


def rewrite(path, change, top):
    """Replace the file at `path` with change(old text), atomically and only when that differs; its real
    path. Through a symlink (CLAUDE.md -> AGENTS.md), never over it, and never out of the folder `top`."""
    path = fileio.inside(path, top)
    old, mode = read_text(path)
    new = change(old)
    if new != old or mode is None:
        try:
            fileio.write_atomic(path, new.encode(), 0o666 if mode is None else mode)
        except OSError as e:
            raise BadInput(f"cannot write '{path}': {e.strerror}") from None
    return path


def capabilities(skills):
    """{capability: [the names of the given (ready) skills that provide it]}, by capability."""
    found = {}
    for skill in skills:
        for capability in skill.get("implements") or []:
            found.setdefault(capability, []).append(skill["name"])
    return dict(sorted(found.items()))


def markdown_capabilities(skills, heading):
    """A list of the ready capabilities and their providers, or nothing when no skill provides one."""
    found = capabilities(skills)
    if not found:
        return ""
    lines = [f"- **{escaped(c)}**: {escaped(', '.join(names))}" for c, names in found.items()]
    return (f"\n{heading} Capabilities\n\nChoose by what you need to do; "
            "`nexus capability resolve <capability>` names the provider to use.\n\n" + "\n".join(lines) + "\n")


def cursor_text(skills, aside=None):
    front = "---\ndescription: Use Nexus skills through the nexus CLI\nalwaysApply: true\n---\n"
    note = "<!-- Generated by 'nexus skills cursor-rules'; run it again to update. -->\n"
    return (f"{front}{note}\n{HOW_TO_CURSOR}\n## Configured Skills\n\n{markdown_list(skills)}{_aside(aside)}"
            f"{markdown_capabilities(skills, '##')}")


def agents_section(skills, aside=None):
    note = "<!-- Generated by 'nexus skills agents-md --write': edit outside these markers. -->"
    return (f"{START}\n{note}\n{HOW_TO_AGENTS}\n### Configured Skills\n\n{markdown_list(skills)}{_aside(aside)}"
            f"{markdown_capabilities(skills, '###')}{END}")


def _aside(note):
    return f"\n{escaped(note)}\n" if note else ""


def with_section(old, section, path):
    """`old` with its marked section replaced by `section` (markers included), or with it appended."""
    newline = "\r\n" if "\r\n" in old else "\n"
    section = section.replace("\n", newline)
    if START not in old and END not in old:
        trailing = old[len(old.rstrip("\r\n")):].count("\n")
        return old + (newline * (2 - min(trailing, 2)) if old else "") + section + newline
    start, end = old.find(START), old.find(END)
    if old.count(START) != 1 or old.count(END) != 1 or end < start:
        raise BadInput(f"'{path}': expected one {START} line and, after it, one {END} line")
    return old[:start] + section + old[end + len(END):]


def xml_block(skills, note=None):
    lines = ["<available_skills>"]
    for skill in skills:
        lines += ["  <skill>",
                  f"    <name>{escaped(skill['name'])}</name>",
                  f"    <description>{escaped(skill.get('description', ''))}</description>",
                  f"    <location>{escaped(skill['filePath'])}</location>",
                  "  </skill>"]
    lines.append("</available_skills>")
    found = capabilities(skills)
    if found:
        lines.append("<available_capabilities>")
        for capability, names in found.items():
            lines += ["  <capability>", f"    <name>{escaped(capability)}</name>",
                      f"    <providers>{escaped(', '.join(names))}</providers>", "  </capability>"]
        lines.append("</available_capabilities>")
    if note:
        lines.append(f"<!-- {escaped(note)} -->")
    return "\n".join(lines) + "\n"


def markdown_block(skills, note=None):
    text = "## Available Skills\n\n" + markdown_list(skills, True) + markdown_capabilities(skills, "##")
    return text + (f"\n_{escaped(note)}_\n" if note else "")


PROMPT_FORMATS = {"xml": xml_block, "markdown": markdown_block}


def within_budget(skills, render, max_chars=None, max_skills=None):
    """(text, the names left out): `render(skills, note)` within the budget. `skills` come most useful
    first; descriptions are shortened before a skill is dropped, from the end; `note` says what was cut
    and how to see everything, so that a cut is never silent."""
    kept = list(skills if max_skills is None else skills[:max_skills])
    widths = (None, 200, 120, 80, 60, 40)

    def attempt(width):
        left = [s["name"] for s in skills[len(kept):]]
        shown = [{**s, "description": truncate(s.get("description", ""), width)} for s in kept]
        return render(shown, _left_out(left, width)), left

    for width in widths:
        text, left = attempt(width)
        if max_chars is None or len(text) <= max_chars:
            return text, left
    while kept:
        kept.pop()
        text, left = attempt(widths[-1])
        if len(text) <= max_chars:
            break
    return text, left


def _left_out(names, width):
    if not names and width is None:
        return None
    parts = []
    if width is not None:
        parts.append(f"descriptions shortened to {width} characters")
    if names:
        parts.append(f"{plural(len(names), 'ready skill')} left out ({', '.join(names)})")
    return "; ".join(parts) + ": to see every one, run `nexus skills list --ready`"
