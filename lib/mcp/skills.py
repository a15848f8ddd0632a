"""The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640) as plain data: which of the offered
skills nexus publishes, each as an entry (its `skill://` URI, its frontmatter as a standard YAML parser
gives it, every file with its sha256 digest and size), and the file a `skill://` URI names.

A host that reads a published skill's files may run its scripts itself, outside the gate, the log and
the sandbox: so tool and script skills are published only when the config says so
(`mcp.publishRunnable`). Nothing here imports the MCP SDK.
"""

import fnmatch
import functools
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

    def __init__(self, record, entry, files, folders=()):
        self.record, self.entry, self.files = record, entry, files  # files: {uri: path}
        self.folders = folders  # the URIs of its folders, an empty one too (resources/directory/read)


def uri(name, relative="SKILL.md"):
    """The skill:// URI of a skill's file, its path percent-encoded as a URI's must be (a space, a `%`)."""
    from urllib.parse import quote  # the Skills extension only: urllib brings `re`

    return f"skill://{name}/{quote(relative, safe='/')}"


def decoded(skill_uri):
    """A skill:// URI as nexus writes it (see uri), whichever octets a client encoded on its way in: a
    host sends `skill://caf%C3%A9/SKILL.md` or `my%20notes.md` for what nexus names otherwise."""
    from urllib.parse import quote, unquote  # the Skills extension only: urllib brings `re`

    if not skill_uri.startswith("skill://"):
        return skill_uri
    try:
        return "skill://" + quote(unquote(skill_uri.removeprefix("skill://"), errors="strict"), safe="/")
    except UnicodeDecodeError:
        raise LookupError(f"No resource {skill_uri}: its %-escapes are not UTF-8") from None


def publish(record, config, digests, readings=None):
    """(Published, None), or (None, why the skill is not published). `readings`: a dict that keeps what a
    SKILL.md's frontmatter says to hosts, by the file's stamp."""
    if record.get("type") in ("tool", "script") and not (config.get("mcp") or {}).get("publishRunnable"):
        return None, (f"a {record['type']} skill: published only with {RUNNABLE_CONFIG} = true, since a host "
                      "that runs its files itself bypasses the gate, the log and the sandbox")
    if not record["name"].isascii():
        return None, ("its name is not ASCII: hosts send it percent-encoded and refuse it (an Agent Skills "
                      "name is a-z, 0-9 and -)")
    found, folders, why = files(record["dir"], record["filePath"])
    if why:
        return None, why
    info = found[0][2]
    stamp = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
    kept = (readings or {}).get(record["filePath"])
    if kept and kept[0] == stamp:
        frontmatter, why = kept[1]
    else:
        with open(record["filePath"], "rb") as f:
            frontmatter, why = host_frontmatter(f.read(skillmd.MAX_BYTES + 1), record["name"])
        if readings is not None:
            readings[record["filePath"]] = (stamp, (frontmatter, why))
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
    return Published(record, entry, where, {uri(record["name"], folder) for folder in folders}), None


def files(folder, skill_md):
    """([(relative path, path, stat)], [relative path of each folder], None) for every file of the skill,
    SKILL.md first as `SKILL.md`, or (None, None, why it cannot be published): a secret-looking file, a
    link out of the folder, a name that is not UTF-8, something that is not a file, or more than MAX_FILES."""
    found, folders_found = [], []
    for top, folders, names in os.walk(folder):
        folders[:] = sorted(f for f in folders if f not in NOT_CONTENT)
        if top != folder:
            folders_found.append(os.path.relpath(top, folder).replace(os.sep, "/"))
        for name in sorted(names) + [f for f in folders if os.path.islink(os.path.join(top, f))]:
            path = os.path.join(top, name)
            relative = os.path.relpath(path, folder)
            shown = relative.encode("utf-8", "backslashreplace").decode()
            try:
                relative.encode("utf-8")
            except UnicodeEncodeError:
                return None, None, f"{shown}: a file name that is not UTF-8"
            if secret(name):
                return None, None, f"it holds {shown}, which looks like a secret"
            try:
                info = os.lstat(path)  # os.walk enters no linked folder: only a link may lead out
                if stat.S_ISLNK(info.st_mode):
                    if not paths.contains(folder, path):
                        return None, None, f"{shown} links out of the skill's folder"
                    info = os.stat(path)
            except OSError as e:
                return None, None, f"cannot read {shown}: {e.strerror}"
            if not stat.S_ISREG(info.st_mode):
                return None, None, f"{shown} is not a regular file"
            if path == skill_md:
                found.insert(0, ("SKILL.md", path, info))
            else:
                found.append((relative.replace(os.sep, "/"), path, info))
            if len(found) > MAX_FILES:
                return None, None, f"over the extension's limit of {MAX_FILES} files"
    return found, folders_found, None


@functools.cache
def secrets_pattern():
    import re  # publishing only

    return re.compile("|".join(fnmatch.translate(os.path.normcase(p)) for p in SECRETS))


def secret(name):
    """Whether a file's name looks like a secret's (SECRETS), as fnmatch matches them: one pattern for all."""
    return secrets_pattern().match(os.path.normcase(name)) is not None


def host_frontmatter(data, name):
    """(the frontmatter as a host's YAML parser gives it, as JSON, None), or (None, why not): hosts compare
    an entry's frontmatter with their own parse, so nexus's lenient reading must not leak in; nor may what
    YAML 1.1 (PyYAML) and YAML 1.2 (the hosts') read apart, nor what breaks the Agent Skills rules that
    hosts check (a description of at most 1,024 characters, metadata a mapping, each key once), nor a
    byte-order mark or CRLF line ends, which hosts' frontmatter readers do not take."""
    import yaml  # 20-45 ms: only when a skill is published

    if data.startswith(b"\xef\xbb\xbf"):
        return None, "its SKILL.md starts with a byte-order mark, which hosts do not skip: save it without one"
    text = skillmd.frontmatter_text(data)
    if text is None:
        return None, "its SKILL.md has no frontmatter a YAML parser reads"
    lines = text.count("\n") + 2  # the frontmatter's, and its two --- lines
    if b"\r" in b"\n".join(data.split(b"\n", lines)[:lines]):
        return None, "its frontmatter has CRLF line ends, which hosts do not read as YAML: save it with LF ones"
    try:
        loaded = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        return None, f"its frontmatter is not standard YAML ({str(e).splitlines()[0]})"
    if not isinstance(loaded, dict) or not isinstance(loaded.get("description"), str):
        return None, "its frontmatter, read as standard YAML, has no description"
    if loaded.get("name") != name:
        return None, "its frontmatter, read as standard YAML, names another skill"
    if len(loaded["description"]) > skillmd.MAX_DESCRIPTION:
        return None, (f"its description is {len(loaded['description']):,} characters, over the Agent Skills "
                      f"limit of {skillmd.MAX_DESCRIPTION:,} that hosts check")
    if "metadata" in loaded and not isinstance(loaded["metadata"], dict):
        return None, "its metadata is not a mapping, which the Agent Skills rules ask and hosts check"
    differences = skillmd.host_differences(text)
    if differences:
        line, what = differences[0]
        return None, f"line {line} of its SKILL.md reads otherwise to hosts: {what}"
    return skillmd.jsonable(loaded), None


def start(cursor):
    """The offset a cursor stands for (None: the first page); ValueError for a cursor nexus did not give."""
    if cursor is None:
        return 0
    if not (cursor.isascii() and cursor.isdigit()):
        raise ValueError(f"invalid cursor {cursor!r}")
    return int(cursor)


def paged(items, cursor, size=PAGE):
    """(the page of `items` from `cursor`, `size` of them; the next cursor or None): a cursor is the offset
    as text. ValueError for a cursor nexus did not give."""
    first = start(cursor)
    end = first + size
    return items[first:end], str(end) if end < len(items) else None


class Shelf:
    """What a server publishes of the offered skills, and for list_skills why an offered skill is not
    published: what each SKILL.md says to hosts is kept by its stamp, each file's digest too."""

    def __init__(self):
        self.digests, self.readings = Digests(), {}

    def publish(self, record, config):
        return publish(record, config, self.digests, self.readings)

    def all(self, records, config):
        """{name: Published or the reason it is not}, in the order agents are offered them."""
        shelf = {}
        for record in offered(records):
            published, why = self.publish(record, config)
            shelf[record["name"]] = published or why
        return shelf

    def page(self, records, config, cursor):
        """(the published entries of one page, the next cursor or None); ValueError for a cursor nexus did
        not give. A cursor is the offset of the next offered skill to look at: a page publishes its own
        skills, and those not published between them, never the whole catalogue."""
        shown, found = offered(records), []
        index = start(cursor)
        while index < len(shown) and len(found) < PAGE:
            published = self.publish(shown[index], config)[0]
            if published is not None:
                found.append(published.entry)
            index += 1
        return found, str(index) if index < len(shown) else None

    def get(self, records, config, skill_uri):
        """The Published skill whose SKILL.md is at `skill_uri` (percent-encoded or not); LookupError
        saying why there is none."""
        skill_uri = decoded(skill_uri)
        name = unquote(skill_uri.removeprefix("skill://").removesuffix("/SKILL.md"))
        if not skill_uri.startswith("skill://") or not skill_uri.endswith("/SKILL.md") or not paths.is_valid_name(name):
            raise LookupError(f"No skill is served at {skill_uri}: a skill's URI is skill://NAME/SKILL.md")
        record = next((r for r in offered(records) if r["name"] == name), None)
        if record is None:
            raise LookupError(f"No skill is served at {skill_uri}: no skill {name} is ready for agents")
        published, why = self.publish(record, config)
        if published is None:
            raise LookupError(f"No skill is served at {skill_uri}: not published: {why}")
        return published

    def directory(self, records, config, directory_uri, cursor):
        """resources/directory/read: (the direct children of a directory of a published skill, as
        resources, one page from `cursor`; the next cursor or None). A directory is the skill's root,
        skill://NAME, or a folder in it (an empty one too), written without a trailing slash; its children
        are the files the skill's entry lists (a file nexus does not serve is in no directory) and its
        folders. LookupError when `directory_uri` is no such directory, ValueError for a cursor nexus did
        not give."""
        directory_uri = decoded(directory_uri)
        name, _, folder = directory_uri.removeprefix("skill://").partition("/")
        if not directory_uri.startswith("skill://") or directory_uri.endswith("/"):
            raise LookupError(f"{directory_uri} is not a directory resource: one is skill://NAME or a folder in it")
        published = self.get(records, config, uri(unquote(name)))
        if folder and directory_uri not in published.folders:
            raise LookupError(f"{directory_uri} is not a directory resource of skill {unquote(name)}")
        prefix = directory_uri + "/"
        children = {}
        for child in [*published.files, *published.folders]:
            if child.startswith(prefix):
                first, below, _ = child[len(prefix):].partition("/")
                children[prefix + first] = DIRECTORY if below or child in published.folders else None
        return paged([resource(published, child, mime) for child, mime in sorted(children.items())], cursor)

    def file(self, records, config, file_uri):
        """(the skill's record, the path) of a file a published entry lists at `file_uri` (percent-encoded or
        not); LookupError else."""
        file_uri = decoded(file_uri)
        name = unquote(file_uri.removeprefix("skill://").partition("/")[0])
        published = self.get(records, config, uri(name))
        if file_uri not in published.files:
            raise LookupError(f"No resource {file_uri}: not a file skills/get lists for {name}")
        return published.record, published.files[file_uri]


def resource(published, child_uri, mime=None, whole=False):
    """A file or folder of a published skill as a resource: its SKILL.md named after the skill, with its
    description, as the extension names it; any other by its own name (`whole`: by its path in the skill)."""
    if child_uri == published.entry["uri"]:
        record = published.record
        return {"uri": child_uri, "name": record["name"], "description": record.get("description", ""),
                "mimeType": "text/markdown"}
    name = unquote(child_uri.removeprefix(published.entry["uri"].removesuffix("SKILL.md")) if whole
                   else child_uri.rpartition("/")[2])
    mime = mime or file_type(name)
    return {"uri": child_uri, "name": name, **({"mimeType": mime} if mime else {})}


def unquote(text):
    from urllib.parse import unquote as decode  # the Skills extension only: urllib brings `re`

    return decode(text)
