"""The one output layer: a command returns data, and this writes it as its output kind says.

A porcelain command's --json prints one JSON document (an array or an object); a plumbing tool
prints JSON Lines, one object per record, so that it can stream; human text is the command's own
renderer's, the same on a terminal and in a pipe but for colour and box characters. Human text and
messages pass through style.terminal on their way out: text from a skill, a log, the config or the
environment never drives the terminal. JSON keeps the exact text.
"""

import sys

from .. import fastjson
from ..errors import BadInput

DOCUMENT, STREAM, TEXT, PROCESS = "document", "stream", "text", "process"
KINDS = {  # a command's output kind, in the command table
    DOCUMENT: "data: human text, or one JSON document with --json",
    STREAM: "records: JSON Lines, one object per record (plumbing)",
    TEXT: "text another program reads (a prompt block, a rules file)",
    PROCESS: "the command writes its own output (a tool's), and returns an exit status",
}


class Encoded:
    """A document that is JSON text already (bytes), written as it is with --json: for a command whose
    data is mostly JSON it read, so that it is neither parsed nor encoded again."""

    def __init__(self, data):
        self.data = data


def emit(output, result, function, ctx):
    """Write `result`, what function(ctx) returned, as `output` (a kind of nexus.cli.command)."""
    out = sys.stdout
    if output == PROCESS:
        ctx.status = result or 0
    elif output == STREAM:
        write_jsonl(result or (), out)
    elif output == TEXT:
        out.write(result or "")
    elif ctx.json and isinstance(result, Encoded):
        buffer = getattr(out, "buffer", None)
        if buffer is None:
            out.write(result.data.decode() + "\n")
        else:
            out.flush()
            buffer.write(result.data + b"\n")
    elif ctx.json:
        out.write(dumps(result if isinstance(result, (dict, list)) else list(result)) + "\n")
    else:
        modes = getattr(function, "modes", {})
        render = next((modes[flag] for flag in modes if ctx.args.get(flag)), function.render)
        render(result, Shown(out))


class Shown:
    """A stream for human text: what is written is shown, never obeyed (style.terminal); the rest of
    the stream (isatty, flush, ...) is the stream's own."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        from ..style import terminal  # style only when human text is written: the gateway's way never is

        return self.stream.write(terminal(text))

    def __getattr__(self, name):
        return getattr(self.stream, name)


def say(prog, message):
    """A warning or an error on stderr, under the command's name: its hostile text shown, never obeyed."""
    from ..style import Progress, terminal  # style only when something is said: a gateway call that goes well never is

    Progress.pause()  # a progress line on stderr is wiped, not run into
    print(f"{prog}: {terminal(message)}", file=sys.stderr)


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
    import jsonlines  # it brings attrs (90 ms): only the plumbing that reads JSON Lines pays for it

    reader = jsonlines.Reader(stream)
    try:
        yield from reader.iter(type=dict, skip_empty=True)
    except jsonlines.InvalidLineError as e:
        raise BadInput(f"{label}:{e.lineno}: not a JSON object: {e.line[:80]!r}") from None
