"""nexus-discover: find skills and print one JSON object per skill (JSON Lines).

Scans the skill sources in precedence order (extra dirs < bundled < managed < workspace); a
higher source hides a skill of the same name from a lower one. Each line is a manifest entry:
name, description, source, filePath, dir, sha256, the nexus metadata (emoji, os, requires,
install, ...), and the resolved type, tool, verify, runner and script. A broken SKILL.md is
reported on stderr as `path:line: reason` and skipped; the rest still load.

Usage:
  nexus-discover [--shadowed] [--invalid] [DIR...]
  nexus-discover (-h | --help)

Options:
  --shadowed  Also print skills hidden by a higher source, with `shadowedBy`.
  --invalid   Also print broken skills, as {"name", "status": "invalid", "filePath", "error"}.
  -h --help   Show this help.

With DIR arguments only those folders are scanned, the last one winning a name.

Exit status:
  0  the sources were scanned (broken skills are reported and skipped)
  2  no source folder could be read at all, or a usage error

Examples:
  nexus-discover | nexus-manifest write
  nexus-discover --shadowed | jq -r 'select(.shadowedBy) | "\\(.name) \\(.filePath)"'
  nexus-discover ~/src/my-skills
"""

import os
import sys

from nexus import cli, config as configlib, discovery, paths
from nexus.errors import BadInput

PROG = "nexus-discover"


@cli.command(PROG)
def main(argv):
    args = cli.parse(__doc__, argv)
    if args["DIR"]:
        source_list = paths.folder_sources(args["DIR"])
        for _, folder in source_list:
            if not os.path.isdir(folder):  # a named folder that is not there is news; a default source is not
                cli.warn(PROG, f"{folder}: no such folder")
    else:
        source_list = configlib.sources(configlib.load())
    scan = discovery.scan(source_list)
    for line in scan.diagnostics:
        print(line, file=sys.stderr)
    if not scan.readable_sources:
        raise BadInput("no skill source could be read: " + ", ".join(p for _, p in source_list))
    records = list(scan.entries.values())
    if args["--shadowed"]:
        records += scan.shadowed
    if args["--invalid"]:
        records += scan.invalid
    cli.write_jsonl(records)

