"""nexus-manifest: write, read or check the skills manifest (manifest.json).

The manifest caches what nexus-discover found so that listing and running skills never rescan
while nothing changed. It lives at $NEXUS_HOME/state/nexus/skills/manifest.json.

Usage:
  nexus-manifest write
  nexus-manifest read [--invalid]
  nexus-manifest check
  nexus-manifest (-h | --help)

Commands:
  write  Read entries (JSON Lines, as nexus-discover prints them) on stdin and replace the
         manifest atomically. Entries with "status": "invalid" are kept as broken skills.
  read   Print the manifest's entries as JSON Lines.
  check  Exit 0 when the manifest is fresh, 1 when it is stale: missing, written by another
         nexus version, or a source or skill folder changed since it was written.

Options:
  --invalid  With read, also print the broken skills the manifest records.
  -h --help  Show this help.

Exit status:
  0  success (check: fresh)
  1  check: stale; read: there is no manifest yet
  2  unreadable input (a line that is not a JSON object, an entry without a valid name), usage error

Examples:
  nexus-discover | nexus-manifest write
  nexus-manifest read | jq -r 'select(.type == "tool") | .name'
  nexus-manifest check || nexus skills refresh
"""

from nexus import cli, config as configlib, manifest as manifestlib, paths
from nexus.errors import BadInput, NexusError

PROG = "nexus-manifest"


def write():
    entries, invalid, seen = [], [], set()
    for number, record in enumerate(cli.read_jsonl(cli.piped_stdin()), 1):
        if record.get("status") == "invalid":
            invalid.append(record)
            continue
        name = record.get("name")
        if not paths.is_valid_name(name) or not isinstance(record.get("filePath"), str):
            raise BadInput(f"stdin:{number}: an entry needs a valid 'name' and a 'filePath'")
        if name in seen:
            raise BadInput(f"stdin:{number}: skill '{name}' appears twice")
        seen.add(name)
        entries.append(record)
    stamps = paths.source_stamps(configlib.sources(configlib.load()))
    manifestlib.write(manifestlib.build(entries, invalid, stamps))


def read(with_invalid):
    manifest = manifestlib.load()
    if manifest is None:
        raise NexusError(f"no manifest at '{paths.manifest_file()}'; run 'nexus skills refresh'")
    cli.write_jsonl(manifest["skills"].values())
    if with_invalid:
        cli.write_jsonl(manifest.get("invalid", []))


def check():
    sources = configlib.sources(configlib.load())
    return 0 if manifestlib.is_fresh(manifestlib.load(), sources) else 1


@cli.command(PROG)
def main(argv):
    args = cli.parse(__doc__, argv)
    if args["write"]:
        return write()
    if args["read"]:
        return read(args["--invalid"])
    return check()

