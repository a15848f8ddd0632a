"""The porcelain's commands that read and change the config: `nexus config get|set|unset|list|path|edit`,
and for one skill `nexus skill enable|disable|env|key|allow`.

Every change goes through nexus.config.edit.change: in place, validated as loading validates, atomic,
under a lock. A secret (an apiKey, an env value) is never printed, but by `nexus config get`.
"""

import os
import shlex
import sys

from nexus import config as configlib, fileio, paths
from nexus.catalog import manifest as manifestlib, status as statuslib
from nexus.cli.command import renders
from nexus.config import edit, keys
from nexus.errors import BadInput, NexusError
from nexus.schema import SECRET, is_env_name
from nexus.gateway import plan
from nexus.skill import entry as entrylib



def _dotted(parts):
    return ".".join(parts)


def render_value(report, out):
    value = report["value"]
    out.write((value if isinstance(value, str) else edit.inline(value)) + "\n")


@renders(render_value)
def get_key(ctx):
    """Prints the value nexus uses: the config file's, else the default. Text is printed as it is, any
    other value as TOML on one line (`["a", "b"]`, `true`), which `nexus config set` reads back.
    A secret is printed too: you asked for it.

    Exit status:
      0  printed;  1  not set, and no default;  2  usage error, or a config nexus cannot read

    Examples:
      nexus config get skills.log.maxEntries
      nexus config get skills.entries.github.enabled
    """
    parts = keys.split(ctx.args["KEY"])
    value, origin = keys.effective(ctx.config, parts)
    if origin is None:
        close = keys.suggestion(parts, [_dotted(p) for p in keys.listed(ctx.config)])
        hint = f" (did you mean {close}?)" if close and close != _dotted(parts) else ""
        raise NexusError(f"{_dotted(parts)}: not set{hint}")
    key = keys.find(parts)
    return {"key": _dotted(parts), "value": value, "default": key.default if key else None, "origin": origin}


def _guard(parts):
    """No skill lowers its own gate: a sandbox key, a profile or the default profile is never changed from
    inside a gateway call."""
    if "sandbox" in parts or parts[0] == "profiles" or parts[:2] == ("skills", "defaultProfile"):
        plan.refuse_inside(f"changing {_dotted(parts)}")


def _required_config():
    """The config paths that skills name in requires.config: keys `nexus config set` writes without --force."""
    return sorted({p for entry in manifestlib.cached_skills().values() for p in entrylib.required(entry, "config")})


def render_change(report, out):
    key, value = report["key"], report["value"]
    if value is None:
        out.write(f"{key}: {'unset' if report['changed'] else 'was not set'}\n")
        return
    shown = SECRET if value == SECRET else edit.inline(value)  # a secret, or a table with its secrets masked
    out.write(f"{key} = {shown}\n" if report["changed"] else f"{key}: already {shown}\n")


@renders(render_change)
def set_key(ctx):
    """VALUE is read as a TOML value when it parses as one (`true`, `5000`, `["a", "b"]`) and as text
    otherwise; a key that holds text always takes VALUE as text. Put `--` before a VALUE that starts
    with '-'. The config is edited in place: only the key's own lines change. A value of the wrong
    type, or a key nexus does not know, is refused (with the closest key it knows) and the file is
    left as it was; a config that does not exist yet is created. A skill's apiKey is set with
    `nexus skill key`, never from the command line.

    Exit status:
      0  set (or already so);  2  refused: unknown key, wrong type, or a config nexus cannot read

    Examples:
      nexus config set skills.log.maxEntries 2000
      nexus config set skills.allowBundled '["tmux", "github"]'
      nexus config set skills.entries.github.env.GH_HOST github.example.com
      nexus config set browser.enabled true --force   # a key requires.config names
    """
    args = ctx.args
    parts = keys.split(args["KEY"])
    _guard(parts)
    key = keys.writable(parts, args["--force"], _required_config)
    kind = args["--type"] or (key.type.name if key else ("table" if keys.is_table(parts) else None))
    try:
        value = keys.value_of(args["VALUE"], kind)
    except ValueError:
        needs = key.type.needs if key and not args["--type"] else f"a TOML {kind}"
        got = "" if keys.may_hold_secret(parts) else f", not {keys.shown(args['VALUE'])}"
        raise BadInput(f"{_dotted(parts)} needs {needs}{got}; '{paths.config_file()}' is unchanged") from None
    if keys.sets_api_key(parts, value):  # itself, or through a table above it: { apiKey = "..." }
        raise BadInput(f"a key is never taken from the command line (shell history, ps): nothing written; "
                       f"`nexus skill key NAME` reads it from stdin or asks for it")
    before, after = edit.change(lambda doc: [] if keys.lookup(doc, parts) == (True, value) else [(parts, value)])
    if parts == ("skills", "allowBundled") and isinstance(value, list):  # it turns skills off: said, with the undo
        off = sorted(set(os.listdir(paths.bundled_skills())) - set(value))
        if off:
            ctx.warn(f"the bundled skills it leaves out are disabled: {', '.join(off)} (every bundled skill again: "
                     "nexus config unset skills.allowBundled)")
    shown = keys.masked(parts, value)
    report = {"key": _dotted(parts), "value": shown, "changed": before != after, "file": edit.target()}
    return {**report, "secret": True} if shown != value else report


@renders(render_change)
def unset_key(ctx):
    """Removes the key's lines from the config (a table: every key in it); nexus then uses the default.
    Comments and every other line stay. A key that is not set is left so, with exit status 0.
    """
    parts = keys.split(ctx.args["KEY"])
    _guard(parts)
    before, after = edit.change(lambda doc: [(parts, edit.UNSET)] if keys.lookup(doc, parts)[0] else [])
    return {"key": _dotted(parts), "value": None, "changed": before != after, "file": edit.target()}


def render_list(rows, out):
    from nexus.style import Style, fitted  # human text only: --json never pays for style

    shown = [r["value"] if isinstance(r["value"], str) else "(not set)" if r["origin"] is None else edit.inline(r["value"])
             for r in rows]
    table = [[row["key"], value, row["origin"] or ""] for row, value in zip(rows, shown)]  # the value gives way
    out.write("".join(line + "\n" for line in fitted(table, Style(out).columns, give=(1,), indent="")))


@renders(render_list)
def list_keys(ctx):
    """Every key nexus knows, with the value nexus uses and where it comes from (`file` or `default`), as
    `git config --show-origin` does; then the keys of each skill the file has an entry for, and the
    file's keys outside `skills`. A secret's value is shown as ***. `man nexus` (CONFIG) says what
    each key means.
    """
    rows = []
    for parts in keys.listed(ctx.config):
        key = keys.find(parts)
        value, origin = keys.effective(ctx.config, parts)
        rows.append({"key": _dotted(parts), "value": SECRET if key and key.secret and origin else value,
                     "default": key.default if key else None, "origin": origin,
                     "type": key.type.name if key else None, "meaning": key.meaning if key else None})
    return rows


def render_path(report, out):
    out.write(report["path"] + "\n")


@renders(render_path)
def show_path(ctx):
    """The config file nexus reads: $NEXUS_CONFIG, else $NEXUS_HOME/nexus.toml. It need not exist."""
    found = paths.config_file()
    return {"path": found, "exists": os.path.exists(found)}


def render_allow(report, out):
    granted = ", ".join(report["granted"])
    out.write(f"{report['skill']}: allowed {granted}\n" if report["changed"] else
              f"{report['skill']}: already allowed {granted}\n")


@renders(render_allow)
def allow_skill(ctx):
    """Widens what a confined skill may do (see SANDBOX in nexus(1)): `network` sets
    skills.entries.KEY.sandbox.network = true; --write and --read add to its write and read lists
    (which start from what the skill declares). A PATH is absolute, or starts with ~, {cwd}, {tmp} or
    {state}; another is taken from the current folder. Refused from inside a gateway call: no skill
    widens its own sandbox.

    Exit status:
      0  allowed, or already so;  1  no such skill, or refused from inside a gateway call;  2  usage error

    Examples:
      nexus skill allow weather network
      nexus skill allow github --read ~/.config/gh
      nexus skill allow disk-report --write ~/exports
    """
    args = ctx.args
    plan.refuse_inside("nexus skill allow")
    if not (args["network"] or args["--write"] or args["--read"]):
        raise BadInput("what to allow? network, --write PATH or --read PATH")
    entry = ctx.entry
    from nexus.gateway import sandbox  # `skill allow` alone needs what a skill declares

    wanted = {"network": bool(args["network"]), "write": [_place(p) for p in args["--write"]],
              "read": [_place(p) for p in args["--read"]]}
    granted = (["network"] if wanted["network"] else []) + [f"--{key} {p}" for key in ("write", "read")
                                                            for p in wanted[key]]
    return {"skill": entry["name"], "granted": granted, "changed": sandbox.grant(entry, **wanted),
            "key": _dotted(("skills", "entries", configlib.own_key(entry), "sandbox"))}


def _place(path):
    """A PATH of `skill allow` as the config keeps it: ~, {cwd}, {tmp}, {state} and absolute paths as given."""
    if path.startswith("~") or path.split("/")[0] in ("{cwd}", "{tmp}", "{state}"):
        return path
    return os.path.abspath(path)


def render_edit(report, out):
    out.write(f"saved {report['path']}\n" if report["changed"] else "no change\n")


@renders(render_edit)
def edit_file(ctx):
    """Opens a copy of the config in $VISUAL, else $EDITOR, else vi (split into words, run without a
    shell), and checks what you saved as loading does. A valid config replaces the file atomically
    (mode 0600); an invalid one is never saved: on a terminal you are asked to edit it again, as
    visudo and crontab -e do. When the file changed meanwhile (another `nexus config set`), your
    version is not saved either, and the copy is kept.

    Exit status:
      0  saved, or nothing changed;  1  the editor failed, or the file changed meanwhile;  2  invalid
    """
    import shutil  # `config edit` alone needs a scratch folder
    import tempfile

    from nexus.style import ask  # and may ask

    plan.refuse_inside("nexus config edit")  # the editor may change any key: the sandbox's, a profile's
    target = edit.target()
    try:
        with open(target, "rb") as f:
            original = f.read()
    except FileNotFoundError:
        original = b""
    folder = tempfile.mkdtemp(prefix="nexus-config-")  # 0700
    copy = os.path.join(folder, os.path.basename(target))
    kept = False  # the copy stays only when it holds edits that were not saved, and the message names it
    try:
        fileio.write_atomic(copy, original)
        while True:
            try:
                _run_editor(copy)
            except NexusError as e:
                kept = _differs(copy, original)
                raise NexusError(f"{e}; nothing saved" + (f" (your copy: {copy})" if kept else "")) from None
            with open(copy, "rb") as f:
                data = f.read()
            if data == original:
                break
            try:
                configlib.read(data, target)
                break
            except BadInput as e:
                ctx.warn(str(e))
                if not ask("Edit it again? [Y/n] ", default=True):
                    raise BadInput(f"nothing saved: '{target}' is unchanged") from None
        if data != original:
            try:
                edit.replace(original, data)
            except NexusError as e:
                kept = True
                raise NexusError(f"{e} (your version: {copy})") from None
    finally:
        if not kept:
            shutil.rmtree(folder, ignore_errors=True)
    return {"path": target, "changed": data != original}


def _differs(path, original):
    try:
        with open(path, "rb") as f:
            return f.read() != original
    except OSError:
        return False


def _run_editor(path):
    from nexus.gateway import process  # `config edit` alone runs a program

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        done = process.run([*shlex.split(editor), path])
    except (OSError, ValueError) as e:
        raise NexusError(f"cannot run the editor '{editor}': {getattr(e, 'strerror', None) or e}") from None
    if done.exit != 0:
        raise NexusError(f"the editor '{editor}' exited with {done.exit}")


# -- one skill's config ---------------------------------------------------------------------------


def _skill(ctx):
    """(entry, the path of its [skills.entries.KEY] table)."""
    entry = ctx.entry
    return entry, ("skills", "entries", configlib.own_key(entry))


def render_switch(report, out):
    if report.get("fix"):
        out.write(f"{report['skill']}: still disabled: {report['disabledReason']}\n")
    else:
        state = "enabled" if report["enabled"] else "disabled"
        out.write(f"{report['skill']}: {state if report['changed'] else 'already ' + state}\n")


def _switch(ctx, enabled):
    entry, table = _skill(ctx)
    path = (*table, "enabled")

    def changes(doc):
        current = keys.lookup(doc, path)[1]
        if enabled:  # no key means enabled: only a false needs changing
            return [(path, True)] if current is False else []
        return [] if current is False else [(path, False)]

    before, after = edit.change(changes)
    report = {"skill": entry["name"], "key": _dotted(path), "enabled": enabled, "changed": before != after}
    reason = statuslib.Checker(after).disabled_reason(entry) if enabled else None
    if reason:
        report.update(enabled=False, disabledReason=reason, fix=plan.enable_command(entry, after))
        ctx.warn(f"to enable {entry['name']}: {report['fix']}")
        ctx.status = 1
    return report


@renders(render_switch)
def enable_skill(ctx):
    """Sets skills.entries.KEY.enabled = true (KEY: the skill's skillKey, else its name) when it is false.
    A bundled skill that skills.allowBundled leaves out stays disabled: nexus says so and prints the
    command that adds it there.

    Exit status:
      0  enabled, or already so;  1  no such skill, or it stays disabled;  2  usage error
    """
    return _switch(ctx, True)


@renders(render_switch)
def disable_skill(ctx):
    """Sets skills.entries.KEY.enabled = false (KEY: the skill's skillKey, else its name): the skill is
    listed as disabled, left out of prompts and agent folders, and `nexus skill run` refuses it.
    """
    return _switch(ctx, False)


def render_env(report, out):
    name = report["skill"]
    if "set" not in report:
        out.write(f"{name}: env from config: {', '.join(report['env']) or 'none'}"
                  + (f" (secret: {', '.join(report['secret'])})" if report["secret"] else "") + "\n")
        return
    done = [f"set {', '.join(report['set'])}"] if report["set"] else []
    done += [f"marked secret {', '.join(report['marked'])}"] if report["marked"] else []
    done += [f"unset {', '.join(report['unset'])}"] if report["unset"] else []
    out.write(f"{name}: {'; '.join(done) or 'env unchanged'}\n")


@renders(render_env)
def set_env(ctx):
    """Sets (or removes) environment variables that `nexus skill run` gives the skill's tool, in
    skills.entries.KEY.env, all in one change. Without VAR=VALUE or --unset, prints the names set.
    Only names are ever printed: a value may be a secret. A value is masked without --secret when
    the skill declares its variable, or when its name has KEY, TOKEN, SECRET, PASS, CREDENTIAL or
    AUTH in it; `REGION=us-east-1` is not.

    Examples:
      nexus skill env github GH_HOST=github.example.com
      nexus skill env NAME DEPLOY_SIGNATURE=... --secret
      nexus skill env github --unset GH_HOST
    """
    entry, table = _skill(ctx)
    env_path = (*table, "env")
    wanted = {}
    for item in ctx.args["VAR=VALUE"]:
        var, equals, value = item.partition("=")
        if not equals or not is_env_name(var):
            raise BadInput(f"'{var}' is not VAR=VALUE with VAR an environment variable name (letters, digits and _)")
        wanted[var] = value
    for var in ctx.args["--unset"]:
        if not is_env_name(var):
            raise BadInput(f"--unset '{var}': not an environment variable name (letters, digits and _)")
        wanted[var] = edit.UNSET

    secret_path = (*table, "secretEnv")
    report = {"skill": entry["name"], "key": _dotted(env_path)}
    if not wanted:
        skill_config = configlib.skill_entry(ctx.config, entry)
        return {**report, "env": list(skill_config.get("env", {})), "secret": skill_config.get("secretEnv", [])}

    def changes(doc):
        current = keys.lookup(doc, env_path)[1] or {}
        found = [((*env_path, var), value) for var, value in wanted.items()
                 if ((var in current) if value is edit.UNSET else current.get(var) != value)]
        marked = keys.lookup(doc, secret_path)[1] or []
        keep = [v for v in marked if wanted.get(v, "") is not edit.UNSET]  # an unset var is no secret any more
        keep += [v for v, value in wanted.items() if ctx.args["--secret"] and value is not edit.UNSET and v not in keep]
        if keep != marked:
            found.append((secret_path, keep or edit.UNSET))
        return found

    before, after = edit.change(changes)
    old, new = keys.lookup(before, env_path)[1] or {}, keys.lookup(after, env_path)[1] or {}
    was, now = keys.lookup(before, secret_path)[1] or [], keys.lookup(after, secret_path)[1] or []
    return {**report, "set": [v for v in new if old.get(v) != new[v]], "unset": [v for v in old if v not in new],
            "marked": [v for v in now if v not in was], "env": list(new), "secret": now}


def render_key(report, out):
    name, change = report["skill"], report["apiKey"]
    given = f" (given to its tool as {report['env']})" if report["env"] and change != "unset" else ""
    out.write(f"{name}: key {change}{given}\n")


@renders(render_key)
def store_key(ctx):
    """Stores the skill's API key in skills.entries.KEY.apiKey; `nexus skill run` gives it to the skill's
    tool as its primaryEnv. The key is read from stdin (one line), or asked for without echo on a
    terminal: never from the command line, so that it stays out of shell history and ps. The config
    file is kept 0600.

    Examples:
      pass show brave | nexus skill key NAME
      nexus skill key NAME                  # asks, without echo
    """
    entry, table = _skill(ctx)
    path, primary = (*table, "apiKey"), entrylib.primary_env(entry)
    value = edit.UNSET if ctx.args["--unset"] else _read_key(entry["name"], primary)
    if not primary and value is not edit.UNSET:
        ctx.warn(f"{entry['name']} names no env var for a key (primaryEnv): the key is kept, but no tool gets it")

    def changes(doc):
        found, current = keys.lookup(doc, path)
        return [(path, value)] if (found if value is edit.UNSET else current != value) else []

    before, after = edit.change(changes)
    change = "unchanged" if before == after else "unset" if value is edit.UNSET else "set"
    return {"skill": entry["name"], "key": _dotted(path), "apiKey": change, "env": primary}


def _read_key(name, primary):
    """The key from a prompt without echo on a terminal, else from stdin (its one line)."""
    if sys.stdin is None or sys.stdin.closed:
        raise BadInput("no stdin to read the key from: pipe it in, or run this on a terminal")
    if sys.stdin.isatty():
        import getpass  # a key asked for on a terminal only

        text = getpass.getpass(f"Key for {name}{f' ({primary})' if primary else ''}: ")
    else:
        text = sys.stdin.read()
        text = text[:-1] if text.endswith("\n") else text
        text = text[:-1] if text.endswith("\r") else text
    if not text:
        raise BadInput("no key given: nothing written")
    if "\n" in text or "\0" in text:
        raise BadInput("a key is one line of text: nothing written")
    return text


def key_names(ctx):
    """Every config key for shell completion: the keys nexus knows, those of each skill in the cached
    manifest, and the keys the config file sets.
    """
    skills = sorted({configlib.skill_key(entry) for entry in manifestlib.cached_skills().values()} - {None})
    try:
        config = configlib.load()
    except NexusError:
        config = {}
    found = [_dotted(parts) for parts in keys.listed(config)]
    found += [f"skills.entries.{s}.{leaf}" for s in skills for leaf in ("enabled", "apiKey", "env", "secretEnv")]
    return "".join(k + "\n" for k in dict.fromkeys(found))
