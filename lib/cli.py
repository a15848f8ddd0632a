"""What every tool's main() shares: argument parsing, error mapping, JSON Lines in and out."""

import os
import sys

from . import fastjson
from .errors import BadInput, NexusError, UsageError


def parse(doc, argv, options_first=False):
    """docopt-ng on `doc`; usage errors go to stderr with exit 2, --help to stdout with exit 0."""
    import contextlib

    from docopt import DocoptExit, docopt

    try:
        with contextlib.redirect_stdout(sys.stderr):  # docopt prints its "NB: Corrected" notes on stdout
            args = docopt(doc, argv=argv, default_help=False, options_first=options_first)
    except DocoptExit as e:
        print(str(e.code), file=sys.stderr)
        raise SystemExit(2) from None
    if args.get("--help"):
        sys.stdout.write(doc.strip("\n") + "\n")
        raise SystemExit(0)
    return args


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


def invoked_as(prog):
    """The name the user typed: `nexus` for `nexus skill run`, else the tool's own name."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name.startswith("nexus") else prog


def warn(prog, message):
    print(f"{invoked_as(prog)}: {message}", file=sys.stderr)


def run(prog, body, argv):
    """Call body(argv) and map what it raises to a message and an exit code."""
    try:
        code = body(sys.argv[1:] if argv is None else list(argv))
        sys.stdout.flush()
        return code or 0
    except NexusError as e:
        if os.environ.get("NEXUS_DEBUG") == "1":
            raise
        warn(prog, str(e))
        return e.exit_code
    except BrokenPipeError:
        # The reader went away (`nexus ... | head`): stay quiet, as the Python docs recommend.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        return 130
    except OSError as e:  # a file nexus must write or read failed: one line, not a traceback
        if os.environ.get("NEXUS_DEBUG") == "1":
            raise
        warn(prog, f"{e.filename}: {e.strerror}" if e.filename else str(e))
        return 1


def command(prog):
    """Turn body(argv) into a main(argv=None) -> int that maps errors to exit codes."""

    def wrap(body):
        def main(argv=None):
            return run(prog, body, argv)

        main.__doc__ = body.__doc__
        return main

    return wrap


def dumps(obj):
    return fastjson.dumps(obj)


def write_jsonl(records, stream=None):
    stream = stream or sys.stdout
    for record in records:
        stream.write(dumps(record) + "\n")


def piped_stdin(what="JSON Lines"):
    """sys.stdin when something is piped in; BadInput when it is a terminal or closed: never hang."""
    if sys.stdin is None or sys.stdin.closed or sys.stdin.isatty():
        raise BadInput(f"stdin is a terminal or closed: pipe {what} into this command (see --help)")
    return sys.stdin


def read_jsonl(stream, label="stdin"):
    """Dicts from a JSON Lines stream; BadInput naming the line of the first bad one."""
    import jsonlines

    reader = jsonlines.Reader(stream)
    try:
        yield from reader.iter(type=dict, skip_empty=True)
    except jsonlines.InvalidLineError as e:
        raise BadInput(f"{label}:{e.lineno}: not a JSON object: {e.line[:80]!r}") from None
