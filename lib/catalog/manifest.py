"""manifest.json: the cache of discovered skills, rebuilt only where a source or skill folder changed.

One JSON document, laid out one record per line, so that a reader takes what it needs without
parsing the rest (`nexus skill run` reads the first line and one skill's, `nexus skills list` the
lines as they are):

    {"version":2,"nexusVersion":"…","generatedAt":"…","sources":[…],   the head: checked first
    "skills":{
    "alpha":{…},                                                         one per line, by name, so a
    "beta":{…}                                                           skill is found by bisection
    },
    "invalid":[
    {…}                                                                  broken skills, as scanned
    ],
    "folders":[…],                                                       folders watched for a SKILL.md
    "stamps":[[dir,dirMtimeNs,filePath,fileMtimeNs],…]}                 each record's, in their order

Architecture invariant: one builder, build(), makes every manifest, whether from a scan
(`nexus skills refresh`, or any command that finds the manifest stale) or from records on stdin
(`nexus-discover | nexus-manifest write`): given the same skills, both are the same bytes.
"""

import os
import zlib

from .. import __version__, fastjson, fileio, paths, schema
from ..errors import NexusError, UsageError
from ..state import skill_state

SMALL = 1024 * 1024  # a manifest up to this size is read whole; a larger one is read where needed (_File)


class Record:
    """One record as the manifest keeps it: a skill's entry, or a broken skill, as its JSON text,
    with its stamp [dir, dirMtimeNs, filePath, fileMtimeNs] (the mtimes it was read at)."""

    __slots__ = ("name", "source", "invalid", "text", "stamp", "unset")

    def __init__(self, name, source, invalid, text, stamp, unset=None):
        self.name, self.source, self.invalid, self.text, self.stamp = name, source, invalid, text, stamp
        self.unset = unset  # the entry, when a cold read found its tool or script skill without a state (finished)

    def __reduce__(self):  # a child of a cold refresh sends its Records back pickled: as their fields, compactly
        return Record, (self.name, self.source, self.invalid, self.text, self.stamp, self.unset)

    @classmethod
    def of(cls, entry):
        return cls(entry.get("name"), entry.get("source"), entry.get("status") == "invalid",
                   fastjson.dumps(entry).encode(), stamp(entry))

    def entry(self):
        return fastjson.loads(self.text)

    def unchanged(self):
        return unchanged(self.stamp)


def stamp(entry):
    """Where an entry was read, and when: [dir, dirMtimeNs, filePath, fileMtimeNs]."""
    return [entry.get("dir"), entry.get("dirMtimeNs"), entry.get("filePath"), entry.get("fileMtimeNs")]


def unchanged(stamp):
    """True when a record's folder and SKILL.md still have the mtimes it was read at."""
    folder, folder_mtime, file_path, file_mtime = stamp
    return (isinstance(folder, str) and paths.mtime(folder) == folder_mtime
            and (file_path is None or paths.mtime(file_path) == file_mtime))


def stale(stamps):
    """The indices of the stamps that do not hold (unchanged()), in order, as each is found: two stats a skill,
    the loop of every listing, kept tight."""
    stat = os.stat
    for i, (folder, folder_mtime, file_path, file_mtime) in enumerate(stamps):
        try:
            if (type(folder) is not str or stat(folder).st_mtime_ns != folder_mtime
                    or file_path is not None and stat(file_path).st_mtime_ns != file_mtime):
                yield i
        except OSError:  # a folder or SKILL.md gone
            yield i


def all_unchanged(stamps):
    """unchanged() of every stamp: stat'ed until one does not hold."""
    return next(stale(stamps), None) is None


# What a listing adds to an entry (status.Checker.evaluate), and what the line of a skill that requires
# another holds: build() notes in the head whether any skill's line has one, so that a listing never
# searches the lines for them.
EVALUATED = (b'"status":', b'"missing":', b'"disabledReason":', b'"verified":', b'"verifiesAgain":', b'"degraded":',
             b'"degradedReason":', b'"drifted":', b'"driftedReason":', b'"reason":')
DEPENDS = tuple(f'"{key}":'.encode() for key in schema.DEPENDS_KEYS)


def build(records, source_list, stamps=None, folders=None):
    """The manifest of discovered records (entries, broken ones with "status": "invalid", or Records
    kept from a previous manifest); shadowed ones (with "shadowedBy") are left out. `stamps` of the
    sources when taken before the records were read; `folders` without a SKILL.md, when the caller
    has just listed them."""
    skills, invalid, dirs = {}, [], set()
    for record in records:
        if not isinstance(record, Record):
            if record.get("shadowedBy"):
                dirs.add(record.get("dir"))
                continue
            record = Record.of(record)
        dirs.add(record.stamp[0])
        if record.invalid:
            invalid.append(record)
        else:
            skills[record.name] = record
    names = sorted(skills)
    skill_lines = b",\n".join(skill_line(name, skills[name].text) for name in names)
    # Looked for in the lines at once: a search of each record's text costs more than one of them all.
    if (b'"skillKey' in skill_lines or b'"keyClaimed' in skill_lines) and _claimed_keys(skills):
        skill_lines = b",\n".join(skill_line(name, skills[name].text) for name in names)
    if folders is None:
        from . import discovery  # it reads SKILL.md files: the gateway's way (one line of a fresh manifest) never does

        folders = discovery.folders_without_skill(source_list, dirs)
    records = [skills[name] for name in names] + invalid
    head = {"version": schema.MANIFEST_VERSION, "nexusVersion": __version__, "generatedAt": generated_at(),
            "sources": paths.source_stamps(source_list) if stamps is None else stamps,
            "evaluatedKeys": any(key in skill_lines for key in EVALUATED),
            "requirements": any(key in skill_lines for key in DEPENDS)}
    if b'"aliases":' in skill_lines:  # the few skills with other names: looked up in the head, never searched
        head["aliases"] = alias_table((r.entry() for r in records[:len(skills)] if b'"aliases":' in r.text), skills)[0]
    lines = [head_line(head), b'"skills":{', skill_lines, b"},",
             b'"invalid":[', b",\n".join(r.text for r in invalid), b"],",
             b'"folders":' + fastjson.dumps(folders).encode() + b",",
             b'"stamps":' + fastjson.dumps([r.stamp for r in records]).encode() + b"}"]
    return Manifest(b"\n".join(line for line in lines if line) + b"\n")


# -- the lines of the manifest, as bytes: each record is written and read as the JSON text it is ------------


def head_line(head):
    """The first line: the head's members, the document's `{` before them, a `,` after."""
    return fastjson.dumps(head)[:-1].encode() + b","


def read_head(line):
    """The head of the manifest from its first line (without its line break), or None."""
    if not line.endswith(b","):
        return None
    try:
        head = fastjson.loads(line[:-1] + b"}")
    except ValueError:
        return None
    return head if isinstance(head, dict) else None


def skill_line(name, text):
    """A skill's line, `"NAME":{entry}`, without the comma that ends all lines but the last. The name
    goes in unescaped: every record's name passed paths.is_valid_name (no quote, no backslash)."""
    return b'"' + name.encode() + b'":' + text


def split_line(line):
    """(name, the entry's JSON text) of a skill's line as written, its ending comma or not."""
    name, _, text = line.rstrip(b",").partition(b":")
    return name[1:-1].decode(), text


def entry_text(line):
    """The entry's JSON text of a skill's line."""
    return split_line(line)[1]


def with_members(text, members):
    """The JSON text of an object (not empty, as every entry) with `members` (b'"key":value,...') after
    its own: what a listing adds to an entry, spliced in without parsing it."""
    return text[:-1] + b"," + members + b"}"


def generated_at():
    """Now, or SOURCE_DATE_EPOCH when set, so that a manifest can be reproduced byte for byte."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    return schema.now_iso(int(epoch) if epoch and epoch.isdigit() else None)


class _File:
    """A large manifest's bytes, read where asked with pread: what bisection needs (find, rfind,
    slices, as bytes have them). Not mapped: the kernel maps a mapped file's pages in large runs,
    and a skill run would carry megabytes of a manifest it reads a few kilobytes of."""

    CHUNK = 4096

    def __init__(self, fd):
        self.fd, self.size = fd, os.fstat(fd).st_size

    def __del__(self):
        os.close(self.fd)

    def __len__(self):
        return self.size

    def __bytes__(self):
        return self[:]

    def __getitem__(self, part):
        start, stop, _ = part.indices(self.size)
        return os.pread(self.fd, max(0, stop - start), start)

    def find(self, sub, start=0, end=None):
        end = self.size if end is None else min(end, self.size)
        while start < end:
            at = self[start:min(start + self.CHUNK + len(sub) - 1, end)].find(sub)
            if at >= 0:
                return start + at
            start += self.CHUNK
        return -1

    def rfind(self, sub, start=0, end=None):
        end = self.size if end is None else min(end, self.size)
        while end > start:
            low = max(start, end - self.CHUNK - len(sub) + 1)
            at = self[low:end].rfind(sub)
            if at >= 0:
                return low + at
            end -= self.CHUNK
        return -1


class Manifest:
    """A manifest as written, read only as far as asked: its head, one skill, its lines, or all of it."""

    def __init__(self, data):
        self.data = data  # bytes, or a _File
        self.head = self._head()
        self._lines = self._records = self._names = None
        self.edited = self.before = None  # set by updated(): [(index, name)] of the lines read again, the CRC before

    def _head(self):
        end = self.data.find(b"\n")
        return (read_head(bytes(self.data[:end])) if end > 0 else None) or {}

    def current(self, source_list):
        """True when it was written by this nexus, in this layout, from these sources as they are now."""
        return (self.head.get("version") == schema.MANIFEST_VERSION and self.head.get("nexusVersion") == __version__
                and self.head.get("sources") == paths.source_stamps(source_list))

    def find_line(self, name):
        """The JSON text of skill `name`, found by bisecting the lines of the skills, or None."""
        data, key = self.data, name.encode()
        lo = data.find(b"\n") + 1
        lo = data.find(b"\n", lo) + 1  # past the head and `"skills":{`
        hi = len(data)
        while lo < hi:
            mid = (lo + hi) // 2
            start = data.rfind(b"\n", 0, mid) + 1
            end = data.find(b"\n", mid)
            end = len(data) if end < 0 else end
            quote = data.find(b'"', start + 1, end)
            # A skill's line is "NAME":{…}; any other line lies past the skills, so it sorts last.
            skill = data[start:start + 1] == b'"' and quote > start and data[quote + 1:quote + 3] == b":{"
            found = data[start + 1:quote] if skill else None
            if found is not None and found < key:
                lo = end + 1
            elif found == key:
                return data[quote + 2:end - (data[end - 1:end] == b",")]
            else:
                hi = start
        return None

    def lines(self):
        """(skill lines, invalid lines, folders line, stamps line), each as written."""
        if self._lines is None:
            lines = self.whole().split(b"\n")
            skills_end = lines.index(b"},", 1)
            invalid_end = lines.index(b"],", skills_end + 2)
            self._lines = (lines[2:skills_end], lines[skills_end + 2:invalid_end], lines[invalid_end + 1],
                           lines[invalid_end + 2])
        return self._lines

    def whole(self):
        """The manifest's bytes, read whole once."""
        if not isinstance(self.data, bytes):
            self.data = bytes(self.data)
        return self.data

    def _tail(self, last):
        """The folders line (last=False) or the stamps line (True), found from the end: a fresh listing reads
        them without splitting the lines of every skill."""
        if self._lines is not None:
            return self._lines[3 if last else 2]
        data = self.whole()
        end = len(data) - 1 if data.endswith(b"\n") else len(data)
        start = data.rfind(b"\n", 0, end) + 1
        if not last:
            end, start = start - 1, data.rfind(b"\n", 0, start - 1) + 1
        return data[start:end]

    def stamps(self):
        """The stamp of every record, in their order."""
        line = self._tail(True)
        if not line.startswith(b'"stamps":'):
            raise ValueError("not a manifest's stamps")
        return fastjson.loads(line[len(b'"stamps":'):-1])

    def records(self):
        """Every record, skills by name and then the broken ones, each with its stamp."""
        if self._records is None:
            skill_lines, invalid_lines = self.lines()[:2]
            stamps, found = self.stamps(), []
            for line, stamp in zip(skill_lines, stamps):
                name, text = split_line(line)
                found.append(Record(name, None, False, text, stamp))
            for line, stamp in zip(invalid_lines, stamps[len(skill_lines):]):
                text = line.rstrip(b",")
                found.append(Record(fastjson.loads(text).get("name"), None, True, text, stamp))
            self._records = found
        return self._records

    def folders(self):
        """The folders watched for a SKILL.md: [{"dir", "dirMtimeNs"}]."""
        line = self._tail(False)
        if not line.startswith(b'"folders":'):
            raise ValueError("not a manifest's folders")
        return fastjson.loads(line[len(b'"folders":'):-1])

    def names(self):
        """The names of the skills, without reading their entries."""
        if self._names is None:
            self._names = [line[1:line.index(b'"', 1)].decode() for line in self.lines()[0]]
        return self._names

    def skills(self):
        """{name: entry} of every skill."""
        return {r.name: r.entry() for r in self.records() if not r.invalid}

    def invalid(self):
        return [r.entry() for r in self.records() if r.invalid]

    def is_fresh(self, source_list):
        """True when no source, skill folder or watched folder changed since it was written."""
        try:
            return (self.current(source_list) and all_unchanged(self.stamps())
                    and all(paths.mtime(f["dir"]) == f["dirMtimeNs"] for f in self.folders()))
        except (ValueError, KeyError, TypeError, IndexError):
            return False


def write(manifest, entries=()):
    """Replace manifest.json, and give each new tool or script skill among `entries` its initial state."""
    path = paths.manifest_file()
    fileio.private_dirs(os.path.dirname(path), paths.home())
    fileio.write_atomic(path, manifest.data)
    skill_state.populate(entries)


def load():
    """The manifest, or None when there is none or it cannot be read (a stale cache, not an error)."""
    try:
        fd = os.open(paths.manifest_file(), os.O_RDONLY)
    except OSError:
        return None
    data = _File(fd)  # closes fd when it goes
    try:
        return Manifest(data if len(data) > SMALL else data[:])
    except OSError:
        return None


def cached_skills():
    """{name: entry} of the manifest as it is, fresh or not; {} when there is none or it cannot be read
    (for completion, which must not scan)."""
    found = load()
    try:
        return found.skills() if found is not None else {}
    except (ValueError, KeyError, TypeError, IndexError):
        return {}


def refresh(source_list, previous=None, must_write=True):
    """Scan the sources and write a new manifest; returns (manifest, scan). With the `previous`
    manifest, a skill folder whose folder and SKILL.md mtimes are unchanged is taken from it as it
    was, and only what changed, appeared or vanished is read; a manifest of another nexus version or
    other sources is no help, and everything is read. Without `must_write`, a manifest that cannot be
    written (a read-only or full disk) is still returned, and scan.diagnostics says why it was not written."""
    stamps = paths.source_stamps(source_list)  # taken first, so a change during the scan makes it stale
    from . import discovery  # as in build: only a refresh reads SKILL.md files

    known = _known(previous, source_list) if previous is not None else None
    root = paths.skills_state()  # once: a cold refresh finishes thousands of entries
    scan = discovery.scan(source_list, known, finish=lambda entry: finished(entry, root))
    manifest = build(scan.records(), source_list, stamps, scan.folders)
    try:
        write(manifest, [r.unset for r in scan.entries.values() if r.unset is not None])
    except OSError as e:
        if must_write:
            raise
        scan.diagnostics.append(f"cannot keep the manifest: {e.filename}: {e.strerror}; the next command scans again")
    return manifest, scan


def finished(entry, root=None):
    """An entry just read, as the manifest keeps it: its Record, with the entry when its skill has no state
    yet (write gives it one). A cold refresh's children make these (discovery.scan's `finish`): the
    parent merges lines and writes, and never encodes an entry nor looks for a state.json."""
    record = Record.of(entry)
    if skill_state.unset(entry, root):
        record.unset = entry
    return record


def _known(previous, source_list):
    """{dir: Record, or the mtime of a folder without a SKILL.md} of a previous manifest, when it can be reused."""
    if (previous.head.get("version") != schema.MANIFEST_VERSION or previous.head.get("nexusVersion") != __version__
            or [(s["source"], s["path"]) for s in previous.head.get("sources", [])] != [tuple(s) for s in source_list]):
        return None
    try:
        known = {f["dir"]: f["dirMtimeNs"] for f in previous.folders()}
        known.update((r.stamp[0], r) for r in previous.records() if isinstance(r.stamp[0], str))
        return known
    except (ValueError, KeyError, TypeError, IndexError):
        return None


def current(source_list, on_diagnostic=None):
    """A fresh manifest: the cached one when nothing changed, the same with the lines of a few edited skills
    read again (updated), else one refreshed where things changed."""
    manifest = load()
    found = updated(manifest, source_list) if manifest is not None else None  # the same when nothing changed
    if found is not None:
        manifest, diagnostics = found
    else:
        manifest, scan = refresh(source_list, manifest, must_write=False)
        diagnostics = scan.diagnostics
    if on_diagnostic:
        for line in diagnostics:
            on_diagnostic(line)
    return manifest


UPDATED_AT_MOST = 64  # skills edited since the manifest was written that it is updated for in place; more: refreshed
ALONE = (b'"aliases":', b'"skillKey', b'"keyClaimed":', *EVALUATED, *DEPENDS)  # what ties a line to others or the head


def updated(manifest, source_list):
    """(the manifest with the lines of the skills edited since it was written read again, the diagnostics of
    reading them), written; (the manifest, []) when it is fresh (is_fresh); None when more than that changed:
    a source or a watched folder, a broken skill,
    many skills, a skill that is now broken, gone, or has another name, or a line with what ties it to other
    lines or the head (aliases, a skillKey, what a listing adds or another skill requires). The bytes are
    those build() makes from the same skills (tests/test_manifest.py)."""
    try:
        if not manifest.current(source_list) or not all(
                paths.mtime(f["dir"]) == f["dirMtimeNs"] for f in manifest.folders()):
            return None
        stamps = manifest.stamps()
        changed = list(stale(stamps))
        if not changed:
            return manifest, []
        lines = manifest.whole().split(b"\n")
        skills_end = lines.index(b"},", 1)
    except (ValueError, KeyError, TypeError, IndexError):
        return None
    count = skills_end - 2  # lines[2:skills_end] are the skills', then those of the broken ones
    if len(changed) > UPDATED_AT_MOST or changed[-1] >= count or len(stamps) < count:
        return None
    folders = dict((source, folder) for source, folder in source_list)
    from . import discovery  # as in build

    diagnostics, entries = [], []
    for i in changed:
        line = lines[2 + i]
        name, text = split_line(line)
        try:
            source = fastjson.loads(text).get("source")
        except (ValueError, AttributeError):
            return None
        if folders.get(source) is None or os.path.dirname(stamps[i][0]) != folders[source]:
            return None  # only a folder of its source is read
        found = discovery.scan_one(source, stamps[i][0])
        entry = next(iter(found.entries.values()), None)
        if (len(found.entries) != 1 or found.invalid or found.folders or entry.get("name") != name
                or any(key in text for key in ALONE)):
            return None
        record = Record.of(entry)
        if any(key in record.text for key in ALONE):
            return None
        lines[2 + i] = skill_line(name, record.text) + line[len(line.rstrip(b",")):]  # its comma kept
        stamps[i] = record.stamp
        diagnostics += found.diagnostics
        entries.append(entry)
    head = {**manifest.head, "generatedAt": generated_at()}
    lines[0] = head_line(head)
    end = len(lines) - (lines[-1] == b"")  # the stamps line is the last
    lines[end - 1] = b'"stamps":' + fastjson.dumps(stamps).encode() + b"}"
    fresh = Manifest(b"\n".join(lines))
    # what a listing kept whole needs to be updated in place too (listing.patched): which lines, and from what
    fresh.edited, fresh.before = [(i, split_line(lines[2 + i])[0]) for i in changed], zlib.crc32(manifest.whole())
    try:
        write(fresh, entries)
    except OSError as e:
        diagnostics.append(f"cannot keep the manifest: {e.filename}: {e.strerror}; the next command scans again")
    return fresh, diagnostics


def entry(source_list, name, warn=None):
    """The entry of one skill, from a manifest kept fresh for it alone; UsageError for a name no skill
    can have, NexusError when there is none.

    Only the sources and that one skill are checked: enough to run it. A name the manifest does not
    know gets the full check, since its SKILL.md may have just been written.
    """
    name = checked(name)
    manifest = load()
    if manifest is not None and manifest.current(source_list):
        found = _entry(manifest, name)
        aliases = manifest.head.get("aliases")
        alias = aliases.get(name) if found is None and isinstance(aliases, dict) else None
        # Another name of a skill (metadata.nexus.aliases): the skill itself runs and is logged. The table is
        # the whole catalogue's (a SKILL.md edited in place may claim the alias, or take it as its name), so
        # it is trusted only while every skill is as read: an alias costs a stat of each, a name never does.
        if alias and manifest.is_fresh(source_list):
            found = _entry(manifest, alias)
        if found is not None:
            return found
    manifest = current(source_list, on_diagnostic=warn)
    return _entry(manifest, name) or find(manifest, name)


def _entry(manifest, name):
    """The entry of skill `name` when the manifest has it and it is unchanged since, else None."""
    text = manifest.find_line(name)
    try:
        found = fastjson.loads(text) if text is not None else None
        return found if isinstance(found, dict) and unchanged(stamp(found)) else None
    except (ValueError, TypeError):
        return None


def key_claims(entries):
    """{skill name: the skillKey it declares that is another skill's name or skillKey}, of the skills added with
    `nexus skills add` or a project's sync (paths.ADDED) only: such a key would hand it that skill's config (its apiKey, env and
    sandbox grants). Sharing a key among a person's own skills is OpenClaw's meaning, and stays."""
    entries = list(entries)
    keys = {}
    for entry in entries:
        key = entry.get("skillKey") or entry.get("skillKeyIgnored")
        if isinstance(key, str) and key:
            keys.setdefault(key, []).append(entry["name"])
    names = {e["name"] for e in entries}
    return {e["name"]: key for e in entries for key in [e.get("skillKey") or e.get("skillKeyIgnored")]
            if e.get("source") in paths.ADDED and isinstance(key, str) and key
            and (key in names - {e["name"]} or len(keys.get(key, ())) > 1)}


def name_claims(entries, claims=None):
    """{name of an added skill: the skills that use its name as their skillKey}: an added skill without a skillKey
    (or whose skillKey key_claims ignores) has its name for its key, and where another skill takes that name as its
    skillKey, [skills.entries.NAME] is that skill's config (its apiKey, env and sandbox grants): the added one gets
    nothing of it. `claims`: key_claims(entries), when known."""
    entries = list(entries)
    claims = key_claims(entries) if claims is None else claims
    used = {}
    for entry in entries:
        key = entry.get("skillKey") or entry.get("skillKeyIgnored")
        if isinstance(key, str) and key and entry["name"] not in claims:
            used.setdefault(key, []).append(entry["name"])
    found = {}
    for entry in entries:
        owners = [name for name in used.get(entry["name"], ()) if name != entry["name"]]
        own = entry.get("skillKey") or entry.get("skillKeyIgnored")
        if owners and entry.get("source") in paths.ADDED and (entry["name"] in claims or not own):
            found[entry["name"]] = sorted(owners)
    return found


def _claimed_keys(skills):
    """An added skill's skillKey that claims another skill's (key_claims) is ignored: kept aside as
    skillKeyIgnored, and given back once no other skill has it; an added skill whose name another skill takes as
    its key (name_claims) is marked keyClaimed: it has no config (config.skill_key), until none does.
    `skills`: {name: Record}, changed in place; True when one changed."""
    keyed = [r.entry() for r in skills.values() if b'"skillKey' in r.text]
    marked = {name for name, r in skills.items() if b'"keyClaimed' in r.text}
    if not keyed and not marked:
        return False
    named = {e["name"] for e in keyed}
    claims = key_claims(keyed + [{"name": name} for name in skills if name not in named])
    changed = {}
    for entry in keyed:
        if entry.get("source") not in paths.ADDED:
            continue
        claimed = claims.get(entry["name"])
        if claimed and "skillKey" in entry:
            entry["skillKeyIgnored"] = entry.pop("skillKey")
        elif not claimed and "skillKeyIgnored" in entry:
            entry["skillKey"] = entry.pop("skillKeyIgnored")
        else:
            continue
        changed[entry["name"]] = entry
    keys = {e.get("skillKey") or e.get("skillKeyIgnored") for e in keyed}
    candidates = {**{name: skills[name].entry() for name in (keys | marked) - named if name in skills},
                  **{e["name"]: changed.get(e["name"], e) for e in keyed}}
    owned = name_claims(candidates.values(), claims)
    for name, entry in candidates.items():
        if (name in owned) != bool(entry.get("keyClaimed")):
            if name in owned:
                entry["keyClaimed"] = True
            else:
                entry.pop("keyClaimed")
            changed[name] = entry
    for name, entry in changed.items():
        skills[name] = Record.of(entry)
    return bool(changed)


def alias_table(entries, names=None):
    """({alias: skill}, [clash, ...]) of entries with aliases: an alias never hides a skill of that name
    (`names`, else the entries'), and one that two skills claim stands for neither."""
    entries = list(entries)
    names = {e["name"] for e in entries} if names is None else set(names)
    claims = {}
    for entry in entries:
        for alias in entry.get("aliases") or []:
            claims.setdefault(alias, []).append(entry["name"])
    table, clashes = {}, []
    for alias, owners in sorted(claims.items()):
        if alias in names:
            clashes.append((owners, f"alias '{alias}' is the name of a skill, which it never hides"))
        elif len(owners) > 1:
            clashes.append((owners, f"alias '{alias}' is claimed by {', '.join(owners)}: it stands for none of them"))
        else:
            table[alias] = owners[0]
    return table, clashes


def checked(name):
    """paths.checked_name, with the name likely meant when one is (disk_report: disk-report)."""
    try:
        return paths.checked_name(name)
    except UsageError as e:
        meant = "-".join(part for part in str(name).lower().replace("_", "-").replace(" ", "-").split("-") if part)
        if meant and paths.is_valid_name(meant):
            raise UsageError(f"{e}; did you mean '{meant}'?") from None
        raise


def find(manifest, name):
    """The entry of skill `name`; UsageError for a name no skill can have, NexusError with suggestions when
    there is none."""
    name = checked(name)
    text = manifest.find_line(name)
    aliases = manifest.head.get("aliases")
    if text is None and isinstance(aliases, dict) and isinstance(aliases.get(name), str):
        text = manifest.find_line(aliases[name])
    if text is not None:
        return fastjson.loads(text)
    for broken in manifest.invalid():
        if broken["name"] == name:
            where = f"{broken['filePath']}:{broken['line']}" if broken.get("line") else broken["filePath"]
            raise NexusError(f"Skill '{name}' is invalid: {where}: {broken['error']}")
    import difflib  # a suggestion for a name not found: never on the way of a name that is

    close = difflib.get_close_matches(name, manifest.names(), n=3, cutoff=0.6)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise NexusError(f"Skill '{name}' not found.{hint}\nRun 'nexus skills list' to see available skills.")
