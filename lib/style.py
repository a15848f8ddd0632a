"""Human output: colour, emoji and box characters on a TTY only, never with NO_COLOR.

Colour also needs a terminal that takes escape codes (TERM is not "dumb"); emoji, box lines and bars
also need a UTF-8 locale, else they fall back to ASCII. NO_COLOR counts only when it is not empty, as
no-color.org asks.
"""

import os

from .schema import parse_iso

WIDTH = 63
COLORS = {"green": 32, "yellow": 33, "red": 31, "blue": 34, "dim": 2, "bold": 1}


def utf8_locale():
    """Whether the locale the user set is UTF-8 (Python itself runs UTF-8 under a C locale: it says nothing)."""
    value = os.environ.get("LC_ALL") or os.environ.get("LC_CTYPE") or os.environ.get("LANG") or ""
    return "utf8" in value.lower().replace("-", "")


def columns():
    """The terminal's width (COLUMNS first)."""
    import shutil  # at a terminal only: with what it loads (fnmatch, re), a tenth of a piped `nexus status`

    return shutil.get_terminal_size().columns


class Style:
    def __init__(self, stream):
        terminal = stream.isatty() and not os.environ.get("NO_COLOR")
        self.colors = terminal and os.environ.get("TERM") != "dumb"
        self.fancy = terminal and utf8_locale()
        self.columns = columns() if stream.isatty() else None  # piped: nothing is cut

    def color(self, text, name):
        return f"\033[{COLORS[name]}m{text}\033[0m" if self.colors else text

    def clip(self, line):
        """A line of free text cut to the terminal's width; whole in a pipe."""
        return clip(line, self.columns)

    def emoji(self, symbol):
        return f"{symbol} " if self.fancy and symbol else ""

    def rule(self, heavy=True):
        width = min(WIDTH, self.columns or WIDTH)  # a narrow terminal: the rule never wraps
        if not self.fancy:
            return ("=" if heavy else "-") * width
        return ("═" if heavy else "─") * width

    @property
    def dash(self):
        return "—" if self.fancy else "-"

    @property
    def bullet(self):
        return "•" if self.fancy else "-"

    def bar(self, count, largest, width=30):
        size = round(width * count / largest) if largest else 0
        return ("█" if self.fancy else "#") * size

    def header(self, title):
        return [self.rule(), self.color(title, "bold"), self.rule()]


# What a terminal obeys rather than shows: C0 and C1 controls, DEL, the bidi controls, the line and
# paragraph separators, and the bytes that were not UTF-8 (surrogate escapes, which are shown as bytes).
_NAMED = {0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r", 0x1B: "e"}
_FORMAT = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029)
_ESCAPES = {}


def visible(text, lines=False):
    """Text from a skill, a log, the config or the environment as a terminal should show it: every control
    character, bidi override and undecodable byte made visible as an escape (\\r, \\e, \\u202e, \\x9b),
    the way `less` and git do; `lines` keeps line breaks and tabs. JSON output never goes through this."""
    text = str(text)
    if text.isprintable() or (lines and text.replace("\n", "").replace("\t", "").isprintable()):
        return text  # nearly always: nothing to do
    if not _ESCAPES:
        table = {c: "\\" + _NAMED.get(c, f"x{c:02x}") for c in (*range(0x20), *range(0x7F, 0xA0))}
        table.update({c: f"\\u{c:04x}" for c in _FORMAT})
        table.update({0xDC00 + b: f"\\x{b:02x}" for b in range(0x80, 0x100)})
        _ESCAPES[False] = table
        _ESCAPES[True] = {c: e for c, e in table.items() if c not in (0x09, 0x0A)}
    return text.translate(_ESCAPES[bool(lines)])


_OWN_CODES = tuple(f"[{n}m" for n in (*COLORS.values(), 0))  # the escape codes Style.color writes


def terminal(text, lines=True):
    """A whole rendering (or a message, or a table's cell) on its way to a terminal or a pipe: `visible`,
    but for the colour codes Style.color wrote. Every human rendering passes through it (cli.output), so
    a field that a renderer forgot still cannot move the cursor, erase a line or reorder text."""
    first, *rest = str(text).split("\033")
    shown = [visible(first, lines)]
    for piece in rest:
        own = next((code for code in _OWN_CODES if piece.startswith(code)), "")
        shown.append(("\033" + own if own else "\\e") + visible(piece[len(own):], lines))
    return "".join(shown)


def shell_word(word):
    """One word as a POSIX shell must be given it: shlex.quote, or $'...' with its control characters as
    escapes (\\r, \\e) when it holds any, so what is shown is both exact and visible."""
    import shlex  # it brings `re`: only for a command line shown to a person

    if visible(word) == word:
        return shlex.quote(word)
    return "$'" + visible(word.replace("\\", "\\\\").replace("'", "\\'")) + "'"


def shell_line(argv):
    """An argument vector as one command line a person can read and a shell would run as it is."""
    return " ".join(shell_word(word) for word in argv)


class Progress:
    """Long work said as it goes ('reading skills: 1,200'), one line on stderr rewritten in place and
    wiped at the end: only for a person at a terminal (`allowed`, which the output layer sets for a
    human rendering while stdout and stderr are both terminals, as gh does: never in a pipe, never
    with --json), and only once the work is long: after DELAY seconds, or at once with `now`. `show`
    says a step that blocks (a clone, a verification) before it starts. The line is cut to the
    terminal's width, so that it never wraps; with NO_COLOR, or a terminal that takes no escape codes,
    it is rewritten and wiped with spaces alone."""

    allowed = False
    DELAY = 0.5
    on_screen = None  # the Progress whose line is shown: a message wipes it first (`pause`)

    def __init__(self, what, total=None, now=False, size=False):
        import time  # long work only: style is imported by every renderer, which needs no clock

        self.what, self.total, self.count, self.clock, self.size = what, total, 0, time.monotonic, size
        self.started = self.clock() - (self.DELAY if now else 0)
        self.last, self.shown = None, 0  # when the line was last written, and how wide (0: not shown)

    def step(self, n=1):
        self.count += n
        if not self.allowed:
            return
        moment = self.clock()
        if moment - self.started >= self.DELAY and (self.last is None or moment - self.last >= 0.1):
            self.last = moment
            total = f" of {self._amount(self.total)}" if self.total else ""
            self._write(f"{self.what}: {self._amount(self.count)}{total}")

    def show(self, what=None):
        """Say `what` (else the work's name) at once: a step that blocks until it is done."""
        if self.allowed:
            self.what = what or self.what
            self._write(f"{self.what}...")

    def _amount(self, n):
        return f"{n / 1048576:,.1f} MB" if self.size else f"{n:,}"

    def _write(self, text):
        import sys  # as in __init__: only when progress is shown

        line = clip(text, max(columns() - 1, 10))  # the cursor stays on this row
        width, before = cells(line), Progress.on_screen.shown if Progress.on_screen else 0  # this one's or another's
        sys.stderr.write(f"\r{line}" + (" " * max(before - width, 0) if _plain() else "\033[K"))
        sys.stderr.flush()
        self.shown, Progress.on_screen = width, self

    @classmethod
    def pause(cls):
        """Wipe the line shown, so that a message written now stands alone; the next step writes it again."""
        if cls.on_screen is not None:
            cls.on_screen.close()

    def close(self):
        if self.shown:
            import sys  # as in __init__

            sys.stderr.write("\r" + " " * self.shown + "\r" if _plain() else "\r\033[K")
            sys.stderr.flush()
            self.shown, Progress.on_screen = 0, None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def ask(question, default=False):
    """The yes or no of the person at the terminal to `question` (asked on stderr, after wiping a
    progress line; an empty answer is `default`), or None when stdin is no terminal to ask."""
    import sys  # as in Progress

    if sys.stdin is None or sys.stdin.closed or not sys.stdin.isatty():
        return None
    Progress.pause()  # the question stands alone, not after "adding skills: 3 of 40"
    sys.stderr.write(terminal(question, lines=False))  # it quotes a skill's words: shown, never obeyed
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes") or (default and answer == "")


def _plain():
    """No escape codes on stderr: NO_COLOR asks for none, a dumb terminal would show them."""
    return bool(os.environ.get("NO_COLOR")) or os.environ.get("TERM") == "dumb"


def plural(count, noun):
    """'1 skill', '3 skills', '1,200 calls': a count is written with thousands separators, on every screen."""
    return f"{count:,} {noun}{'s' if count != 1 else ''}"


def one_line(text):
    """The text with its lines and runs of white space folded into single spaces."""
    return " ".join(str(text).split())


def truncate(text, width):
    text = one_line(text)
    return text if width is None or len(text) <= width else text[: width - 3].rstrip() + "..."


def last_line(text):
    """The last line of a text that holds something: where a tool's stderr says what went wrong."""
    lines = [line for line in str(text).splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def cells(text):
    """How many terminal columns a text takes: a wide character (an emoji, CJK) two, a combining mark none."""
    if text.isascii():
        return len(text)
    import unicodedata  # a text that is not plain ASCII only

    return sum(0 if unicodedata.combining(c) or "\ufe00" <= c <= "\ufe0f" or c == "\u200d"
               else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def clip(text, width):
    """A line of text, its control characters shown (`terminal`), cut to `width` columns with '...'
    (None: a pipe, nothing is cut)."""
    text = terminal(text, False)
    if width is None or cells(text) <= width:
        return text
    if text.isascii():
        return text[: max(width - 3, 0)].rstrip() + "..."
    kept = ""
    for char in text:
        if cells(kept + char) > width - 3:
            break
        kept += char
    return kept.rstrip() + "..."


def shorten(text, width):
    """A line of text cut to `width` columns at the end of a word, with '...', so that no word shows
    cut into another (SENDGRID_A... reads as a name); a first word too long is clipped (`clip`)."""
    text = terminal(text, False)
    if width is None or cells(text) <= width:
        return text
    kept = clip(text, width)[:-3]
    if " " in kept and not text[len(kept)].isspace():  # the cut fell inside a word: end at the one before
        kept = kept.rsplit(" ", 1)[0]
    return kept.rstrip(" ,;:(") + "..." if kept.strip() else clip(text, width)


MIN_CELL = 12  # a column cut narrower than this says too little: it is dropped instead


def fit(rows, columns, give=(), indent=""):
    """Rows of cells that fit a terminal `columns` wide, as gh fits a table: the columns whose indexes
    are in `give` give way in that order, each shortened (not below MIN_CELL, else dropped), the last
    of them only shortened; the others stay whole. `columns` None (a pipe): nothing is cut. Returns
    the rows, with the cells cut and the dropped columns gone, and the widths of the columns kept."""
    rows = [[terminal(cell, False) for cell in row] for row in rows]  # one line each, control characters shown
    if not rows:
        return rows, []
    sizes = [max(cells(row[i]) for row in rows) for i in range(len(rows[0]))]
    kept = list(range(len(sizes)))
    for n, i in enumerate(give if columns else ()):
        over = len(indent) + sum(sizes[k] for k in kept) + 2 * (len(kept) - 1) - columns
        if over <= 0:
            break
        if sizes[i] - over >= MIN_CELL or n == len(give) - 1:
            sizes[i] = max(sizes[i] - over, 4)
        else:
            kept.remove(i)
    return [[clip(row[i], sizes[i]) for i in kept] for row in rows], [sizes[i] for i in kept]


def widths(rows):
    """The width of each column but the last: its widest cell."""
    return [max(cells(terminal(row[i], False)) for row in rows) for i in range(len(rows[0]) - 1)] if rows else []


def table(rows, indent="   ", column_widths=None):
    """Rows of cells, the columns padded (the last column is not), to `column_widths` or their widest cell.
    A cell is one line: a line break or a control character in it is shown as an escape (`terminal`)."""
    rows = [[terminal(cell, False) for cell in row] for row in rows]
    column_widths = column_widths or widths(rows)
    pad = lambda cell, width: cell + " " * (width - cells(cell))  # noqa: E731
    return [indent + "  ".join([pad(c, w) for c, w in zip(row[:-1], column_widths)] + [row[-1]]).rstrip() for row in rows]


def folded(rows, columns, indent=""):
    """The lines of a table whose last cell (a path) is never cut: on a terminal `columns` wide, a row too wide
    has its last cell broken after a '/' onto lines under its column, or where the column leaves less than
    40, on lines of its own indented by two; nothing runs past the edge and every character is shown."""
    lines = table(rows, indent)
    if not columns:
        return lines
    start = len(lines[0]) - cells(terminal(rows[0][-1], False)) if rows else 0
    found = []
    for line, row in zip(lines, rows):
        last = terminal(row[-1], False)
        if cells(line) <= columns:
            found.append(line)
            continue
        head, at = (line[:len(line) - len(last)], start) if columns - start >= 40 else (line[:len(line) - len(last)].rstrip(), 2)
        pieces, piece = [], ""
        for part in last.replace("/", "/\0").split("\0"):
            if piece and cells(piece + part) > columns - at:
                pieces.append(piece)
                piece = ""
            piece += part
        pieces.append(piece)
        found += [head + pieces[0]] if at == start else [head, " " * at + pieces[0]]
        found += [" " * at + p for p in pieces[1:]]
    return found


def wrapped(line, columns, hang=0):
    """A line of text as lines of at most `columns` cells (None: a pipe, the line as it is), broken at the
    last space that fits, each line after the first indented by `hang`; a word longer than a line is broken
    where the line ends. The spaces inside a line are kept (a code line's alignment)."""
    if not columns or cells(line) <= columns:
        return [line]
    found, rest, lead = [], line, ""
    hang = hang if hang <= columns // 2 else 0
    while cells(lead + rest) > columns:
        room, cut = columns - cells(lead), 0
        for i in range(1, len(rest) + 1):  # the longest head that fits
            if cells(rest[:i]) > room:
                break
            cut = i
        space, lead_spaces = rest.rfind(" ", 0, cut + 1), len(rest) - len(rest.lstrip())
        slash = rest.rfind("/", 0, cut) + 1  # a path too long for a line breaks after a '/'
        at = space if space > lead_spaces else slash if slash > lead_spaces + 1 else cut  # never inside the indent
        found.append((lead + rest[:at]).rstrip())
        rest, lead = rest[at:].lstrip(" ") or "", " " * hang
    return found + ([lead + rest] if rest else [])


def fitted(rows, columns, give=(), indent=""):
    """The lines of a table fitted to the terminal (see fit), measured as they are shown (`terminal`)."""
    rows, sizes = fit([[terminal(cell, False) for cell in row] for row in rows], columns, give, indent)
    return table(rows, indent, sizes)


def ago(ts, now=None):
    """'2 hours ago' for an ISO timestamp; 'never' for none."""
    then = parse_iso(ts)
    if then is None:
        return "never"
    import datetime  # here: parse_iso has imported it, and what imports style for tables need not

    now = now or datetime.datetime.now(datetime.timezone.utc)
    seconds = int((now - then).total_seconds())
    if seconds < 0:
        return "in the future"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{plural(n, unit)} ago"
    return "just now"


def local(ts):
    """An ISO timestamp as local time to the minute, the one way nexus shows a time in a table; '-' for none."""
    moment = parse_iso(ts)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M") if moment else "-"


def when(ts):
    """A time as nexus shows it on its own: '2026-11-30 18:04 (2 hours ago)'; 'never' for none."""
    return f"{local(ts)} ({ago(ts)})" if parse_iso(ts) else "never"
