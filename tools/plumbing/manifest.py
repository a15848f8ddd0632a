"""nexus-manifest: write, read or check the skills manifest (manifest.json).

Its usage and options are its record in the command table (tools/commands.py).
"""

from nexus import config as configlib, fileio, paths, schema
from nexus.catalog import manifest as manifestlib
from nexus.cli.output import piped_stdin, read_jsonl
from nexus.errors import BadInput, NexusError


def write(ctx):
    records, seen = [], set()
    for number, record in enumerate(read_jsonl(piped_stdin()), 1):
        if record.get("status") != "invalid" and not record.get("shadowedBy"):
            name = record.get("name")
            if not paths.is_valid_name(name) or not isinstance(record.get("filePath"), str):
                raise BadInput(f"stdin:{number}: an entry needs a valid 'name' and a 'filePath'")
            if name in seen:
                raise BadInput(f"stdin:{number}: skill '{name}' appears twice")
            seen.add(name)
        records.append(record)
    entries = [r for r in records if r.get("status") != "invalid" and not r.get("shadowedBy")]
    manifestlib.write(manifestlib.build(records, configlib.sources(ctx.config)), entries)


def read(ctx):
    path = paths.manifest_file()
    manifest = fileio.read_json(path)  # BadInput, naming the file, when it is not JSON
    if manifest is None:
        raise NexusError(f"no manifest at '{path}' yet; run 'nexus skills refresh'")
    version = manifest.get("version") if isinstance(manifest, dict) else None
    if isinstance(version, int) and version > schema.MANIFEST_VERSION:
        raise BadInput(f"'{path}' was written by a newer nexus (manifest version {version}); run 'nexus skills refresh'")
    if not isinstance(manifest, dict) or not isinstance(manifest.get("skills"), dict):
        raise BadInput(f"'{path}' is unreadable: not a manifest; run 'nexus skills refresh'")
    return [*manifest["skills"].values(), *(manifest.get("invalid", []) if ctx.args["--invalid"] else [])]


def check(ctx):
    manifest = manifestlib.load()
    ctx.status = 0 if manifest is not None and manifest.is_fresh(configlib.sources(ctx.config)) else 1


def manifest(ctx):
    """The manifest caches what nexus-discover found so that listing and running skills never rescan
    while nothing changed. It lives at $NEXUS_HOME/state/nexus/skills/manifest.json.

    Commands:
      write  Read entries (JSON Lines, as nexus-discover prints them) on stdin and replace the
             manifest atomically. Entries with "status": "invalid" are kept as broken skills, those
             with "shadowedBy" left out; the folders of each source without a SKILL.md are watched.
             The same skills give the same manifest as `nexus skills refresh`.
      read   Print the manifest's entries as JSON Lines.
      check  Exit 0 when the manifest is fresh, 1 when it is stale: missing, written by another
             nexus version, or a source or skill folder changed since it was written.

    Exit status:
      0  success (check: fresh)
      1  check: stale; read: there is no manifest yet
      2  unreadable input (a line that is not a JSON object, an entry without a valid name; read: a manifest
         that is not JSON, or was written by a newer nexus), usage error

    Examples:
      nexus-discover | nexus-manifest write
      nexus-manifest read | jq -r 'select(.type == "tool") | .name'
      nexus-manifest check || nexus skills refresh
    """
    action = write if ctx.args["write"] else read if ctx.args["read"] else check
    return action(ctx)
