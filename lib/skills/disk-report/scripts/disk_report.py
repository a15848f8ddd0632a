#!/usr/bin/env python3
"""disk_report.py [PATH] [--top N] [--json]: the largest files and immediate subfolders under PATH.

A relative PATH is resolved against $NEXUS_CALLER_CWD (set by the nexus gateway), else the current
directory, which is also the default PATH. Sizes are apparent sizes. Symlinks are never followed,
other filesystems mounted inside PATH are not entered (like `du -x`), a hard-linked file counts once,
and unreadable entries are skipped and counted on stderr. Standard library only, Python 3.8+.
"""

import argparse
import heapq
import json
import os
import stat
import sys

PROG = "disk_report"
UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


class Report:
    def __init__(self, root):
        self.root = root
        self.total = 0
        self.file_count = 0
        self.skipped = 0
        self.files = []  # min-heap of (bytes, path) holding the largest files seen so far
        self.dirs = {}  # immediate subfolder -> bytes under it


def positive_int(text):
    value = int(text) if text.strip().isdecimal() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="disk_report.py",
        description="Show the largest files and the largest immediate subfolders under PATH.")
    parser.add_argument("path", nargs="?", metavar="PATH",
                        help="folder to scan (default: the caller's working directory)")
    parser.add_argument("--top", type=positive_int, default=10, metavar="N",
                        help="how many files and folders to list (default: 10)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    return parser.parse_args(argv)


def resolve(path_arg):
    base = os.environ.get("NEXUS_CALLER_CWD") or os.getcwd()
    if not path_arg:
        return os.path.abspath(base)
    return os.path.abspath(os.path.join(base, os.path.expanduser(path_arg)))


def scan(root, top):
    """Walk `root` without following symlinks or leaving its filesystem."""
    report = Report(root)
    root_dev = os.stat(root).st_dev
    seen_links = set()
    stack = [(root, None)]  # (folder, the immediate subfolder of root it lies in)
    while stack:
        folder, owner = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            if folder == root:
                raise
            report.skipped += 1
            continue
        for entry in entries:
            try:
                if entry.is_symlink():
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError:
                report.skipped += 1
                continue
            if stat.S_ISDIR(st.st_mode):
                if st.st_dev != root_dev:
                    continue  # a mount point: another filesystem
                if owner is None:
                    report.dirs[entry.path] = 0
                stack.append((entry.path, owner or entry.path))
            elif stat.S_ISREG(st.st_mode):
                if st.st_nlink > 1:
                    if (st.st_dev, st.st_ino) in seen_links:
                        continue
                    seen_links.add((st.st_dev, st.st_ino))
                report.total += st.st_size
                report.file_count += 1
                if owner is not None:
                    report.dirs[owner] += st.st_size
                item = (st.st_size, entry.path)
                if len(report.files) < top:
                    heapq.heappush(report.files, item)
                elif item > report.files[0]:
                    heapq.heapreplace(report.files, item)
    return report


def by_size(pair):
    return -pair[1], pair[0]


def human(n):
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in UNITS:
        value /= 1024
        if round(value, 1) < 1024 or unit == UNITS[-1]:
            return f"{value:.1f} {unit}"


def table(title, rows, suffix=""):
    lines = [title]
    if not rows:
        return lines + ["  (none)"]
    cells = [human(size).split(" ") for _, size in rows]
    width = max(len(number) for number, _ in cells)
    for (path, _), (number, unit) in zip(rows, cells):
        lines.append(f"  {number:>{width}} {unit:<3}  {path}{suffix}")
    return lines


def render(report, top, as_json):
    files = sorted(((path, size) for size, path in report.files), key=by_size)
    dirs = sorted(report.dirs.items(), key=by_size)[:top]
    if as_json:
        return json.dumps({
            "path": report.root,
            "totalBytes": report.total,
            "files": [{"path": p, "bytes": b} for p, b in files],
            "dirs": [{"path": p, "bytes": b} for p, b in dirs],
        }, indent=2)
    noun = "file" if report.file_count == 1 else "files"
    lines = [f"{report.root}: {human(report.total)} in {report.file_count:,} {noun}", ""]
    lines += table(f"Largest files (top {top})", files)
    lines.append("")
    lines += table(f"Largest subfolders (top {top})", dirs, suffix=os.sep)
    return "\n".join(lines)


def fail(message):
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    root = resolve(args.path)
    if not os.path.exists(root):
        return fail(f"no such folder: {root}")
    if not os.path.isdir(root):
        return fail(f"not a folder: {root}")
    try:
        report = scan(root, args.top)
    except OSError as e:
        return fail(f"cannot read {root}: {e.strerror or e}")
    try:
        print(render(report, args.top, args.json))
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): silence the final flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    if report.skipped:
        print(f"{PROG}: skipped {report.skipped} unreadable entries", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
