"""Crystallization: a session's successful calls, turned into a script skill that replays them.

The new skill is a SKILL.md (type script, runner sh, `requires.skills` naming the skills it calls)
and replay.sh, a POSIX sh script that runs each call again through `nexus skill run`, in order,
stopping at the first that fails. No text from a log becomes code: every field that reaches the script
is checked by the one check of its kind (a skill name by paths.checked_name, an env var's name by
schema.is_env_name, a session id by schema.is_session_id, a parameter's name by `variables`) and every
word is single-quoted as bytes by one function (`_word`), so it arrives byte for byte. `--var NAME=VALUE` turns each occurrence of VALUE in the recorded arguments into a parameter of
the new skill (`--NAME VALUE`, or positional in the order given). A secret was never logged (it shows
as ***; the log says where each one masked is, so a literal *** is replayed as it is): such an
argument is replayed only from a variable, or from the env var that held it when the call's skill
declares exactly one; otherwise crystallization is refused, naming the call.
"""

import json
import os
import re
import shutil

from .. import fileio, paths, schema
from ..schema import SECRET, is_env_name
from ..errors import NexusError, UsageError
from ..skill.entry import env_names, primary_env
from ..style import visible
from . import sessions
from .stats import command

SCRIPT = "replay.sh"
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def variables(pairs):
    """[(NAME, VALUE)] from `--var NAME=VALUE` words; UsageError for one that is not of that form."""
    found = []
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not _VARIABLE.match(name) or not value:
            raise UsageError(f"--var {pair!r}: give NAME=VALUE, NAME a shell variable name and VALUE not empty")
        if name in dict(found):
            raise UsageError(f"--var {name} is given twice")
        found.append((name, value))
    return found


def span(text):
    """(first, last) call numbers from --calls N-M (or N)."""
    first, _, last = (text or "").partition("-")
    if not (first.isdigit() and (last.isdigit() or not last)) or int(first) < 1 or int(last or first) < int(first):
        raise UsageError(f"--calls {text!r}: give N-M, call numbers from `nexus session show`, N <= M")
    return int(first), int(last or first)


def chosen_calls(session, numbers=None, warn=None):
    """The successful tool and script calls of a session (within --calls, when given); NexusError when none."""
    if session != sessions.NO_SESSION and not schema.is_session_id(session):
        raise UsageError(f"{visible(session)!r} is not a session id (printable, at most {schema.MAX_SESSION_CHARS} "
                         "characters): see `nexus sessions`")
    picked = [c for c in sessions.calls(session, warn)
              if c.get("type") in ("tool", "script") and not sessions.failed(c) and not sessions.refused(c)
              and (numbers is None or numbers[0] <= c["n"] <= numbers[1])]
    if not picked:
        within = f" within calls {numbers[0]}-{numbers[1]}" if numbers else ""
        raise NexusError(f"session {session!r} has no successful tool or script call{within} to replay "
                         "(see `nexus session show`)")
    return picked


def plan(name, session, picked, named, skills):
    """{"skillMd", "script" (bytes), "env", "calls"}: the new skill's files. `named` is [(NAME, VALUE)];
    `skills` maps each called skill's name to its manifest entry, when it still has one."""
    parts = sorted(named, key=lambda pair: len(pair[1]), reverse=True)
    env, steps, lines = [], [], []
    for call in picked:
        if call.get("truncated"):
            raise NexusError(f"call {call['n']} ({call['skill']}) was logged with its arguments cut: it cannot be replayed")
        skill = paths.checked_name(call["skill"])  # a log line is hostile: its name is checked, then quoted
        secret_var = _secret_var(call, parts, skills.get(skill))
        if secret_var and secret_var not in env:
            env.append(secret_var)
        args = [(arg, _masked(call, i, arg)) for i, arg in enumerate(call.get("args") or [])]
        words = [_word(arg, parts, secret_var if masked else None, masked) for arg, masked in args]
        expected = _expected(call)  # a step whose output the session held: compared when it is replayed
        lines.append((b"step '" + expected.encode() + b"' " if expected else b"") + b"nexus skill run "
                     + _word(skill, (), None) + b" --" + b"".join(b" " + w for w in words) + b" || exit $?")
        shown = " ".join(_shown(arg, parts, secret_var if masked else None, masked) for arg, masked in args)
        steps.append(f"`nexus skill run {skill} -- {visible(shown)}`")
    called, compared = list(dict.fromkeys(c["skill"] for c in picked)), any(map(_expected, picked))
    return {"skillMd": _skill_md(name, session, picked, named, env, called, steps),
            "script": _script(session, picked, named, compared) + b"\n".join(lines) + b"\n", "env": env,
            "calls": [c["n"] for c in picked], "requires": called}


def _expected(call):
    """SHA256:BYTES of the output the session's call gave, as replay.sh hands it to the gateway
    (NEXUS_EXPECTED_OUTPUT), or None when its output was not held (a streamed call) or the log line's is
    not a fingerprint: text from a log reaches the script only once checked."""
    output = call.get("output")
    digest, size = (output.get("sha256"), output.get("bytes")) if isinstance(output, dict) else (None, None)
    if type(digest) is str and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest) \
            and type(size) is int and size >= 0:
        return f"{digest}:{size}"
    return None


def _masked(call, index, arg):
    """The offsets in this argument of each *** that stands for a secret: as the log says (`maskedAt`, each
    occurrence, since nexus records it; `masked`, the arguments, in lines logged before), or for a line
    logged before either, every *** it holds. An offset that is not a *** of the argument is no secret."""
    masked_at, masked = call.get("maskedAt"), call.get("masked")
    if isinstance(masked_at, list):
        given = [at for item in masked_at if isinstance(item, list) and item and item[0] == index for at in item[1:]]
        found, end = [], 0
        for at in sorted({at for at in given if type(at) is int and at >= 0 and arg.startswith(SECRET, at)}):
            if at >= end:  # never two that overlap
                found.append(at)
                end = at + len(SECRET)
        return found
    if isinstance(masked, list):
        return _occurrences(arg) if index in masked else []
    return _occurrences(arg)


def _occurrences(arg):
    """The offsets of the ***s in `arg`, as str.replace would find them."""
    found, at = [], arg.find(SECRET)
    while at >= 0:
        found.append(at)
        at = arg.find(SECRET, at + len(SECRET))
    return found


def _secret_var(call, parts, entry):
    """The env var a masked argument of this call is replayed from, or None when it has none; NexusError
    when it has one that neither a variable nor a single declared secret can stand for."""
    args = call.get("args") or []
    if not any(_masked(call, i, arg) for i, arg in enumerate(args)) or any(value == SECRET for _, value in parts):
        return None
    declared = list(dict.fromkeys(env_names(entry) + ([primary_env(entry)] if primary_env(entry) else []))) if entry else []
    if len(declared) == 1:
        if not is_env_name(declared[0]):  # it becomes "$NAME" in the script: the one check of an env var's name
            raise NexusError(f"call {call['n']} ({call['skill']}): its skill declares {visible(declared[0])!r}, "
                             "which is not an environment variable name: give the secret a variable, as --var KEY=***")
        return declared[0]
    words = visible(" ".join(args)[:60])
    raise NexusError(f"call {call['n']} ({call['skill']} {words}) has an argument that was masked (***) in the "
                     "log, and nexus cannot tell which secret it was: give it a variable, as --var KEY=***")


def _pieces(arg, parts, secret_var, masked=()):
    """The argument cut into literal text and references: [(is_reference, text or variable)]. Only the ***s
    at the offsets `masked` (the log's) are secrets: each stands for the variable given as ***, else
    `secret_var`; every other *** is literal text."""
    stand_in = next((n for n, v in parts if v == SECRET), None) or secret_var
    pieces, start = [], 0
    for at in masked:
        pieces += _named(arg[start:at], parts) + [(True, stand_in)]
        start = at + len(SECRET)
    return pieces + _named(arg[start:], parts)


def _named(text, parts):
    """Literal text cut at each occurrence of a variable's value, longest value first."""
    pieces = [(False, text)] if text else []
    for name, value in parts:
        if value == SECRET:
            continue
        cut = []
        for is_reference, chunk in pieces:
            if is_reference:
                cut.append((True, chunk))
                continue
            for i, part in enumerate(chunk.split(value)):
                if i:
                    cut.append((True, name))
                if part:
                    cut.append((False, part))
        pieces = cut
    return pieces


def _word(arg, parts, secret_var, masked=()):
    """One shell word that gives `arg` back byte for byte, with its variables expanded: the one way text
    reaches replay.sh (literal text single-quoted as bytes; a reference only to a checked name)."""
    named = dict(parts)
    out = b""
    for is_reference, text in _pieces(arg, parts, secret_var, masked) or [(False, "")]:
        if is_reference:
            out += b'"$v_' + text.encode() + b'"' if text in named else b'"$' + text.encode() + b'"'
        else:
            out += b"'" + os.fsencode(text).replace(b"'", b"'\\''") + b"'"
    return out or b"''"


def _shown(arg, parts, secret_var, masked=()):
    named = dict(parts)
    return "".join((f"${text}" if text in named or text == secret_var else text) if ref else text
                   for ref, text in _pieces(arg, parts, secret_var, masked)) or "''"


def _script(session, picked, named, compared=False):
    """The head of replay.sh: its parameters, read as --NAME VALUE or in order, the caller's folder, and
    when a step's output is `compared`, the function that runs such a step: its tool writes to a file
    the gateway reads back (Call.differs says on stderr and in the log when it is not what the session
    saw), shown when the step ends; the other steps' output streams as it comes."""
    calls = ", ".join(str(c["n"]) for c in picked)
    flags = " ".join(f"[--{n} VALUE]" for n, _ in named)
    order = " ".join(f"[{n.upper()}" for n, _ in named) + "]" * len(named)
    synopsis = " ".join(part for part in (SCRIPT, flags, order) if part)
    lines = ["#!/bin/sh",
             f"# Crystallized by nexus from session {session}, calls {calls}: replays them in order",
             "# through `nexus skill run`, stopping at the first that fails.",
             "usage() {", f"    echo 'usage: {synopsis}' >&2", "    exit 2", "}"]
    if named:
        lines += [" ".join(f"v_{n}= set_{n}=" for n, _ in named),
                  "while [ $# -gt 0 ]; do", "    case $1 in"]
        for n, _ in named:
            lines += [f"        --{n}) [ $# -ge 2 ] || usage; v_{n}=$2; set_{n}=1; shift 2 ;;",
                      f"        --{n}=*) v_{n}=${{1#--{n}=}}; set_{n}=1; shift ;;"]
        lines += ["        --) shift; break ;;", "        -*) usage ;;", "        *) break ;;", "    esac", "done",
                  'for value in "$@"; do  # the rest, in order, for the parameters not given by name']
        for i, (n, _) in enumerate(named):
            lines.append(f'    {"if" if i == 0 else "elif"} [ -z "$set_{n}" ]; then v_{n}=$value; set_{n}=1')
        lines += ["    else usage", "    fi", "done"]
        lines += [f'[ -n "$set_{n}" ] || {{ echo "{SCRIPT}: missing --{n}" >&2; exit 2; }}' for n, _ in named]
    else:
        lines.append("[ $# -eq 0 ] || usage")
    lines.append('cd "${NEXUS_CALLER_CWD:-.}" || exit $?  # the tools run where the caller is, as when recorded')
    if compared:
        lines += ["step() {  # SHA256:BYTES COMMAND...: the output compared with the session's, then shown",
                  "    expected=$1; shift", "    out=$(mktemp) || exit 1",
                  '    NEXUS_EXPECTED_OUTPUT=$expected "$@" 1<>"$out"', "    status=$?",
                  '    cat "$out"', '    rm -f "$out"', "    return $status", "}"]
    return "\n".join(lines).encode() + b"\n"


def _skill_md(name, session, picked, named, env, called, steps):
    # What a person reads, not what runs: visible, so that a DEL or a byte that was not UTF-8 in a call's
    # words never makes the SKILL.md unreadable (replay.sh has the exact bytes).
    names = visible(", ".join(f"{c['skill']} {command(c.get('args') or [])}".strip() for c in picked))
    description = f"Replays {len(picked)} calls of session {session}: {names}"
    if len(description) > 1024:
        description = description[:1021] + "..."
    meta = {"type": "script", "runner": "sh", "script": SCRIPT, "requires": {"skills": called},
            "crystallized": {"session": session}}  # a replay: set aside from agents while it is degraded
    if env:
        meta["requires"]["env"] = env
        if len(env) == 1:
            meta["primaryEnv"] = env[0]
    text = ["---", f"name: {name}", f"description: {json.dumps(description, ensure_ascii=False)}",
            f"metadata: {json.dumps({'nexus': meta}, ensure_ascii=False)}", "---", f"# {name}", "",
            f"Crystallized from session `{session}` on {schema.now_iso()[:10]}. `nexus skill run {name}` replays "
            "these calls in order, each through `nexus skill run`, and stops at the first that fails:", ""]
    text += [f"{i}. {step}" for i, step in enumerate(steps, 1)]
    if named:
        text += ["", "## Parameters", ""]
        text += [f"- `{n}`: `--{n} VALUE`, or value {i} in order; stands for what the session's calls were given."
                 for i, (n, _) in enumerate(named, 1)]
    if env:
        text += ["", "## Environment", ""]
        text += [f"- `{v}`: the secret the session's call used (it was never logged)." for v in env]
    text += ["", "If a step starts failing, run the skills it calls directly: " + ", ".join(called) + "."]
    # A SKILL.md is UTF-8: a byte of an argument that is not shows as \\udcXX (replay.sh has the bytes).
    return ("\n".join(text) + "\n").encode("utf-8", "backslashreplace").decode("utf-8")


def folder(name):
    """Where the new skill goes: a folder of the workspace, its name checked first."""
    return os.path.join(paths.workspace_skills(), paths.checked_name(name))


def taken(name, skills, force=False):
    """NexusError when a skill of any source already has the name, unless `force`: a crystallized skill
    in the workspace would hide it."""
    if name in skills and not force:
        where = skills[name].get("dir") or skills[name].get("source")
        raise NexusError(f"a skill named {name!r} exists ({where}): choose another --name, or give --force to "
                         "hide or replace it")


def write(name, files, force=False):
    """Place the new skill in the workspace in one rename, its modes fixed whatever the umask; its folder.
    Never over a skill without `force`; a SKILL.md nexus could not read is never placed, and nothing is
    left behind when it fails."""
    from ..skill import skillmd  # writing a skill only: it reads the SKILL.md back (YAML), which a plan need not

    target = folder(name)
    if os.path.lexists(target) and not force:
        raise NexusError(f"{target} exists: choose another --name, or give --force to replace it")
    os.makedirs(paths.workspace_skills(), exist_ok=True)
    staging = os.path.join(paths.workspace_skills(), f".{name}.{os.getpid()}.new")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        os.mkdir(staging)
        os.chmod(staging, 0o755)
        fileio.write_atomic(os.path.join(staging, "SKILL.md"), files["skillMd"].encode(), 0o644)
        fileio.write_atomic(os.path.join(staging, SCRIPT), files["script"], 0o755)
        problems = [p for p in skillmd.read(os.path.join(staging, "SKILL.md"), name).problems if p.severity == "error"]
        if problems:
            raise NexusError(f"the SKILL.md for {name!r} would not be readable ({problems[0].message}): nothing written")
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        elif os.path.lexists(target):
            os.unlink(target)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target
