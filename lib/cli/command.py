"""What every command shares: argument parsing from its record (nexus.cli.records), the Context, and the
one layer that calls a command, renders what it returns and maps errors to exit codes.

A command is a function taking a Context and returning data; its output kind says how the data is
written (see nexus.cli.output). Its record in the command table (tools/commands.py) says its usage and
options; its docstring says what it does, for --help and the man page.
"""

import gc
import os
import sys

from .. import config as configlib, fastjson, paths
from ..errors import NexusError, UsageError
from . import output, records
from .records import PORCELAIN


def renders(render, modes=None):
    """`@renders(render, {"--flag": other, ...})`: render(data, out) writes a DOCUMENT command's data as
    human text; when an option of `modes` was given, the first such one's renderer does instead, so that
    no renderer guesses the mode from the shape of the data."""

    def mark(function):
        function.render, function.modes = render, dict(modes or {})
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

    def note(self, message):
        """A line on stderr as it is: what the command is doing ("Verifying skill 'x'...")."""
        print(message, file=sys.stderr)


def parse(command, argv, prog=None):
    """The arguments of argv (what follows the command's words) as docopt-ng reads the record's usage
    text, each option's value converted by its type; UsageError saying what does not fit, then the
    usage; or Help. The common forms, a usage line's words with some of its flags, and a command with a
    parser of its own (the gateway) are answered without importing docopt."""
    words = command.words.split() if command.category == PORCELAIN else []
    if command.parser:
        return convert(command, command.parser(command, argv), prog)
    options = argv[:argv.index("--")] if "--" in argv else argv
    if "-h" in options or "--help" in options:
        raise Help()
    args = quick_parse(command, [*words, *argv])
    if args is None:
        import contextlib  # docopt and what it needs: only for the forms quick_parse leaves to it

        from docopt import DocoptExit, docopt

        try:
            with contextlib.redirect_stdout(sys.stderr):  # docopt prints its "NB: Corrected" notes on stdout
                args = dict(docopt(command.doc(prog), argv=[*words, *argv], default_help=False))
        except DocoptExit:
            raise usage_error(command, misfit(command, argv), prog) from None
    return convert(command, args, prog)


def usage_error(command, problem, prog=None):
    """A UsageError: the problem (after the command's words, for a porcelain one), then the usage."""
    where = f"{command.words}: " if command.category == PORCELAIN else ""
    return UsageError(f"{where}{problem}\n{command.synopsis(prog)}")


def convert(command, args, prog=None):
    """args with each option's and argument's value read by its type (a repeated one's, each); a bad
    one is a UsageError in the one style, then the usage."""
    try:
        for name, kind in [(o.flag, o.type) for o in command.options if o.value] + list(command.arguments.items()):
            value = args.get(name)
            if isinstance(value, list):
                args[name] = [kind.convert(v, name) for v in value]
            elif value is not None:
                args[name] = kind.convert(value, name)
    except UsageError as e:
        raise usage_error(command, e, prog) from None
    return args


def misfit(command, argv):
    """What is wrong with argv, in the user's words: an unknown option (and the one meant), an option
    without its value, a missing argument or option, or one too many."""
    known = [f for o in command.options for f in (o.flag, o.short) if f]
    takes_value = {f for o in command.options if o.value for f in (o.flag, o.short) if f}
    words = argv[:argv.index("--")] if "--" in argv else argv
    for i, word in enumerate(words):
        flag = word.partition("=")[0]
        if word.startswith("-") and word != "-" and flag not in known:
            return f"unknown option {flag}{meant(flag, known)}"
        if flag in takes_value and "=" not in word and (i + 1 == len(words) or words[i + 1].startswith("--")):
            return f"{flag} needs a value"
    given = [w for i, w in enumerate(words) if not w.startswith("-") and not (i and words[i - 1] in takes_value)]
    required = [t for t in _required(command.usage[0]) if t not in command.words.split()]
    arguments = [t.removesuffix("...") for t in required if _is_argument(t.removesuffix("..."))]
    if len(given) < len(arguments):
        return f"missing {arguments[len(given)]}"
    flags = [t for t in required if t.startswith("-") and t not in words]
    if flags and not given:
        return f"missing {flags[0]}"
    return f"unexpected {given[-1]!r}" if given else "these options do not go together"


def meant(typed, known):
    """' (did you mean --timeout?)' for a flag close to one that exists, else ''."""
    import difflib  # an error's hint: never on the way of a command that parses

    close = difflib.get_close_matches(typed, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _required(line):
    """The tokens of a usage line outside [...] and (...|...): what every argv of the line has."""
    depth, found = 0, []
    for token in _tokens(f"prog {line}"):
        depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(token, 0)
        if depth == 0 and token not in MARKS:
            found.append(token)
    return found


def quick_parse(command, argv):
    """docopt's answer when argv is one usage line's words and required arguments with some of its
    flags (no option values, no optional arguments), read from the record alone; None for anything
    else, which docopt reads. tests/test_architecture.py holds it to docopt's answer for every such
    argv of every command."""
    options = _options(command)
    if any(a.startswith("-") and (not a.startswith("--") or "=" in a) for a in argv):
        return None
    args = {key: default for key, default, _ in options.values()}
    lines = [_tokens(line) for line in command.usage_lines()]
    for tokens in lines:
        for i, token in enumerate(tokens):
            repeated = tokens[i + 1:i + 2] == ["..."]
            if token in ("[options]", "--") or (token == "]" or token.startswith("-")) and repeated:
                return None  # docopt's shortcuts, and repeated options
            if token.startswith("-") and token not in options:
                return None  # an option the record does not have
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


def _options(command):
    """{flag: (key, default, takes a value)} of the record's options (-h and --help both have the key
    --help), with the default as docopt gives it."""
    found = {}
    for option in command.options:
        default = (str(option.default) if option.default is not None else None) if option.value else False
        for flag in (option.flag, option.short):
            if flag:
                found[flag] = (option.flag, default, bool(option.value))
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


def options_first(command, argv):
    """The gateway's parse, as docopt reads its usage (NAME, then its options, then the tool's arguments
    after `--` or from the first word that is not an option), read from the record by hand: docopt costs
    more to import than the whole gateway may spend. tests/test_architecture.py holds both to the same
    answer."""
    parts = [(o, *o.parts()) for o in command.options]  # (option, flag, short, value), each read once
    options = {f: o for o, flag, short, _ in parts for f in (flag, short) if f}
    args = {flag: ([] if o.repeat else None if value else False) for o, flag, _, value in parts}
    name = next(iter(command.arguments))
    args.update({name: None, "ARGS": [], "--": False})
    i = 0
    while i < len(argv):
        word = argv[i]
        flag, equals, value = word.partition("=")
        option = options.get(flag) if word.startswith("--") else None
        if word == "--":
            args["--"], args["ARGS"] = True, argv[i + 1:]
            break
        if word in ("-h", "--help"):
            raise Help()
        if option is not None and option.value:
            if not equals:
                i += 1
                if i == len(argv):
                    raise UsageError(f"{option.flag} needs a value\n{command.synopsis()}")
                value = argv[i]
            if option.repeat:
                args[option.flag].append(value)
            else:
                args[option.flag] = value
        elif option is not None and not equals:
            args[option.flag] = True
        elif word.startswith("-") and word != "-":
            raise UsageError(f"unknown option {flag!r}{meant(flag, list(options))}"
                             f" (pass the tool's options after '--')\n{command.synopsis()}")
        elif args[name] is None:
            args[name] = word
        else:
            args["ARGS"] = argv[i:]
            break
        i += 1
    if args[name] is None:
        raise UsageError(f"which skill? a {name} is required\n{command.synopsis()}")
    return args


class Help(Exception):
    """--help was asked for: the layer prints the command's usage and exits 0."""


NUMBERS = (records.number(), records.number(zero=True))


def number(value, option, zero=False):
    """A positive (or, with zero, non-negative) finite number, given as `option`; UsageError otherwise."""
    return NUMBERS[zero].convert(value, option)


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


def prepared(prog, argv, prepare):
    """(prepare(argv), None): the words a tool takes before anything else (catalog.scope.take_option's
    --profile), or (None, the exit status) once stderr says why not."""
    try:
        return prepare(argv), None
    except NexusError as e:
        output.say(prog, str(e))
        return None, e.exit_code


def leave(status):
    """`status`, for a console script's sys.exit; or, when this process is the script's own and nothing waits
    for its end (its standard streams in place, which a harness running the script inside its own process
    swaps; nothing registered to run at exit; no other thread), exit with it at once once stdout and stderr
    are flushed: Python's teardown of the modules a command loaded is about a sixth of what nexus adds to a
    gateway call (tests/bench/bench_run.py). Only for commands that leave no file object to be flushed at exit."""
    import atexit  # built in: nothing to load

    if (sys.stdout is not sys.__stdout__ or sys.stderr is not sys.__stderr__ or atexit._ncallbacks()
            or "threading" in sys.modules and sys.modules["threading"].active_count() > 1):
        return status
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return status  # the normal end says what went wrong (a reader gone, a stream closed)
    os._exit(status)


def call(command, argv, prog=None):
    """Run a row of the command table on argv (what follows its words): parse, prepare what it needs,
    call its function with the Context, write what it returns as its output kind says, and map errors
    to exit codes. `prog` names the program in messages: `nexus` for a porcelain command, else the
    tool's own name."""
    prog = prog or command.prog
    if not streams_ready(prog):
        return 2
    ctx = None
    try:
        args = parse(command, argv)
        ctx = Context(prog, args)
        watched = command.output == output.DOCUMENT and not ctx.json and sys.stdout.isatty() and sys.stderr.isatty()
        if watched or "nexus.style" in sys.modules:
            from .. import style  # a person is watching: long work may say how far it got

            style.Progress.allowed = watched
        upgraded()
        for need in command.needs:
            need(ctx)
        function = command.function()
        if not gc.isenabled():
            # A console script (tools/bin/) turned the collector off while the command's modules loaded:
            # thousands of objects that live until exit, which it would traverse again and again for
            # nothing. Frozen, they are never traversed again, not even at exit: together about a sixth of
            # what `nexus skill run` costs (tests/bench/bench_run.py).
            gc.freeze()
            gc.enable()
        output.emit(command.output, function(ctx), function, ctx)
        sys.stdout.flush()
        return ctx.status
    except Help:
        sys.stdout.write(command.help())
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
    try:
        with open(paths.upgrades_file(), "rb") as f:
            kept = fastjson.loads(f.read())
        stamp = paths.upgrade_steps_stamp(kept["done"])
        if stamp is not None and kept["through"] == stamp:
            return  # every step done: the steps' module is not even loaded
    except (OSError, ValueError, TypeError, KeyError):
        pass
    from .. import upgrade  # a step to do, or the stamp to take: rarely

    try:
        upgrade.run(lambda text: print(text, file=sys.stderr))
    except OSError:
        if os.environ.get("NEXUS_DEBUG") == "1":
            raise
