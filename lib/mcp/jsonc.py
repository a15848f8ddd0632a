"""JSON with comments and trailing commas (JSONC), as VS Code, Zed and opencode read their settings: read
with the place of every value, and edited in place, one member of an object at a time, every other byte
of the text kept. Plain JSON is JSONC without comments, so one reader serves both.

Values are read as `json` reads them (a string through json.loads of its own text, so escapes and
control characters are judged the same way; `1e400` is read as inf but, never written back, stays
`1e400` in the file). A key given twice is kept twice in the text; reading takes the last, as
JSON.parse does, and an edit refuses to choose between two members of the name it changes.
"""

import json

WHITESPACE = " \t\r\n\ufeff"
SPANS_DEPTH = 2  # the root, and a member's object (a client's servers): where an edit needs each member's place


def _constant(name):
    raise ValueError(f"{name} is not JSON")  # json reads NaN and Infinity; a client's file must not have them


_PLAIN = json.JSONDecoder(parse_constant=_constant)
_scanstring = json.decoder.scanstring


class Value:
    """A value's span [start, end) in the text, its data, and for an object its members
    [(key, key_start, Value)] in the order they are written."""

    __slots__ = ("start", "end", "data", "members")

    def __init__(self, start, end, data, members=None):
        self.start, self.end, self.data, self.members = start, end, data, members

    def member(self, key):
        """The Value of `key` in this object, None when it has none; ValueError when it has it twice."""
        found = [m for m in self.members if m[0] == key]
        if len(found) > 1:
            raise ValueError(f'"{key}" is given {len(found)} times')
        return found[0] if found else None


class _Reader:
    def __init__(self, text):
        self.text, self.i = text, 0

    def fail(self, what):
        line = self.text.count("\n", 0, self.i) + 1
        column = self.i - (self.text.rfind("\n", 0, self.i) + 1) + 1
        raise ValueError(f"{what} at line {line} column {column}")

    def skip(self):
        """Past whitespace and comments."""
        text = self.text
        while self.i < len(text):
            if text[self.i] in WHITESPACE:
                self.i += 1
            elif text.startswith("//", self.i):
                end = text.find("\n", self.i)
                self.i = len(text) if end < 0 else end + 1
            elif text.startswith("/*", self.i):
                end = text.find("*/", self.i + 2)
                if end < 0:
                    self.fail("unterminated comment")
                self.i = end + 2
            else:
                return

    def value(self, depth=0):
        self.skip()
        if self.i >= len(self.text):
            self.fail("expected a value")
        char = self.text[self.i]
        if char in "{[" and depth >= SPANS_DEPTH:  # below the servers' object no member's place is needed:
            try:  # plain JSON is read by json's scanner, in C; JSONC (comments, trailing commas) below
                data, end = _PLAIN.raw_decode(self.text, self.i)
                start, self.i = self.i, end
                return Value(start, end, data)
            except (ValueError, RecursionError):
                pass
        if char == "{":
            return self.object(depth)
        if char == "[":
            return self.array(depth)
        if char == '"':
            return self.string()
        return self.scalar()

    def string(self):
        start = self.i
        try:  # json's own scanner, in C: a large file's long strings are not read a character at a time
            data, self.i = _scanstring(self.text, start + 1, True)
        except ValueError as e:
            self.fail("unterminated string" if "Unterminated" in str(e) else "invalid string")
        return Value(start, self.i, data)

    def scalar(self):
        start, text = self.i, self.text
        while self.i < len(text) and text[self.i] not in WHITESPACE + ",:]}/":
            self.i += 1
        token = text[start:self.i]
        if token in ("true", "false", "null"):
            return Value(start, self.i, json.loads(token))
        try:
            number = json.loads(token)
        except ValueError:
            number = None
        if not isinstance(number, (int, float)) or token.startswith(("N", "I", "-I")):  # json reads NaN, Infinity
            self.i = start
            self.fail(f"unexpected {token[:20]!r}" if token else f"unexpected {text[start]!r}")
        return Value(start, self.i, number)

    def items(self, close, item):
        """The items of an object or array up to `close`, a trailing comma allowed."""
        self.i += 1
        found = []
        while True:
            self.skip()
            if self.text.startswith(close, self.i):
                self.i += 1
                return found
            found.append(item())
            self.skip()
            if self.text.startswith(",", self.i):
                self.i += 1
            elif not self.text.startswith(close, self.i):
                self.fail(f"expected ',' or '{close}'")

    def object(self, depth=0):
        start = self.i

        def member():
            if not self.text.startswith('"', self.i):
                self.fail("expected a key in quotes")
            key = self.string()
            self.skip()
            if not self.text.startswith(":", self.i):
                self.fail("expected ':'")
            self.i += 1
            return key.data, key.start, self.value(depth + 1)

        members = self.items("}", member)
        return Value(start, self.i, {key: value.data for key, _, value in members}, members)

    def array(self, depth=0):
        start = self.i
        values = self.items("]", lambda: self.value(depth + 1))
        return Value(start, self.i, [v.data for v in values])


def parse(text):
    """The Value of a whole document; ValueError naming the line and column of what is wrong."""
    reader = _Reader(text)
    try:
        value = reader.value()
    except RecursionError:
        raise ValueError("nested too deeply") from None
    reader.skip()
    if reader.i < len(text):
        reader.fail("unexpected text after the document")
    return value


def loads(text):
    """The data of a JSONC document."""
    return parse(text).data


# -- edits --------------------------------------------------------------------------------------


def _newline(text):
    return "\r\n" if "\r\n" in text else "\n"


def _line_start(text, at):
    return text.rfind("\n", 0, at) + 1


def _line_end(text, at):
    """Where the line holding `at` ends: its newline (its \\r of a \\r\\n), or the end of the text."""
    end = text.find("\n", at)
    if end < 0:
        return len(text)
    return end - 1 if end and text[end - 1] == "\r" else end


def _indent(text, at):
    start = _line_start(text, at)
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def _alone_on_line(text, start, end):
    """Whether text[start:end] has only whitespace before it and only whitespace, or a // comment, after it
    on its lines."""
    before = text[_line_start(text, start):start]
    after = text[end:_line_end(text, end)].strip()
    return not before.strip() and (not after or after.startswith("//"))


def render(data, indent="", unit="  ", newline="\n"):
    """`data` as JSON laid out on lines below `indent`, or on one line when unit is None."""
    if unit is None:
        return json.dumps(data, ensure_ascii=False)
    return json.dumps(data, ensure_ascii=False, indent=unit).replace("\n", newline + indent)


def _comma_after(text, at):
    """The index of a comma that follows `at` past whitespace only, else None."""
    while at < len(text) and text[at] in WHITESPACE:
        at += 1
    return at if text.startswith(",", at) else None


def put(text, obj, key, data):
    """The text with obj[key] = data: the member's value replaced, or a member added after the last one
    (an empty object opened onto lines); every other byte kept."""
    nl = _newline(text)
    parent = _indent(text, obj.start)
    existing = obj.member(key)
    if obj.members:
        first = obj.members[0][1]
        multiline = "\n" in text[obj.start:first]
        child = _indent(text, first) if multiline else None
    else:
        multiline, child = True, None
    if child is None or not child.startswith(parent) or child == parent:
        child = parent + ("\t" if parent.startswith("\t") else "  ")
    unit = child[len(parent):] if multiline else None
    if existing:
        _, key_start, value = existing
        indent = _indent(text, key_start) if multiline else ""
        return text[:value.start] + render(data, indent, unit, nl) + text[value.end:]
    member = json.dumps(key, ensure_ascii=False) + ": " + render(data, child, unit, nl)
    if not obj.members:
        close = obj.end - 1
        at = close
        while at > obj.start + 1 and text[at - 1] in " \t":
            at -= 1
        if text[at - 1] == "\n":  # the closing brace on a line of its own: the member goes above it
            return text[:at] + child + member + nl + text[at:]
        return text[:close] + nl + child + member + nl + parent + text[close:]
    last = obj.members[-1][2]
    comma = _comma_after(text, last.end)
    after = comma + 1 if comma is not None else last.end
    if not multiline:
        return (text[:after] + " " + member + "," + text[after:]) if comma is not None else \
            (text[:last.end] + ", " + member + text[last.end:])
    rest = text[after:_line_end(text, after)].strip()
    if rest and not rest.startswith("//"):  # something else on the line (a closing brace): go right after it
        end = after
    else:
        end = _line_end(text, after)
    added = nl + child + member + ("," if comma is not None else "")
    if comma is None:
        return text[:last.end] + "," + text[last.end:end] + added + text[end:]
    return text[:end] + added + text[end:]


def drop(text, obj, key):
    """The text without the member `key` of `obj` (unchanged when there is none): its lines, or on a line
    shared with others just its text, and the comma that separated it; every other byte kept."""
    existing = obj.member(key)
    if not existing:
        return text
    index = next(i for i, m in enumerate(obj.members) if m[0] == key)
    _, start, value = existing
    end = value.end
    comma = _comma_after(text, end)
    if comma is not None:
        end = comma + 1
        if _alone_on_line(text, start, end):
            line_end = _line_end(text, end)
            return text[:_line_start(text, start)] + text[line_end + len(_newline(text)):] if line_end < len(text) \
                else text[:_line_start(text, start)]
        while end < len(text) and text[end] in " \t":
            end += 1
        return text[:start] + text[end:]
    if index:  # the last member: the comma before it goes
        previous = _comma_after(text, obj.members[index - 1][2].end)
        if previous is None:
            raise ValueError(f'cannot find the comma before "{key}"')
        if _alone_on_line(text, start, end):
            start = _line_start(text, start)
            start -= 2 if text[start - 2:start] == "\r\n" else 1
            end = _line_end(text, end)
            return text[:previous] + text[previous + 1:start] + text[end:]
        return text[:previous] + text[end:]
    if _alone_on_line(text, start, end):
        rest = text[_line_end(text, end):]
        nl = _newline(text)
        return text[:_line_start(text, start)] + (rest[len(nl):] if rest.startswith(nl) else rest)
    return text[:start] + text[end:]
