"""What every command shares: the command table's row, argument parsing, and the one layer that calls a
command, renders what it returns and maps errors to exit codes.

A command is a function taking a Context and returning data; its output kind says how the data is
written (see nexus.cli.output). Its docstring is its usage (docopt), so help, man pages and
completions are generated from the same text.
"""

import os
import sys

from .. import config as configlib
from ..errors import NexusError, UsageError
from . import output
from .output import DOCUMENT, PROCESS, STREAM, TEXT  # noqa: F401 - the output kinds, for the command table


class Command:
    """A row of the command table: the words that name a command, the function that runs it
    ("module:function" under nexus.tools.porcelain, or a whole module path), its output kind and a
    one-line summary."""

    __slots__ = ("words", "target", "output", "summary")

    def __init__(self, words, target, output, summary):
        self.words, self.target, self.output, self.summary = words, target, output, summary

    def function(self):
        module, name = self.target.split(":")
        module = module if module.startswith("nexus.") else f"nexus.tools.porcelain.{module}"
        return getattr(__import__(module, fromlist=[name]), name)

    def usage(self):
        return usage_of(self.function())

    def main(self, argv):
        return call(self.function(), argv, self.output, "nexus", title=f"nexus {self.words}: {self.summary}",
                    words=self.words.split())


def usage_of(function):
    """A function's docstring as a usage text: its indentation removed."""
    lines = (function.__doc__ or "").expandtabs().split("\n")
    indent = min((len(line) - len(line.lstrip()) for line in lines[1:] if line.strip()), default=0)
    return "\n".join([lines[0].strip()] + [line[indent:] for line in lines[1:]]).strip("\n") + "\n"


def renders(render):
    """`@renders(render)`: render(data, out) writes a DOCUMENT command's data as human text."""

    def mark(function):
        function.render = render
        return function

    return mark


def parses(parser):
    """`@parses(parser)`: parser(argv, usage) -> args replaces docopt for a command on a hot path."""

    def mark(function):
        function.parser = parser
        return function

    return mark


class Context:
    """What the layer prepares for a command: its arguments, the config (read once, when first asked
    for), warnings on stderr under the command's name, and the exit status."""

    def __init__(self, prog, args):
        self.prog, self.args, self.status = prog, args, 0
        self._config = None

    @property
    def config(self):
        if self._config is None:
            self._config = configlib.load()
        return self._config

    @property
    def json(self):
        return bool(self.args.get("--json"))

    def warn(self, message):
        output.say(self.prog, message)


def parse(doc, argv, words=()):
    """docopt-ng on `doc` (argv begins with the command's `words`); UsageError saying what does not fit,
    then the usage, or Help. The common forms, a usage line's words with some of its flags, are answered
    without importing docopt."""
    options = argv[:argv.index("--")] if "--" in argv else argv
    if "-h" in options or "--help" in options:
        raise Help()
    args = quick_parse(doc, argv)
    if args is not None:
        return args
    import contextlib

    from docopt import DocoptExit, docopt

    try:
        with contextlib.redirect_stdout(sys.stderr):  # docopt prints its "NB: Corrected" notes on stdout
            return docopt(doc, argv=argv, default_help=False)
    except DocoptExit:
        command = " ".join(words)
        raise UsageError((f"{command}: " if command else "") + misfit(doc, argv[len(words):]) + "\n"
                         + synopsis(doc)) from None


def synopsis(doc):
    """The usage lines of a doc, as `usage: ...` lines, without the --help one."""
    lines = [line.strip() for line in doc.partition("Usage:\n")[2].split("\n\n")[0].splitlines() if line.strip()]
    return "\n".join(("usage: " if i == 0 else "       ") + line
                     for i, line in enumerate(line for line in lines if not line.endswith("(-h | --help)")))


def misfit(doc, argv):
    """What is wrong with argv, in the user's words: an unknown option, an option without its value, a
    missing argument, or one too many."""
    import re

    usage, _, rest = doc.partition("Usage:\n")[2].partition("\n\n")
    known = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", usage + rest))
    takes_value = set(re.findall(r"^\s*(?:-\w,? )?(--[\w-]+)[ =][A-Z]", rest, re.M))
    words = argv[:argv.index("--")] if "--" in argv else argv
    for i, word in enumerate(words):
        flag = word.partition("=")[0]
        if word.startswith("-") and word != "-" and flag not in known:
            return f"unknown option {flag}"
        if flag in takes_value and "=" not in word and (i + 1 == len(words) or words[i + 1].startswith("--")):
            return f"{flag} needs a value"
    given = [w for i, w in enumerate(words) if not w.startswith("-") and not (i and words[i - 1] in takes_value)]
    first = [line for line in usage.splitlines() if line.strip()][0]
    required = [w for w in re.findall(r"\b[A-Z][A-Z_]*\b", re.sub(r"\[[^\]]*\]", "", first))]
    if len(given) < len(required):
        return f"missing {required[len(given)]}"
    return f"unexpected {given[-1]!r}" if given else "these options do not go together"


def quick_parse(doc, argv):
    """docopt's answer when argv is one usage line's words and required arguments with some of its
    flags (no option values, no optional arguments), read from the usage text alone; None for anything
    else, which docopt reads. tests/test_architecture.py holds it to docopt's answer for every such
    argv of every command, so that the usage text stays the one source."""
    options = _options(doc)
    if options is None or any(a.startswith("-") and (not a.startswith("--") or "=" in a) for a in argv):
        return None
    args = {key: default for key, default, _ in options.values()}
    lines = [_tokens(line) for line in doc.partition("Usage:")[2].split("\n\n")[0].strip().splitlines()]
    for tokens in lines:
        for i, token in enumerate(tokens):
            repeated = tokens[i + 1:i + 2] == ["..."]
            if token in ("[options]", "--") or (token == "]" or token.startswith("-")) and repeated:
                return None  # docopt's shortcuts, and repeated options
            if token.startswith("-") and token not in options:
                return None  # an option the Options section does not describe
            if i and tokens[i - 1] in options and options[tokens[i - 1]][2]:
                continue  # an option's value
            if _is_argument(token):
                args[token] = [] if repeated else None
            elif not token.startswith("-") and token not in MARKS:
                args[token] = False
    for tokens in lines:
        found = _fit(tokens, argv, options)
        if found is not None:
            return {**args, **found}
    return None


MARKS = ("[", "]", "(", ")", "|", "...")


def _options(doc):
    """{flag: (key, default, takes a value)} of the Options section (-h and --help both have the key
    --help); None when a line is beyond this reading."""
    found, lines = {}, doc.partition("Options:")[2].split("\n\n")[0].splitlines()
    for n, line in enumerate(lines):
        names, _, description = line.strip().partition("  ")
        if not names.startswith("-"):
            continue
        for more in lines[n + 1:]:  # the description goes on until the next option
            if more.strip().startswith("-"):
                break
            description += "\n" + more
        words = names.replace(",", " ").replace("=", " ").split()
        flags = [w for w in words if w.startswith("-")]
        longs = [f for f in flags if f.startswith("--")]
        if len(longs) != 1 or len(words) - len(flags) > 1:
            return None
        value = len(words) > len(flags)
        default = None
        for text in description.splitlines():
            if "[default: " in text and "]" in text.partition("[default: ")[2]:
                default = text.partition("[default: ")[2].rpartition("]")[0]
                break
        for flag in flags:
            found[flag] = (longs[0], default if value else False, value)
    return found


def _tokens(line):
    for mark in "[]()|":
        line = line.replace(mark, f" {mark} ")
    return line.replace("...", " ... ").split()[1:]  # without the program's name


def _is_argument(token):
    return token.isupper() or token.startswith("<") and token.endswith(">")


def _fit(tokens, argv, options):
    """{key: value} when argv is this line's words and required arguments with some of its flags,
    one at most of each optional group; None otherwise."""
    positional, required, groups, i = [], [], [], 0
    while i < len(tokens):
        token = tokens[i]
        if token == "[":
            end = tokens.index("]", i)
            inner = tokens[i + 1:end]
            if len(inner) == 2 and inner[0].startswith("-") and options[inner[0]][2] and _is_argument(inner[1]):
                pass  # an option and its value, not given
            elif len(inner) in (1, 2) and _is_argument(inner[0]) and inner[1:] in ([], ["..."]):
                pass  # an optional argument, not given
            elif all(t.startswith("--") and not options[t][2] for t in inner[::2]) and set(inner[1::2]) <= {"|"}:
                groups.append(inner[::2])
            else:
                return None
            i = end + 1
            continue
        if token in MARKS or token.startswith("-") and (not token.startswith("--") or options[token][2]):
            return None
        (required if token.startswith("--") else positional).append(token)
        i += 1
    words = [a for a in argv if not a.startswith("-")]
    flags = [a for a in argv if a.startswith("-")]
    if len(words) != len(positional) or len(set(flags)) != len(flags) or not set(required) <= set(flags):
        return None
    found = {}
    for name, word in zip(positional, words):
        if not _is_argument(name) and name != word:
            return None
        found[name] = word if _is_argument(name) else True
    for flag in flags:
        if flag not in required and sum(flag in group for group in groups) != 1:
            return None
        found[flag] = True
    if any(sum(flag in group for flag in flags) > 1 for group in groups):
        return None
    return found


class Help(Exception):
    """--help was asked for: the layer prints the command's usage and exits 0."""


MAX_NUMBER = 100_000_000  # seconds or hours: three years and more, and far from a float's limits


def number(value, option, zero=False):
    """A positive (or, with zero, non-negative) finite number from the command line; UsageError otherwise."""
    try:
        result = float(value)
    except (TypeError, ValueError):
        result = float("nan")
    if not (0 <= result <= MAX_NUMBER and (zero or result > 0)):
        raise UsageError(f"{option} needs a number {'from 0' if zero else 'above 0'} up to {MAX_NUMBER:,}, not {value!r}")
    return result


def streams_ready(prog):
    """False (said on stderr) when stdout is closed; else make stdout and stderr write a byte that was
    not UTF-8 (a surrogate escape, as in a file name or argv) as \\udcXX instead of failing on it."""
    if sys.stdout is None:
        if sys.stderr is not None:
            print(f"{prog}: stdout is closed: give it somewhere to write (>/dev/null to discard)", file=sys.stderr)
        return False
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    return True


def quiet_stdout():
    """The reader of stdout went away (`nexus ... | head`): write nothing more, as the Python docs advise."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def call(function, argv, kind, prog, title=None, doc=None, words=()):
    """Parse `argv` (what follows the command's `words`), call function(ctx), write what it returns as
    `kind` says, and map errors to exit codes."""
    if not streams_ready(prog):
        return 2
    ctx = None
    try:
        doc = usage_of(function) if doc is None else doc
        parser = getattr(function, "parser", None)
        args = parser(argv, doc) if parser else parse(doc, [*words, *argv], words)
        ctx = Context(prog, args)
        watched = kind == output.DOCUMENT and not ctx.json and sys.stdout.isatty() and sys.stderr.isatty()
        if watched or "nexus.style" in sys.modules:
            from .. import style  # a person is watching: long work may say how far it got

            style.Progress.allowed = watched
        upgraded()
        output.emit(kind, function(ctx), function, ctx)
        sys.stdout.flush()
        return ctx.status
    except Help:
        sys.stdout.write((f"{title}\n\n" if title else "") + doc.strip("\n") + "\n")
        return 0
    except NexusError as e:
        if os.environ.get("NEXUS_DEBUG") == "1":
            raise
        output.say(prog, str(e))
        return e.exit_code
    except BrokenPipeError:  # not a failure: the reader has what it wanted
        quiet_stdout()
        return ctx.status if ctx else 0
    except KeyboardInterrupt:
        return 130
    except OSError as e:  # a file nexus must write or read failed: one line, not a traceback
        if os.environ.get("NEXUS_DEBUG") == "1":
            raise
        output.say(prog, f"{e.filename}: {e.strerror}" if e.filename else str(e))
        return 1


def upgraded():
    """Do and say once what an upgrade changes (nexus.upgrade), before the first command after it. A
    home nexus cannot write to leaves it to a later command, quietly: it never stops this one."""
    from .. import upgrade

    try:
        upgrade.run(lambda text: print(text, file=sys.stderr))
    except OSError:
        if os.environ.get("NEXUS_DEBUG") == "1":
            raise


def tool(prog, kind, doc, body):
    """A console script's main(argv=None) -> int: body(ctx) called through the layer, `doc` its usage."""

    def main(argv=None):
        return call(body, sys.argv[1:] if argv is None else list(argv), kind, prog, doc=doc)

    main.__doc__ = doc
    return main
