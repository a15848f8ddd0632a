"""The config's text as statements: a table header, a `key = value` that may span lines, or a comment or
blank line, each found by asking tomllib where a statement ends, so that nothing parses TOML by hand.
Reading the config uses them to say on which line a bad key is (line_of); config.edit, to change only
the lines of the key it changes.
"""

import tomllib

from ..errors import BadInput
from . import keys


class Statement:
    """Lines [start, end) of the text: kind 'table', 'array' (a [[header]]), 'value' or 'trivia'.
    `path` is a header's table, or a value's whole key (its table's path and its own dotted key)."""

    def __init__(self, kind, start, end, text, path=(), key=(), parsed=None):
        self.kind, self.start, self.end, self.text = kind, start, end, text
        self.path, self.key, self.parsed = path, key, parsed

    @property
    def value(self):
        return keys.lookup(self.parsed, self.key)[1]


OPENERS = {'"""': '"""', "'''": "'''", "[": "]"}  # what a statement on several lines opens, and what closes it


def _closers(first_line):
    """What the last line of a statement that starts with `first_line` must hold, if it spans lines."""
    value = first_line.partition("=")[2]
    return tuple(closer for opener, closer in OPENERS.items() if opener in value) or tuple(OPENERS.values())


def scan(lines):
    """The statements of a valid TOML document given as lines (ends kept). A statement on several lines
    ends only on a line that closes the multi-line string or array it opens, so only those ends are tried:
    a long multi-line string is parsed twice, not once per line (which took 28 s for 6,000 lines)."""
    found, table, i = [], (), 0
    while i < len(lines):
        end, parsed = i + 1, None
        while parsed is None:
            text = "".join(lines[i:end])
            try:
                parsed = tomllib.loads(text)
            except tomllib.TOMLDecodeError:
                if end == len(lines):
                    raise BadInput("not a TOML document") from None
                end += 1
                closers = _closers(lines[i])
                while end < len(lines) and not any(closer in lines[end - 1] for closer in closers):
                    end += 1
        if not parsed:
            found.append(Statement("trivia", i, end, text))
        elif text.lstrip().startswith("["):
            table, kind = _header(parsed)
            found.append(Statement(kind, i, end, text, table, parsed=parsed))
        else:
            key = _key(text)
            found.append(Statement("value", i, end, text, table + key, key, parsed))
        i = end
    return found


def _header(parsed):
    """(path, 'table' or 'array') of a parsed [a.b] or [[a.b]] header."""
    path, node = [], parsed
    while isinstance(node, dict) and node:
        name, node = next(iter(node.items()))
        path.append(name)
    return tuple(path), "array" if isinstance(node, list) else "table"


def _key(text):
    """The dotted key of a `key = value` statement: the parts before the first '=' that ends a key."""
    return tuple(_header(tomllib.loads(text[:_equals(text)] + "= 0"))[0])


def _equals(text):
    at = -1
    while True:
        at = text.index("=", at + 1)
        try:
            tomllib.loads(text[:at] + "= 0")
            return at
        except tomllib.TOMLDecodeError:
            continue


def _value_span(statement):
    """(start, end) of the value in a value statement's text: after '= ', before any trailing comment."""
    text = statement.text
    start = _equals(text) + 1
    while text[start] in " \t":
        start += 1
    end = len(text.rstrip("\r\n").rstrip(" \t"))
    last_line = text.rfind("\n", 0, len(text.rstrip("\r\n"))) + 1  # a trailing comment is on the last line
    at = text.find("#", max(start, last_line))
    while at != -1:
        try:
            if tomllib.loads(text[:at]) == statement.parsed:
                end = len(text[:at].rstrip(" \t"))
                break
        except tomllib.TOMLDecodeError:
            pass
        at = text.find("#", at + 1)
    return start, end


def line_of(text, parts):
    """The line number of the statement that sets `parts`, else of the value that holds it (an inline
    table), else of the first that sets a key inside it; None when there is none."""
    statements = [s for s in scan(text.splitlines(keepends=True)) if s.kind != "trivia"]
    exact = [s for s in statements if s.path == parts]
    holding = [s for s in statements if s.kind == "value" and s.path == parts[:len(s.path)]]
    inside = [s for s in statements if s.path[:len(parts)] == parts]
    found = exact or holding or inside
    return found[0].start + 1 if found else None
