"""Changing nexus.toml in place, as a person would with an editor: only the lines of the changed key change;
comments, key order, blank lines and the formatting of every other line stay byte for byte.

The text is read as a list of statements (config.statements), so the edit never parses TOML by hand.
Values are written with tomli-w. `change` re-parses the result and writes it only when it is the
document intended, and valid, atomically, under a lock, mode 0600.
"""

import copy
import os
import tomllib

import tomli_w

from .. import fileio, paths
from ..errors import BadInput, NexusError
from . import keys, parse
from .statements import _value_span, scan

UNSET = object()  # the value of an edit that removes a key


# -- writing values and keys --------------------------------------------------------------------


def key_text(part):
    """One part of a key, bare when TOML allows it, else quoted, as tomli-w writes keys."""
    return tomli_w.dumps({part: 0})[:-len(" = 0\n")]


def value_text(value, newline="\n"):
    """A value as the right-hand side of `key = value`, as tomli-w writes it (an array on several lines,
    each ended by `newline`), a table inline; with newline None, all on one line."""
    if isinstance(value, dict):
        items = ", ".join(f"{key_text(k)} = {value_text(v, newline)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    if isinstance(value, list) and newline is None:
        return "[" + ", ".join(value_text(v, None) for v in value) + "]"
    return tomli_w.dumps({"v": value})[len("v = "):-1].replace("\n", newline or "\n")


def inline(value):
    """A value on one line, as `nexus config get` prints it and `nexus config set` reads it back."""
    return value_text(value, None)


# -- edits on the text --------------------------------------------------------------------------


def insertions(text, path, value):
    """Texts with `path` set to `value`, the likeliest first (`edited` keeps the first that re-parses to
    the intended document): the statement that holds the key rewritten, else a new statement."""
    lines = text.splitlines(keepends=True)
    statements, newline = scan(lines), _newline(lines)
    for s in statements:
        if s.kind == "value" and s.path == path[:len(s.path)]:
            if s.path != path:  # an inline table (or a value in the way) holds the key: rewrite it whole
                table = copy.deepcopy(s.value) if isinstance(s.value, dict) else {}
                _put(table, path[len(s.path):], value)
                value = table
            start, end = _value_span(s)
            new = s.text[:start] + value_text(value, newline) + s.text[end:]
            yield "".join(lines[:s.start]) + new + "".join(lines[s.end:])
            return
    if any(s.kind != "trivia" and s.path[:len(path)] == path for s in statements):
        yield from insertions(unset_value(text, path), path, value)  # a table becomes a value: its keys go
        return
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += newline
    sections = _sections(statements)
    parent = path[:-1]

    def at(line, new, separate=False):
        gap = [newline] if separate and line and lines[line - 1].strip() else []
        return "".join(lines[:line] + gap + [new] + lines[line:])

    def statement(table, indent=""):
        return f"{indent}{'.'.join(key_text(p) for p in path[len(table):])} = {value_text(value, newline)}{newline}"

    # 1. the table's own section; 2. a section holding dotted keys of the same family (`log.maxBytes = 1`)
    for table, body, end in sections:
        if table == parent:
            yield at(end, statement(table, _indent(body)))
    for table, body, end in sections:
        family = [s for s in body if s.path[:len(table) + 1] == path[:len(table) + 1]]
        if table != parent and table == path[:len(table)] and family:
            yield at(family[-1].end, statement(table, _indent(family)))
    # 3. a new [table] section: before its first sub-table's (and the comments just above that), else
    # after the section whose table shares most with it, else at the end
    if parent:
        header = "[" + ".".join(key_text(p) for p in parent) + "]" + newline + statement(parent)
        below = [s for s in statements if s.kind in ("table", "array") and s.path[:len(parent)] == parent]
        if below:
            line = below[0].start
            while line and lines[line - 1].lstrip().startswith("#"):
                line -= 1
            yield at(line if line else below[0].start, header + newline)  # comments opening the file stay first
        else:
            nearest = max(reversed(sections), key=lambda section: _common(section[0], parent))
            yield at(nearest[2] if _common(nearest[0], parent) else len(lines), header, separate=True)
    # 4. a dotted key in any section whose table holds the key
    for table, body, end in sections:
        if table != parent and table == path[:len(table)]:
            yield at(end, statement(table, _indent(body)))


def _newline(lines):
    """The file's own line ending, for the lines an edit writes."""
    return "\r\n" if lines and lines[0].endswith("\r\n") else "\n"


def _sections(statements):
    """[(table path, its value statements, the line after its last statement)] of the tables that take
    new keys: the root, and each [table] (not [[array]]) section."""
    found, current = [], ((), [], 0)
    for s in statements:
        if s.kind in ("table", "array"):
            found.append(current)
            current = (s.path, [], s.end) if s.kind == "table" else (None, [], s.end)
        elif s.kind == "value":
            current = (current[0], current[1] + [s], s.end)
    found.append(current)
    return [section for section in found if section[0] is not None]


def _indent(body):
    return body[-1].text[:len(body[-1].text) - len(body[-1].text.lstrip(" \t"))] if body else ""


def _common(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def unset_value(text, path):
    """The text without `path`: its statements removed (an inline table holding it rewritten). Table
    headers stay, emptied; comments and blank lines stay."""
    lines = text.splitlines(keepends=True)
    newline = _newline(lines)
    for s in reversed(scan(lines)):
        if s.kind != "trivia" and s.path[:len(path)] == path:
            del lines[s.start:s.end]
        elif s.kind == "value" and s.path == path[:len(s.path)]:
            table = copy.deepcopy(s.value)
            _drop(table, path[len(s.path):])
            start, end = _value_span(s)
            lines[s.start:s.end] = [s.text[:start] + value_text(table, newline) + s.text[end:]]
    return "".join(lines)


# -- edits on the document ----------------------------------------------------------------------


def _put(doc, parts, value):
    node = doc
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            if isinstance(node.get(part), list):
                raise BadInput(f"cannot set a key inside the array {part}")
            node[part] = {}
        node = node[part]
    node[parts[-1]] = value


def _drop(doc, parts):
    node = doc
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(parts[-1], None)


def applied(doc, edits):
    """A copy of `doc` with the edits [(path, value or UNSET)] made."""
    doc = copy.deepcopy(doc)
    for path, value in edits:
        if value is UNSET:
            _drop(doc, path)
        else:
            _put(doc, path, value)
    return doc


def _pruned(doc):
    """The document without empty tables: an emptied [table] left in the text means nothing more."""
    if not isinstance(doc, dict):
        return doc
    kept = {k: _pruned(v) for k, v in doc.items()}
    return {k: v for k, v in kept.items() if v != {} or not isinstance(doc[k], dict)}


def edited(text, edits):
    """The text with the edits made, re-parsed to the intended document; BadInput when no in-place edit
    gives it (nothing is written then)."""
    doc = tomllib.loads(text)
    for path, value in edits:
        intended = applied(doc, [(path, value)])
        options = [unset_value(text, path)] if value is UNSET else insertions(text, path, value)
        for option in options:
            try:
                if _pruned(tomllib.loads(option)) == _pruned(intended):
                    text, doc = option, intended
                    break
            except tomllib.TOMLDecodeError:
                continue
        else:
            raise BadInput(f"cannot change {'.'.join(path)} in place without changing other keys: nothing written")
    return text


# -- the transaction ----------------------------------------------------------------------------


def target():
    """The file a change writes: the config file, or what its symlink points to (a dotfiles link stays)."""
    return os.path.realpath(paths.config_file())


def _locked(work):
    """work(path, data) under the config file's lock, `data` its bytes (b"" when there is none yet)."""
    path = target()
    folder = os.path.dirname(path)
    if not os.environ.get("NEXUS_CONFIG"):
        fileio.private_dirs(folder, folder)
    elif not os.path.isdir(folder):
        raise BadInput(f"cannot write config '{path}': no folder {folder}")
    with fileio.Lock(os.path.join(folder, f".{os.path.basename(path)}.lock")):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        return work(path, data)


def change(plan):
    """Apply plan(config) -> [(path, value or UNSET)] to the config file under its lock; returns
    (config before, config after). The result must parse to the intended document and pass the same
    validation as loading, or nothing is written (BadInput, exit 2); it is written atomically, 0600."""

    def work(path, data):
        before = parse(data, path)
        edits = plan(copy.deepcopy(before))
        if not edits:
            return before, before
        text = edited(data.decode(), edits)
        after = tomllib.loads(text)
        try:
            keys.validate(after)
        except keys.Invalid as e:
            raise BadInput(f"{e}; '{path}' is unchanged") from None
        fileio.write_atomic(path, text.encode(), mode=0o600)
        return before, after

    return _locked(work)


def replace(expected, data):
    """Write `data` (already validated) as the whole config file, unless the file no longer holds
    `expected`: NexusError then, and nothing is written."""

    def work(path, current):
        if current != expected:
            raise NexusError(f"'{path}' changed while you edited it: nothing saved")
        fileio.write_atomic(path, data, mode=0o600)

    _locked(work)
