"""The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640) as plain data: which of the offered
skills nexus publishes, each as an entry (its `skill://` URI, its frontmatter as a standard YAML parser
gives it, every file with its sha256 digest and size), and the file a `skill://` URI names.

A host that reads a published skill's files may run its scripts itself, outside the gate, the log and
the sandbox: so tool and script skills are published only when the config says so
(`mcp.publishRunnable`). Nothing here imports the MCP SDK.
"""

import fnmatch
import hashlib
import os
import stat
import threading

from .. import paths
from ..agents.instructions import offered
from ..skill import skillmd

EXTENSION = "io.modelcontextprotocol/skills"
MAX_FILES, MAX_BYTES = 512, 16 * 1024 * 1024  # the extension's limits per skill
PAGE = 100  # skills per page of skills/list, resources per page of resources/directory/read
NOT_CONTENT = (".git", ".hg", ".svn", "__pycache__")  # folders that are a tool's bookkeeping, not the skill's
SECRETS = (".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
           ".netrc", ".npmrc", ".pypirc", "credentials*", "*.keystore", "*.jks")  # file names that look like secrets
RUNNABLE_CONFIG = "mcp.publishRunnable"


DIRECTORY = "inode/directory"  # the mime type of a directory resource


def file_type(name):
    """A file's mime type by its name: Markdown's for .md (as SKILL.md's), else as Python guesses it."""
    import mimetypes  # directory reads only

    return "text/markdown" if name.endswith(".md") else mimetypes.guess_type(name)[0]


class Digests:
    """sha256 digests of files, each kept with the stamp it was taken at (size, mtime, ctime, inode,
    device): a skill's manifest stamps only its SKILL.md, and an edited script must not keep an old
    digest. Listing 1,000 skills again hashes only what changed."""

    def __init__(self):
        self.known, self.lock = {}, threading.Lock()

    def __call__(self, path, info):
        stamp = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev)
        with self.lock:
            kept = self.known.get(path)
        if kept and kept[0] == stamp:
            return kept[1]
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        digest = "sha256:" + digest.hexdigest()
        with self.lock:
            self.known[path] = (stamp, digest)
        return digest


class Published:
    """One published skill: its record, its entry as the extension shapes it, and the file behind each URI."""

    def __init__(self, record, entry, files):
        self.record, self.entry, self.files = record, entry, files  # files: {uri: path}


def uri(name, relative="SKILL.md"):
    return f"skill://{name}/{relative}"


def publish(record, config, digests):
    """(Published, None), or (None, why the skill is not published)."""
    if record.get("type") in ("tool", "script") and not (config.get("mcp") or {}).get("publishRunnable"):
        return None, (f"a {record['type']} skill: published only with {RUNNABLE_CONFIG} = true, since a host "
                      "that runs its files itself bypasses the gate, the log and the sandbox")
    found, why = files(record["dir"], record["filePath"])
    if why:
        return None, why
    with open(record["filePath"], "rb") as f:
        head = f.read(skillmd.MAX_BYTES + 1)
    frontmatter, why = standard_frontmatter(head, record["name"])
    if why:
        return None, why
    resources, where, total = [], {}, 0
    for relative, path, info in found:
        total += info.st_size
        if total > MAX_BYTES:
            return None, f"over the extension's limit of {MAX_BYTES // 2**20} MiB of files"
        try:
            digest = digests(path, info)
        except OSError as e:
            return None, f"cannot read {relative}: {e.strerror}"
        resources.append({"uri": uri(record["name"], relative), "digest": digest, "size": info.st_size})
        where[resources[-1]["uri"]] = path
    entry = {"uri": uri(record["name"]), "frontmatter": frontmatter, "resources": resources}
    return Published(record, entry, where), None


def files(folder, skill_md):
    """([(relative path, path, stat)], None) for every file of the skill, SKILL.md first as `SKILL.md`,
    or (None, why it cannot be published): a secret-looking file, a link out of the folder, a name
    that is not UTF-8, something that is not a file, or more than MAX_FILES."""
    found = []
    for top, folders, names in os.walk(folder):
        folders[:] = sorted(f for f in folders if f not in NOT_CONTENT)
        for name in sorted(names) + [f for f in folders if os.path.islink(os.path.join(top, f))]:
            path = os.path.join(top, name)
            relative = os.path.relpath(path, folder)
            shown = relative.encode("utf-8", "backslashreplace").decode()
            try:
                relative.encode("utf-8")
            except UnicodeEncodeError:
                return None, f"{shown}: a file name that is not UTF-8"
            if any(fnmatch.fnmatch(name, pattern) for pattern in SECRETS):
                return None, f"it holds {shown}, which looks like a secret"
            if not paths.contains(folder, path):
                return None, f"{shown} links out of the skill's folder"
            try:
                info = os.stat(path)
            except OSError as e:
                return None, f"cannot read {shown}: {e.strerror}"
            if not stat.S_ISREG(info.st_mode):
                return None, f"{shown} is not a regular file"
            if path == skill_md:
                found.insert(0, ("SKILL.md", path, info))
            else:
                found.append((relative.replace(os.sep, "/"), path, info))
            if len(found) > MAX_FILES:
                return None, f"over the extension's limit of {MAX_FILES} files"
    return found, None


def standard_frontmatter(data, name):
    """(the frontmatter as a standard YAML parser gives it, as JSON, None), or (None, why not): hosts
    compare an entry's frontmatter with their own parse, so nexus's lenient reading must not leak in."""
    import yaml  # 20-45 ms: only when a skill is published

    text = skillmd.frontmatter_text(data)
    if text is None:
        return None, "its SKILL.md has no frontmatter a YAML parser reads"
    try:
        loaded = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        return None, f"its frontmatter is not standard YAML ({str(e).splitlines()[0]})"
    if not isinstance(loaded, dict) or not isinstance(loaded.get("description"), str):
        return None, "its frontmatter, read as standard YAML, has no description"
    if loaded.get("name") != name:
        return None, "its frontmatter, read as standard YAML, names another skill"
    return skillmd.jsonable(loaded), None


def paged(items, cursor):
    """(the page of `items` from `cursor`, PAGE of them; the next cursor or None): a cursor is the offset
    as text. ValueError for a cursor nexus did not give."""
    start = int(cursor) if cursor and cursor.isdigit() else 0 if cursor is None else None
    if start is None:
        raise ValueError(f"invalid cursor {cursor!r}")
    end = start + PAGE
    return items[start:end], str(end) if end < len(items) else None


class Shelf:
    """What a server publishes of the offered skills: entries by name, kept while the records they were
    made from are the same; and for list_skills, why an offered skill is not published."""

    def __init__(self):
        self.digests = Digests()

    def all(self, records, config):
        """{name: Published or the reason it is not}, in the order agents are offered them."""
        shelf = {}
        for record in offered(records):
            published, why = publish(record, config, self.digests)
            shelf[record["name"]] = published or why
        return shelf

    def page(self, records, config, cursor):
        """(entries of one page, the next cursor or None); ValueError for a cursor nexus did not give."""
        return paged([p.entry for p in self.all(records, config).values() if isinstance(p, Published)], cursor)

    def get(self, records, config, skill_uri):
        """The Published skill whose SKILL.md is at `skill_uri`; LookupError saying why there is none."""
        name = skill_uri.removeprefix("skill://").removesuffix("/SKILL.md")
        if not skill_uri.startswith("skill://") or not skill_uri.endswith("/SKILL.md") or not paths.is_valid_name(name):
            raise LookupError(f"No skill is served at {skill_uri}: a skill's URI is skill://NAME/SKILL.md")
        record = next((r for r in offered(records) if r["name"] == name), None)
        if record is None:
            raise LookupError(f"No skill is served at {skill_uri}: no skill {name} is ready for agents")
        published, why = publish(record, config, self.digests)
        if published is None:
            raise LookupError(f"No skill is served at {skill_uri}: not published: {why}")
        return published

    def directory(self, records, config, directory_uri, cursor):
        """resources/directory/read: (the direct children of a directory of a published skill, as
        resources, one page from `cursor`; the next cursor or None). A directory is the skill's root,
        skill://NAME, or a folder its files lie in, written without a trailing slash; its children are
        what the skill's entry lists (a file nexus does not serve is in no directory). LookupError when
        `directory_uri` is no such directory, ValueError for a cursor nexus did not give."""
        name, _, folder = directory_uri.removeprefix("skill://").partition("/")
        if not directory_uri.startswith("skill://") or directory_uri.endswith("/"):
            raise LookupError(f"{directory_uri} is not a directory resource: one is skill://NAME or a folder in it")
        published = self.get(records, config, uri(name))
        prefix = uri(name, folder + "/" if folder else "")
        children = {}
        for file_uri in published.files:
            if file_uri.startswith(prefix):
                child, below, _ = file_uri[len(prefix):].partition("/")
                children[prefix + child] = DIRECTORY if below else file_type(child)
        if not children:
            raise LookupError(f"{directory_uri} is not a directory resource of skill {name}")
        return paged([{"uri": child, "name": child.rpartition("/")[2], **({"mimeType": mime} if mime else {})}
                      for child, mime in sorted(children.items())], cursor)

    def file(self, records, config, file_uri):
        """(the skill's record, the path) of a file a published entry lists at `file_uri`; LookupError else."""
        name = file_uri.removeprefix("skill://").partition("/")[0]
        published = self.get(records, config, uri(name))
        if file_uri not in published.files:
            raise LookupError(f"No resource {file_uri}: not a file skills/get lists for {name}")
        return published.record, published.files[file_uri]
