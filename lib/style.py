"""Human output: colour, emoji and box characters on a TTY only, never with NO_COLOR."""

import datetime
import os

from .schema import parse_iso

WIDTH = 63
COLORS = {"green": 32, "yellow": 33, "red": 31, "blue": 34, "dim": 2, "bold": 1}


class Style:
    def __init__(self, stream):
        self.fancy = stream.isatty() and "NO_COLOR" not in os.environ

    def color(self, text, name):
        return f"\033[{COLORS[name]}m{text}\033[0m" if self.fancy else text

    def emoji(self, symbol):
        return f"{symbol} " if self.fancy and symbol else ""

    def rule(self, heavy=True):
        if not self.fancy:
            return ("=" if heavy else "-") * WIDTH
        return ("═" if heavy else "─") * WIDTH

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


def plural(count, noun):
    """'1 skill', '3 skills'."""
    return f"{count} {noun}{'s' if count != 1 else ''}"


def truncate(text, width):
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


def widths(rows):
    """The width of each column but the last: its widest cell."""
    return [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)] if rows else []


def table(rows, indent="   ", column_widths=None):
    """Rows of cells, the columns padded (the last column is not), to `column_widths` or their widest cell."""
    column_widths = column_widths or widths(rows)
    return [indent + "  ".join([c.ljust(w) for c, w in zip(row, column_widths)] + [row[-1]]).rstrip() for row in rows]


def ago(ts, now=None):
    """'2 hours ago' for an ISO timestamp; 'never' for none."""
    then = parse_iso(ts)
    if then is None:
        return "never"
    now = now or datetime.datetime.now(datetime.timezone.utc)
    seconds = int((now - then).total_seconds())
    if seconds < 0:
        return "in the future"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{plural(n, unit)} ago"
    return "just now"
