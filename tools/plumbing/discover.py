"""nexus-discover: find skills and print one JSON object per skill (JSON Lines).

Its usage and options are its record in the command table (tools/commands.py).
"""

import os
import sys

from nexus import config as configlib, paths
from nexus.catalog import discovery
from nexus.errors import BadInput
from nexus.style import terminal


def discover(ctx):
    """Scans the skill sources in precedence order (extra dirs < bundled < managed < workspace); a
    higher source hides a skill of the same name from a lower one. Each line is a manifest entry:
    name, description, source, filePath, dir, sha256, the nexus metadata (emoji, os, requires,
    install, ...), and the resolved type, tool, verify, runner and script. A broken SKILL.md is
    reported on stderr as `path:line: reason` and printed after the skills as
    {"name", "status": "invalid", "filePath", "line", "error"}, so that `nexus-manifest write` records it
    as `nexus skills refresh` does.

    With DIR arguments only those folders are scanned, the last one winning a name.

    Exit status:
      0  the sources were scanned (broken skills are reported)
      2  no source folder could be read at all, or a usage error

    Examples:
      nexus-discover | nexus-manifest write   # as `nexus skills refresh` does
      nexus-discover --shadowed | jq -r 'select(.shadowedBy) | .filePath'
      nexus-discover --valid FOLDER
    """
    args = ctx.args
    if args["DIR"]:
        source_list = paths.folder_sources(args["DIR"])
        for _, folder in source_list:
            if not os.path.isdir(folder):  # a named folder that is not there is news; a default source is not
                ctx.warn(f"{folder}: no such folder")
    else:
        source_list = configlib.sources(ctx.config)
    scan = discovery.scan(source_list)
    for line in scan.diagnostics:  # `path:line: reason`, as compilers report
        print(terminal(line), file=sys.stderr)
    if not scan.readable_sources:
        raise BadInput("no skill source could be read: " + ", ".join(p for _, p in source_list))
    return [*scan.entries.values(), *(scan.shadowed if args["--shadowed"] else []),
            *([] if args["--valid"] else scan.invalid)]
