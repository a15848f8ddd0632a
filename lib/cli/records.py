"""The records the command table is made of (tools/commands.py holds the table): a Command, its Options
and the Types that read their values; and the usage text generated from a record, which docopt parses
and `--help` shows. ARCHITECTURE.md ("A command") says how to add a command or an option.
"""

from ..errors import UsageError

WIDTH = 80  # every line of --help fits an 80-column terminal
MAX_NUMBER = 100_000_000  # seconds or hours: three years and more, and far from a float's limits

PORCELAIN, PLUMBING = "porcelain", "plumbing"


class Type:
    """How the value of an option or argument is read: `read(text)` returns the value or raises
    ValueError; `needs` completes the one message for a bad value (`--days needs NEEDS, not 'x'`);
    `completes` says what a shell offers for it: skill, session, job, capability, key, file, dir, none,
    or "words W...". `words`, for a choice, is a tuple or "module:name" of a table whose keys are the
    words (read when first needed, so that the table's module is imported only then)."""

    __slots__ = ("name", "_needs", "read", "_completes", "_words")

    def __init__(self, name, needs, read=str, completes="none", words=None):
        self.name, self._needs, self.read, self._completes, self._words = name, needs, read, completes, words

    @property
    def needs(self):
        if self._needs is None:  # a choice: "xml or markdown", "a, b or c"
            words = self.words
            return " or ".join([", ".join(words[:-1]), words[-1]]) if len(words) > 1 else words[0]
        return self._needs

    @property
    def words(self):
        if isinstance(self._words, str):
            module, name = self._words.split(":")
            self._words = tuple(getattr(__import__(module, fromlist=[name]), name))
        return self._words

    @property
    def completes(self):
        return "words " + " ".join(self.words) if self._words is not None else self._completes

    def convert(self, text, flag):
        """The value of `text`, given as `flag`; UsageError in the one style for a bad value."""
        try:
            return self.read(text)
        except (TypeError, ValueError):
            raise UsageError(f"{flag} needs {self.needs}, not {text!r}") from None


def _whole(low, high):
    def read(text):
        if not (text.isdigit() and low <= int(text) <= high):
            raise ValueError(text)
        return int(text)

    return read


def whole(low, high, completes="none"):
    """A whole number from `low` to `high`."""
    return Type("whole", f"a whole number from {low} to {high:,}", _whole(low, high), completes)


def _number(zero):
    def read(text):
        value = float(text)
        if not (0 <= value <= MAX_NUMBER and (zero or value > 0)):  # also false for nan
            raise ValueError(text)
        return value

    return read


def number(zero=False):
    """A finite number above 0 (with zero: from 0) up to MAX_NUMBER: seconds or hours."""
    return Type("number", f"a number {'from 0' if zero else 'above 0'} up to {MAX_NUMBER:,}", _number(zero))


def choice(words):
    """One of a few words: a tuple, or "module:name" of the table whose keys they are."""
    def read(text):
        if text not in kind.words:
            raise ValueError(text)
        return text

    kind = Type("choice", None, read, words=words)
    return kind


STRING = Type("string", "a value")
SKILL = Type("skill", "a skill name", completes="skill")
SESSION = Type("session", "a session id", completes="session")
JOB = Type("job", "a job id", completes="job")
CAPABILITY = Type("capability", "a capability name", completes="capability")
KEY = Type("key", "a config key", completes="key")
FILE = Type("file", "a file", completes="file")
DIR = Type("dir", "a folder", completes="dir")
COMMAND = Type("command", "a command", completes="command")


class Option:
    """One option of a command: its term as the Options section shows it (`--days N`, `-o FILE`,
    `-h --help`: the flags, then the placeholder of its value when it takes one), its help (a sentence
    or a few; wrapped to fit), the Type that reads its value (STRING unless said), its default (shown,
    and given to docopt), and whether it may be repeated."""

    __slots__ = ("term", "help", "_type", "default", "repeat", "_parsed")

    def __init__(self, term, help, type=None, default=None, repeat=False):
        self.term, self.help, self._type, self.default, self.repeat = term, help, type, default, repeat
        self._parsed = None  # (flag, short, value), read from the term when first asked: most rows are never parsed

    def parts(self):
        """(flag, short flag or None, placeholder of its value or None)."""
        if self._parsed is None:
            words = self.term.split()
            flags = [w for w in words if w.startswith("-")]
            flag = next((f for f in flags if f.startswith("--")), flags[0])  # the key docopt gives it
            self._parsed = (flag, next((f for f in flags if f != flag), None),
                            words[-1] if len(words) > len(flags) else None)
        return self._parsed

    @property
    def flag(self):
        return self.parts()[0]

    @property
    def short(self):
        return self.parts()[1]

    @property
    def value(self):
        return self.parts()[2]

    @property
    def type(self):
        return self._type if self._type is not None or self.value is None else STRING

    @property
    def text(self):
        """The help, with docopt's `[default: X]`."""
        return self.help + (f" [default: {self.default}]" if self.default is not None else "")


HELP = Option("-h --help", "Show this help.")


class Command:
    """A row of the command table.

    words: the command's words (`skills list`), or a plumbing tool's name (`nexus-discover`);
    target: the function that runs it, "module:function", the module's whole dotted path (the table
    says where its commands live: the library names none of them); output: its output kind (nexus.cli.output); summary: one line;
    usage: its usage lines after the words, as docopt reads them (the `(-h | --help)` line is added);
    options: its Option records, in the order --help lists them (-h --help is added);
    arguments: {placeholder: Type} of its positional arguments;
    needs: what the layer prepares before calling it (functions of the Context, from the table);
    parser: a function(command, argv) -> args that stands in for docopt on a hot path (else None);
    category: PORCELAIN (a `nexus` command) or PLUMBING (a `nexus-*` tool).
    """

    __slots__ = ("words", "target", "output", "summary", "usage", "options", "arguments", "needs", "parser",
                 "category")

    def __init__(self, words, target, output, summary, usage=("",), options=(), arguments=None, needs=(),
                 parser=None, category=PORCELAIN):
        self.words, self.target, self.output, self.summary = words, target, output, summary
        self.usage, self.options, self.arguments = tuple(usage), (*options, HELP), dict(arguments or {})
        self.needs, self.parser, self.category = tuple(needs), parser, category

    @property
    def prog(self):
        """What a person types: `nexus skills list`, `nexus-discover`."""
        return self.words if self.category == PLUMBING else f"nexus {self.words}"

    def function(self):
        module, name = self.target.split(":")
        return getattr(__import__(module, fromlist=[name]), name)

    def option(self, flag):
        """The Option named `flag` (long or short), or None."""
        return next((o for o in self.options if flag in (o.flag, o.short)), None)

    def usage_lines(self, prog=None):
        """The usage lines, `(-h | --help)` last."""
        prog = prog or self.prog
        return [f"{prog} {line}".rstrip() for line in self.usage] + [f"{prog} (-h | --help)"]

    def synopsis(self, prog=None):
        """The usage lines as a usage error ends: `usage: ...`, without the --help one."""
        lines = self.usage_lines(prog)[:-1]
        return "\n".join(("usage: " if i == 0 else "       ") + line for i, line in enumerate(lines))

    def doc(self, prog=None):
        """The Usage and Options sections: what docopt parses."""
        prog = prog or self.prog
        lines = ["Usage:", *(shown for line in self.usage_lines(prog) for shown in _usage(prog, line)), "", "Options:"]
        width = max(len(o.term) for o in self.options)
        for option in self.options:
            lines += definition(option.term, option.text, width, indent=2, value_safe=True)
        return "\n".join(lines) + "\n"

    def prose(self):
        """The function's docstring (what it does, exit status, examples), reflowed to fit; "" without one."""
        return reflow(dedent(self.function().__doc__ or ""))

    def help(self, prog=None):
        """What --help shows: the summary, Usage, Options, then the prose."""
        prose = self.prose()
        title = "\n".join(wrap(f"{prog or self.prog}: {self.summary}", WIDTH))
        return f"{title}\n\n{self.doc(prog)}" + (f"\n{prose}" if prose else "")


def _usage(prog, line):
    """A usage line as --help shows it: broken between its groups to fit WIDTH, the rest indented under
    the first argument (docopt reads a line that does not start with the program as going on)."""
    groups, depth, start, rest = [], 0, 0, line[len(prog) + 1:] + " "
    for i, char in enumerate(rest):
        depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(char, 0)
        if char == " " and depth == 0:
            groups += [rest[start:i]] if i > start else []
            start = i + 1
    lead = "  " + prog + " "
    lines, current = [], lead
    for group in groups:
        if current.strip() and current != lead and len(current) + len(group) > WIDTH:
            lines.append(current.rstrip())
            current = " " * len(lead)
        current += group + " "
    return lines + [current.rstrip()]


def dedent(text):
    """A docstring without its indentation (its first line has none)."""
    lines = text.expandtabs().split("\n")
    indent = min((len(line) - len(line.lstrip()) for line in lines[1:] if line.strip()), default=0)
    return "\n".join([lines[0].strip()] + [line[indent:] for line in lines[1:]]).strip("\n") + "\n"


def wrap(text, width):
    """Lines of at most `width` characters, broken between words (a longer word has a line of its own)."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([line] if line else [])


def definition(term, text, width, indent=2, value_safe=False):
    """`  term  text` lines, the text wrapped under itself to fit WIDTH. value_safe: no continuation line
    starts with '-', which docopt would read as another option."""
    lead = " " * indent + term.ljust(width) + "  "
    room = max(WIDTH - len(lead), 30)
    lines = [line.replace("\0", " ") for line in wrap(text.replace("[default: ", "[default:\0"), room)]  # one piece
    if value_safe:
        for i in range(1, len(lines)):
            while lines[i].startswith("-") and " " in lines[i - 1]:
                head, _, last = lines[i - 1].rpartition(" ")
                lines[i - 1], lines[i] = head, f"{last} {lines[i]}"
    if not lines:
        return [lead.rstrip()]
    return [lead + lines[0]] + [" " * len(lead) + line for line in lines[1:]]


def heading(line):
    """`Exit status:`, `Examples:`: a section's title, at the margin."""
    return line[:1].isupper() and line.endswith(":") and line[:-1].replace(" ", "").isalpha()


def reflow(text):
    """Text of --help fitted to WIDTH: a paragraph (lines at the margin) is wrapped; a definition
    (`  term  text`, its text going on in lines aligned under it) has its text wrapped under itself;
    any other indented line, and every line of Examples, is kept as it is."""
    out, paragraph, lines, section = [], [], text.rstrip("\n").split("\n"), None
    n = 0
    while n < len(lines):
        line = lines[n]
        n += 1
        if line.strip() and not line[0].isspace() and not heading(line):
            paragraph.append(line.strip())
            section = None
            continue
        out.extend(wrap(" ".join(paragraph), WIDTH))
        paragraph.clear()
        section = line if heading(line) else section
        indent = len(line) - len(line.lstrip())
        term, gap, text = line.strip().partition("  ")
        if not indent or not gap or section and section.startswith("Example"):  # an example stays as written
            out.append(line)
            continue
        start, first = indent + len(term) + len(gap) + len(text) - len(text.lstrip()), n - 1
        while n < len(lines) and lines[n].strip() and len(lines[n]) - len(lines[n].lstrip()) == start:
            text += " " + lines[n].strip()  # the definition goes on
            n += 1
        if all(len(kept) <= WIDTH for kept in lines[first:n]):
            out.extend(lines[first:n])  # as written: it fits
        else:
            out.extend(definition(term, text.strip(), start - indent - 2, indent))
    out.extend(wrap(" ".join(paragraph), WIDTH))
    return "\n".join(out).strip("\n") + "\n" if out else ""
