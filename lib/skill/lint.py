"""The strict policy over a parsed SKILL.md: the Agent Skills specification and the nexus rules.

Loading forgives what a skill can run without; checking reports it. Both read the file through
skillmd.read, so they never disagree about what it says: this module only judges a SkillFile.
"""

import difflib
import os

from .. import schema
from ..paths import is_valid_name
from . import installspec, known, skillmd
from . import entry as entrylib
from .entry import OS_ALIASES
from .skillmd import Problem

AGENT_SKILLS_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
OTHER_LOADERS_FIELDS = ("user-invocable", "disable-model-invocation")  # OpenClaw's and Claude Code's
META_KEYS = (*schema.META_FIELDS, "requires", "install", "homepage", "implements", "connectors", "aliases", "variables", "crystallized",
             *known.EXECUTION_KEYS)
OS_NAMES = ("darwin", "linux", "win32")
# Every code a finding of `nexus skills check` carries, in the order its --help lists them, with what a
# code's name does not say; the help's Codes paragraph is made from it, and tests/test_check.py finds
# every code the source emits here.
CODES = {
    "encoding": "", "unreadable": "", "too-large": "", "symlink": "", "frontmatter": "", "yaml": "", "colon": "",
    "comment": "", "duplicate-key": "", "filename": "the file is named skill.md, not SKILL.md", "name": "", "description": "",
    "compatibility": "", "allowed-tools": "", "license": "", "homepage": "", "metadata": "", "os": "",
    "requires": "also a capability nothing provides, a warning, and a cycle of requirements, an error",
    "spelling": "with --strict: the skills spec's spelling of a requires key, which nexus reads too",
    "install": "", "execution": "", "script": "", "sandbox": "", "unexpected-field": "",
    "alias": "an alias that is a skill's name, or that two skills claim", "no-skill": "",
    "edited": "a skill copied into the managed folder by `nexus skills add` whose files have changed since; "
              "see `nexus skills update`",
    "config": "the config file: an error where nexus cannot use it, a warning for a key naming a skill that "
              "is not there",
    "audit": "a high finding of `nexus skills audit`, in any file of the skill; its rule begins the message",
}


def codes_paragraph():
    """The Codes paragraph of `nexus skills check --help`: every code, what its name does not say in brackets."""
    return "Codes: " + ", ".join(f"{code} ({gloss})" if gloss else code for code, gloss in CODES.items()) + "."


# Loading takes these with a warning; both specifications call them errors.
LENIENT_IN_LOAD = frozenset({"name", "duplicate-key", "colon", "description", "compatibility", "metadata"})


def check(skill, skill_dir, strict=False):
    """Every Problem of `skill` (a skillmd.SkillFile read from `skill_dir`), by line."""
    problems = [Problem("error", p.message, p.line, p.code) if p.code in LENIENT_IN_LOAD else p
                for p in skill.problems]
    if os.path.basename(skill.path) == "skill.md":
        problems.append(_warning("the file is named skill.md: some loaders look for SKILL.md alone; rename it",
                                 None, "filename"))
    if skill.parsed:
        rules = [_spec_fields, _metadata_shape, _product, _execution, _hosts_yaml]
        if strict:
            rules.append(_unexpected)
        for rule in rules:
            problems.extend(rule(skill, skill_dir))
    return sorted(problems, key=lambda p: p.line or 0)


def _error(message, line, code):
    return Problem("error", message, line, code)


def _warning(message, line, code):
    return Problem("warning", message, line, code)


def _spec_fields(skill, _skill_dir):
    """The Agent Skills limits skillmd does not already enforce for loading."""
    fm, lines = skill.frontmatter, skill.lines
    if "allowed-tools" in fm and not isinstance(fm["allowed-tools"], str):
        yield _error("allowed-tools must be one string of space-separated tools, not a list or mapping",
                     lines["allowed-tools"], "allowed-tools")
    for key in ("license", "homepage"):
        if key in fm and not isinstance(fm[key], str):
            yield _error(f"{key} must be a string", lines[key], key)


def _hosts_yaml(skill, _skill_dir):
    """What MCP hosts, whose YAML is 1.2, read otherwise than PyYAML's 1.1 does (nexus-mcp does not publish
    such a skill): the warning names the value a host sees."""
    try:
        with open(skill.path, "rb") as f:
            text = skillmd.frontmatter_text(f.read(skillmd.MAX_BYTES + 1))
    except OSError:
        return
    for line, what in skillmd.host_differences(text or ""):
        if "given twice" not in what:  # a duplicate key is an error of its own (duplicate-key)
            yield _warning(f"{what} (nexus-mcp publishes no skill that hosts read otherwise)", line, "yaml")


def _metadata_shape(skill, _skill_dir):
    """Beside a product key, metadata holds the Agent Skills' string values; a mapping there is lost."""
    raw = skill.frontmatter.get("metadata")
    if skill.meta_key or not isinstance(raw, dict):
        return
    for key, value in raw.items():
        if isinstance(value, dict):
            yield _warning(f"metadata.{key} is ignored: nexus reads metadata.nexus (or openclaw, clawdbot)",
                           skill.lines["metadata"], "metadata")


def _product(skill, _skill_dir):
    """metadata.nexus (or openclaw, clawdbot): field types, requires, install and os."""
    meta, where, line = skill.meta, f"metadata.{skill.meta_key}", skill.lines.get("metadata")
    for key in ("emoji", "primaryEnv", "skillKey", "priority", "homepage"):
        if key in meta and not isinstance(meta[key], str):
            yield _error(f"{where}.{key} must be a string", line, "metadata")
    for key in ("bundled", "always"):
        if key in meta and not isinstance(meta[key], bool):
            yield _error(f"{where}.{key} must be true or false, not {meta[key]!r}", line, "metadata")
    if "primaryEnv" in meta:
        yield from _env_names([meta["primaryEnv"]], f"{where}.primaryEnv", line, "metadata")
    if "os" in meta:
        yield from _os(meta["os"], f"{where}.os", line)
    if "requires" in meta:
        yield from _requires(meta["requires"], f"{where}.requires", line)
    if "install" in meta:
        yield from _install(meta["install"], f"{where}.install", line)
    for key in ("implements", "connectors"):
        if key in meta:
            yield from _names(meta[key], f"{where}.{key}", line, schema.is_capability)
    problem = entrylib.sandbox_problem(meta.get("sandbox"))
    if problem:
        yield _error(f"{where}.sandbox {problem}", line, "sandbox")
    bad = entrylib.unprintable(meta)
    if bad and not bad[0].startswith("sandbox."):  # a folder's is said by sandbox_problem
        yield _error(f"{where}.{bad[0]} holds a control character ({bad[1]!r})", line, "metadata")
    if "aliases" in meta:
        yield from _names(meta["aliases"], f"{where}.aliases", line, is_valid_name)
    if "variables" in meta:
        yield from _variables(meta["variables"], f"{where}.variables", line)


def _variables(value, where, line):
    """skills spec 9.4: a list of {name, description, type, default}, each name an env var name."""
    items = value if isinstance(value, list) else [value]
    for i, variable in enumerate(items):
        if not isinstance(variable, dict) or not schema.is_env_name(variable.get("name")):
            yield _error(f"{where}[{i}] must be a mapping with a name that is an env var name "
                         f"(and a description, type, default)", line, "metadata")
        elif entrylib.reserved_env(variable["name"]):
            yield _error(f"{where}[{i}]: {variable['name']} is nexus's own (NEXUS_*, PATH, HOME, TMPDIR, XDG_*, LD_*, "
                         f"PYTHON*): a skill's variable never sets it", line, "metadata")


def _expect_string_list(value, where, line, code):
    """A list of strings, or OpenClaw's comma-separated string."""
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(v, str) for v in items):
        yield _error(f"{where} must be a list of strings", line, code)


def _env_names(names, where, line, code):
    for name in names:
        if isinstance(name, str) and not schema.is_env_name(name):
            yield _error(f"{where}: {name!r} is not an environment variable name", line, code)


def _os(value, where, line):
    yield from _expect_string_list(value, where, line, "os")
    for name in schema.string_list(value):
        if name.lower() not in OS_NAMES and name.lower() not in OS_ALIASES:
            aliases = ", ".join(OS_ALIASES)
            yield _error(f"{where}: unknown os '{name}'; use {', '.join(OS_NAMES)} (or {aliases})", line, "os")


def _requires(requires, where, line):
    if not isinstance(requires, dict):
        yield _error(f"{where} must be a mapping of {', '.join(schema.REQUIRE_KEYS + schema.DEPENDS_KEYS)}", line,
                     "requires")
        return
    for key, value in requires.items():
        known_keys = schema.REQUIRE_KEYS + schema.DEPENDS_KEYS + tuple(schema.SPEC_SPELLINGS)
        if key not in known_keys:
            yield _error(f"{where} has an unknown key '{key}'{_close(key, known_keys)}; "
                         f"nexus reads {', '.join(known_keys)}", line, "requires")
        else:
            yield from _expect_string_list(value, f"{where}.{key}", line, "requires")
    yield from _env_names(schema.string_list(requires.get("env")), f"{where}.env", line, "requires")
    if "capabilities" in requires:
        yield from _names(requires["capabilities"], f"{where}.capabilities", line, schema.is_capability, "requires")
    if "skills" in requires:
        yield from _names(requires["skills"], f"{where}.skills", line, is_valid_name, "requires")


def _names(value, where, line, valid, code="metadata"):
    """A list of capability, connector or skill names."""
    yield from _expect_string_list(value, where, line, code)
    for name in schema.string_list(value):
        if not valid(name):
            kind = "skill name" if valid is is_valid_name else "name: lowercase letters, digits, '_' and '-'"
            yield _error(f"{where}: {name!r} is not a valid {kind}", line, code)


def _install(specs, where, line):
    if not isinstance(specs, list):
        yield _error(f"{where} must be a list of install specs", line, "install")
        return
    for i, spec in enumerate(specs):
        at = f"{where}[{i}]"
        if not isinstance(spec, dict):
            yield _error(f"{at} must be a mapping with a kind", line, "install")
            continue
        kind = spec.get("kind")
        if kind not in installspec.KINDS:
            yield _error(f"{at}: kind {kind!r} is not one of {', '.join(installspec.KINDS)}", line, "install")
            continue
        fields = installspec.NEEDS[kind][0]
        if not any(isinstance(spec.get(f), str) and spec[f].strip() for f in fields):
            yield _error(f"{at}: kind '{kind}' needs {' or '.join(repr(f) for f in fields)}", line, "install")
        if kind == "download":
            yield from _sha256(spec.get("sha256"), at, line)
        if "bins" in spec:
            yield from _expect_string_list(spec["bins"], f"{at}.bins", line, "install")
        if "os" in spec:
            yield from _os(spec["os"], f"{at}.os", line)


def _sha256(value, at, line):
    if value is None:
        yield _warning(f"{at}: no sha256, so the download cannot be verified", line, "install")
    elif not (isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdefABCDEF" for c in value)):
        yield _error(f"{at}.sha256 must be 64 hexadecimal digits", line, "install")


def _execution(skill, skill_dir):
    """type, tool, runner and script agree with each other, and the script is in the skill folder."""
    meta, where, line = skill.meta, f"metadata.{skill.meta_key}", skill.lines.get("metadata")
    bad = [k for k in ("type", "tool", "verify", "runner", "script") if k in meta and not isinstance(meta[k], str)]
    for key in bad:
        yield _error(f"{where}.{key} must be a string", line, "execution")
    for key in ("requiredEnv", "configEnv"):
        if key in meta:
            yield from _expect_string_list(meta[key], f"{where}.{key}", line, "execution")
            yield from _env_names(schema.string_list(meta[key]), f"{where}.{key}", line, "execution")
    if bad:
        return
    declared = meta.get("type")
    if declared is not None and declared not in schema.TYPES:
        yield _error(f"{where}.type {declared!r} is not one of {', '.join(schema.TYPES)}", line, "execution")
        return
    resolved = known.execution(skill.name or os.path.basename(skill_dir), meta)
    kind, script = resolved["type"], resolved.get("script")
    if kind == "tool" and not resolved.get("tool"):
        yield _error(f"{where}: type 'tool' needs 'tool', the binary to run", line, "execution")
    if kind == "script" and not (resolved.get("runner") and script):
        yield _error(f"{where}: a script skill needs both 'runner' and 'script'", line, "execution")
    if kind != "script" and "runner" in meta:
        yield _error(f"{where}: 'runner' without 'script' runs nothing", line, "execution")
    if declared == "prompt" and any(k in meta for k in ("tool", "runner", "script")):
        yield _warning(f"{where}: type 'prompt' ignores tool, runner and script", line, "execution")
    known_script = "" if "script" in meta else " (nexus knows this skill as a script skill)"
    unsafe = entrylib.unsafe({**resolved, "dir": skill_dir})  # the same check that makes loading refuse it
    if unsafe and unsafe.startswith("script"):
        yield _error(unsafe + known_script, line, "script")
    elif unsafe:
        yield _error(unsafe, line, "execution")
    elif kind == "script" and script and not os.path.isfile(os.path.join(skill_dir, script)):
        yield _error(f"script '{script}' does not exist in {skill_dir}{known_script}", line, "script")


def _unexpected(skill, _skill_dir):
    """--strict: fields that neither the Agent Skills specification nor nexus defines, and names that
    other tools may not take."""
    if skill.name and not skill.name.isascii():
        yield _warning(f"name {skill.name!r} is not ASCII: it travels badly (shells, file systems and loaders "
                       "that take only a-z, 0-9 and -)", skill.lines.get("name"), "name")
    for key in skill.frontmatter:
        if key not in AGENT_SKILLS_FIELDS + OTHER_LOADERS_FIELDS and key not in schema.FRONTMATTER_KEYS:
            yield _warning(f"unexpected field '{key}': neither Agent Skills nor nexus defines it",
                           skill.lines[key], "unexpected-field")
    requires = skill.meta.get("requires")
    for key, spelling in schema.SPEC_SPELLINGS.items():
        if isinstance(requires, dict) and key in requires:
            yield _warning(f"metadata.{skill.meta_key}.requires.{key}: the skills spec's spelling; nexus's is "
                           f"{spelling} (both are read)", skill.lines.get("metadata"), "spelling")
    for key in skill.meta:
        if key not in META_KEYS:
            yield _warning(f"unexpected field 'metadata.{skill.meta_key}.{key}'{_close(key, META_KEYS)}",
                           skill.lines.get("metadata"), "unexpected-field")


def _close(word, choices):
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
