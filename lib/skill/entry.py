"""A skill's manifest entry: built from a parsed SKILL.md, and read safely, even from an entry on stdin.

Loading is lenient (`nexus skills check` is strict): a metadata value nexus cannot use is dropped with
a warning, so one bad value never breaks listing or running.
"""

import os

from .. import schema
from .. import paths

OS_ALIASES = {"macos": "darwin", "osx": "darwin", "windows": "win32", "win": "win32"}


def build(skill, source, skill_dir, dir_mtime_ns, file_mtime_ns):
    """(ManifestEntry, warnings) of a parsed, valid SkillFile."""
    meta = skill.meta
    fm = skill.frontmatter
    entry = {
        "name": skill.name,
        "description": fm["description"].strip(),
        "source": source,
        "filePath": skill.path,
        "dir": skill_dir,
        "sha256": skill.sha256,
    }
    if fm.get("homepage"):
        entry["homepage"] = fm["homepage"]
    for key in schema.META_FIELDS:
        if meta.get(key) not in (None, "", []):
            entry[key] = meta[key]
    if "os" in entry:
        entry["os"] = schema.string_list(entry["os"])
    requires = meta.get("requires") if isinstance(meta.get("requires"), dict) else {}
    entry["requires"] = {k: schema.string_list(requires.get(k)) for k in schema.REQUIRE_KEYS}
    entry["requires"].update((k, schema.string_list(requires[k])) for k in schema.DEPENDS_KEYS if k in requires)
    tools = schema.string_list(requires.get("tools"))  # the skills spec's spelling of requires.skills
    if tools:
        entry["requires"]["skills"] = list(dict.fromkeys(entry["requires"].get("skills", []) + tools))
    from . import known  # only discovery builds entries: the gateway, which reads them, never loads the tables

    execution = known.execution(skill.name, meta)
    for key in ("requiredEnv", "configEnv"):
        if key in execution:
            execution[key] = schema.string_list(execution[key])
    entry.update(execution)
    if "sandbox" not in entry and skill.name in known.SANDBOX:
        entry["sandbox"] = known.SANDBOX[skill.name]
    implements = schema.string_list(meta.get("implements"))
    connectors = (schema.string_list(meta.get("connectors")) or schema.string_list(requires.get("connectors"))
                  or sorted({known.CONNECTORS[b] for b in binaries(entry) if b in known.CONNECTORS}))
    entry.update({k: v for k, v in (("implements", implements), ("connectors", connectors)) if v})
    aliases = [a for a in schema.string_list(meta.get("aliases")) if paths.is_valid_name(a) and a != skill.name]
    if aliases:
        entry["aliases"] = list(dict.fromkeys(aliases))  # other names `nexus skill run` takes for it
    if isinstance(meta.get("crystallized"), dict):  # written by `nexus session crystallize`
        entry["crystallized"] = meta["crystallized"]
    variables = _variables(meta.get("variables"))
    if variables:
        entry["variables"] = variables
    install = meta.get("install")
    entry["install"] = [spec for spec in install if isinstance(spec, dict)] if isinstance(install, list) else []
    entry["hasInstall"] = bool(entry["install"])
    extra = {k: v for k, v in fm.items() if k not in schema.FRONTMATTER_KEYS}
    if extra:
        entry["extra"] = extra
    entry["dirMtimeNs"] = dir_mtime_ns
    entry["fileMtimeNs"] = file_mtime_ns
    return entry, _sanitize(entry, meta)


VARIABLE_KEYS = ("name", "description", "type", "default")
# What nexus itself sets or relies on in a tool's environment: a variable of a skill's never takes these names
# (NEXUS_CALLER_CWD is a confined call's {cwd}; PATH, LD_*, PYTHON* choose the code that runs)
RESERVED_ENV = ("PATH", "HOME", "TMPDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
RESERVED_PREFIXES = ("NEXUS_", "LD_", "PYTHON")


def reserved_env(name):
    """Whether `name` is a variable nexus sets or relies on, which a skill may not declare (skills check: an
    error; a call: never applied)."""
    return name in RESERVED_ENV or name.startswith(RESERVED_PREFIXES)


def _variables(declared):
    """metadata.nexus.variables (skills spec 9.4) as [{name, description, type, default}], the values
    text; a variable is required unless it has a default. Those without a usable name, or with a name nexus
    keeps (reserved_env), are left out (_sanitize warns)."""
    if not isinstance(declared, list):
        return []
    return [{key: str(v[key]) for key in VARIABLE_KEYS if v.get(key) is not None}
            for v in declared if isinstance(v, dict) and schema.is_env_name(v.get("name"))
            and not reserved_env(v["name"])]


def _sanitize(entry, meta):
    """Drop the metadata values nexus cannot use, so one bad value never breaks listing or running.

    Loading is lenient (`nexus skills check` is strict): each dropped value is a warning, and a
    tool or script skill that names nothing to run is read as a prompt skill.
    """
    warnings = []
    for key in schema.TEXT_FIELDS + schema.FLAG_FIELDS:
        wanted = str if key in schema.TEXT_FIELDS else bool
        if key in entry and not isinstance(entry[key], wanted):
            warnings.append(f"{key} must be {'text' if wanted is str else 'true or false'}, "
                            f"not {entry.pop(key)!r}; ignored")
    problem = sandbox_problem(entry.get("sandbox"))
    if problem:
        warnings.append(f"sandbox {problem}; ignored")
        del entry["sandbox"]
    if meta.get("requires") is not None and not isinstance(meta["requires"], dict):
        warnings.append("requires must be a mapping of " + ", ".join(schema.REQUIRE_KEYS) + "; ignored")
    for where, names, valid in (("implements", entry.get("implements", []), schema.is_capability),
                                ("connectors", entry.get("connectors", []), schema.is_capability),
                                ("requires.capabilities", entry["requires"].get("capabilities", []), schema.is_capability),
                                ("requires.skills", entry["requires"].get("skills", []), paths.is_valid_name)):
        bad = [n for n in names if not valid(n)]
        if bad:
            warnings.append(f"{where}: {', '.join(map(repr, bad))} not a valid name; ignored")
            names[:] = [n for n in names if valid(n)]
    for key in ("implements", "connectors"):
        if entry.get(key) == []:
            del entry[key]
    declared = meta.get("variables")
    if declared is not None and (not isinstance(declared, list) or len(entry.get("variables", [])) < len(declared)):
        warnings.append("variables must be a list of {name, description, type, default}, each name an env var "
                        "name that is not nexus's own (NEXUS_*, PATH, HOME, LD_*, PYTHON*, ...); those that are not "
                        "were ignored")
    runnable = {"tool": bool(entry.get("tool")), "script": bool(entry.get("runner") and entry.get("script")),
                "prompt": True}
    if not runnable.get(entry["type"]):
        fallback = "script" if runnable["script"] else "tool" if runnable["tool"] else "prompt"
        problem = "is not tool, script or prompt" if entry["type"] not in schema.TYPES else "names nothing to run"
        warnings.append(f"type {entry['type']!r} {problem}; read as {fallback}")
        if fallback == "prompt" and entry["type"] not in schema.TYPES:
            entry["unknownType"] = str(entry["type"])  # its runs warn, and are logged as `unknown`
        entry["type"] = fallback
    return warnings


def sandbox_problem(value):
    """What is wrong with a sandbox declaration ({network: bool, write: [folder], read: [folder], unix: [socket]}),
    or None.
    A folder is absolute, or starts with ~, {cwd}, {tmp} or {state}."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return "must be a mapping of " + ", ".join(schema.SANDBOX_KEYS)
    unknown = [k for k in value if k not in schema.SANDBOX_KEYS]
    if unknown:
        return f"has {unknown[0]!r}, not one of " + ", ".join(schema.SANDBOX_KEYS)
    if "network" in value and not isinstance(value["network"], bool):
        return "network must be true or false"
    for key in ("write", "read", "unix"):
        folders = value.get(key, [])
        bad = [f for f in folders if not _place(f)] if isinstance(folders, list) else [folders]
        if bad:
            return f"{key} needs a list of folders, each absolute or starting with ~, {{cwd}}, {{tmp}} or {{state}}" \
                   f", with no . or .. in it (not {bad[0]!r})"
    return None


def unprintable(meta):
    """(where, value) of the first declared folder or variable name of a product's metadata that holds a
    control, format or other unprintable character (`\r`, ESC, a bidi override), or None. The door shows
    them to a person: one that can erase or reorder what the question says is refused, never shown."""
    sandbox = meta.get("sandbox") if isinstance(meta.get("sandbox"), dict) else {}
    requires = meta.get("requires") if isinstance(meta.get("requires"), dict) else {}
    variables = meta.get("variables") if isinstance(meta.get("variables"), list) else []
    found = [(f"sandbox.{key}", v) for key in ("write", "read")
             for v in (sandbox.get(key) if isinstance(sandbox.get(key), list) else [])]
    found += [("requires.env", v) for v in (requires.get("env") if isinstance(requires.get("env"), list) else [])]
    found += [("variables", v.get("name")) for v in variables if isinstance(v, dict)]
    found += [("primaryEnv", meta.get("primaryEnv"))]
    return next(((where, v) for where, v in found if isinstance(v, str) and not v.isprintable()), None)


def _place(folder):
    # no . or ..: {state}/../../other/data would name another skill's state as if it were this one's
    return isinstance(folder, str) and folder.isprintable() and not {".", ".."} & set(folder.split("/")) and (
        folder.startswith("~") or os.path.isabs(folder) or folder.split("/")[0] in ("{cwd}", "{tmp}", "{state}"))


def required(entry, key):
    """One list of requires (bins, anyBins, env, config), read safely from any entry."""
    requires = entry.get("requires")
    return schema.string_list(requires.get(key)) if isinstance(requires, dict) else []


def binaries(entry):
    """Every binary the skill needs: requires.bins, and the tool or runner it runs."""
    names = required(entry, "bins") + [entry[k] for k in ("tool", "runner") if isinstance(entry.get(k), str)]
    return list(dict.fromkeys(names))


def env_names(entry):
    """Every env var the skill needs: requires.env, requiredEnv and configEnv (the skills spec's
    ToolSkillConfig: the env vars that say the tool is configured)."""
    return list(dict.fromkeys(required(entry, "env") + schema.string_list(entry.get("requiredEnv"))
                              + schema.string_list(entry.get("configEnv"))))


def primary_env(entry):
    """The env var a configured apiKey stands for: the declared primaryEnv, or None. As in OpenClaw, a
    key never stands for another variable (DECISIONS.md), even the first one the skill requires."""
    primary = entry.get("primaryEnv")
    return primary if isinstance(primary, str) and primary else None


CLASSES = {  # a skill's class (the gateway design's `Class:`): what a person must set up before it works
    "prompt": "Prompt (instructions the agent follows: nexus runs nothing)",  # it may still need a binary
    "oauth": "OAuth/Complex (signs in to an account)",
    "api-key": "API key (needs a secret in its environment)",
    "cli": "CLI (needs its binary, and no secret)",
}


def skill_class(entry):
    """prompt, oauth (it signs in to a person's account), api-key (it needs a secret: a primaryEnv, or a
    variable whose name says secret) or cli (a binary, and perhaps plain settings such as WC_LOCALE, which
    are no credential): the skills spec's connector classification (3.4), read from the entry."""
    if entry.get("type") in ("prompt", "unknown"):
        return "prompt"
    if entry.get("requiresAuth") or entry.get("connectors"):
        return "oauth"
    if primary_env(entry) or any(schema.secret_name(name) for name in env_names(entry)):
        return "api-key"
    return "cli"


def os_fits(os_values, platform):
    """True when a list of os names (aliases allowed) is empty or names `platform`."""
    wanted = [OS_ALIASES.get(o.lower(), o.lower()) for o in schema.string_list(os_values)]
    return not wanted or platform in wanted


def unsafe(entry):
    """Why the entry may not run as it says, or None: a tool or runner given as a relative path (it
    would run whatever the caller's folder holds), or a script outside the skill's folder."""
    for key in ("tool", "runner"):
        value = entry.get(key)
        if isinstance(value, str) and "/" in value and not os.path.isabs(value):
            return f"{key} '{value}' is a relative path: name a command on PATH, or give an absolute path"
    script = entry.get("script")
    if entry.get("type") != "script" or not isinstance(script, str):
        return None
    if os.path.isabs(script) or ".." in script.replace("\\", "/").split("/"):
        return f"script '{script}' must be a relative path inside the skill folder"
    folder, real = os.path.realpath(entry["dir"]), os.path.realpath(os.path.join(entry["dir"], script))
    if real == folder or not paths.contains(folder, real):
        return f"script '{script}' leads outside the skill folder (through a symlink)"
    return None
