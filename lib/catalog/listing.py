"""Every skill with its status, or one skill's entry: the manifest kept fresh, read with state and config.

Statuses are kept in status-cache.json, each skill's with exactly what it was computed from: its
entry (the CRC of its line in the manifest), the config (its CRC too: the file may hold keys, which
must not be copied), the platform, the day, which of the binaries and env vars it names are there
(looked up again each time), and for a tool or script skill the stamp (inode, size, mtime) of its
state.json. A listing computes again only what changed (every skill
after a config change, one skill after its SKILL.md or its state.json did), and reads a state.json
only then, and only where it matters (`nexus status` needs none of a skill that is not installed).
`nexus skills list --json` splices each status into the manifest's own line of the entry, which is
never parsed.

A catalogue where some skill requires a capability or another skill is settled as a whole
(capabilities.resolve): every record is parsed, since one skill's status then depends on others'.

Above the rows, the listing cache keeps the last listing whole (Listing.snapshot): `nexus status`'s counts
and `skills list --json`'s output, with everything they were computed from. While that holds (snapshot), a
listing is the manifest's stats, a stat of each state.json and a byte copy; after a few skills were edited
(manifest.updated), only their records are made again and put in place (patched).
"""

import os
import sys
import time
import zlib

from .. import __version__, config as configlib, fastjson, fileio, paths
from ..errors import BadInput, NexusError
from ..skill.entry import binaries, env_names, required
from ..state import skill_state
from . import manifest as manifestlib, scope, status

STATUS_KEYS = {"ready": "ready", "needs-setup": "needsSetup", "not-installed": "notInstalled",
               "disabled": "disabled", "invalid": "invalid", "unsupported": "unsupported"}
CACHE_LAYOUT = 2  # what a row holds and how a status is computed: another nexus, or this changed, computes all again
RACY_NS = 2 * 10**9  # a state.json this recent may change again within the tick of its mtime: never trusted
NO_STATE = 0  # the stamp of a prompt skill, whose state never matters
EVALUATED = manifestlib.EVALUATED  # the keys evaluate() adds; ADDED holds the JSON text of those after disabledReason


def current_manifest(config, warn):
    return manifestlib.current(configlib.sources(config), on_diagnostic=warn)


def entry(config, name, warn, scoped=True):
    """The manifest entry of one skill; rescans only when a source or that skill changed. NexusError for
    a skill outside the profile in force (scoped=False: any skill): an agent does not see what it is not given."""
    found = manifestlib.entry(configlib.sources(config), name, warn)
    profile = scoped and scope.chosen(config)
    if profile and not profile.admits(found):
        raise NexusError(profile.refusal(found["name"]))
    return found


class Row:
    """A skill's row of the status cache: what its status was computed from (`key`: the CRC of its
    manifest line; the binaries and env vars it names, and those of them `found` and `present`; the
    `stamp` of its state.json, NO_STATE for a prompt skill, None when it must be read again), then what
    was computed (`base`: the status without state; the JSON text of what is `missing`; the disabled
    `reason`; the `status`, and `added`, the JSON text of what the state adds), and `listed`: the members
    `nexus skills list --json` adds after those (',"permissions":{...}', '' for none; None until known, LIVE
    when they are made anew each time). The cache file holds each as a list of these fields in this order."""

    FIELDS = ("key", "bins", "env", "found", "present", "stamp", "base", "missing", "reason", "status", "added",
              "listed")
    __slots__ = FIELDS

    def __init__(self, key, bins, env, found, present, stamp, base, missing, reason, status, added, listed):
        self.key, self.bins, self.env, self.found, self.present, self.stamp = key, bins, env, found, present, stamp
        self.base, self.missing, self.reason, self.status, self.added, self.listed = \
            base, missing, reason, status, added, listed

    def as_list(self):
        return [self.key, self.bins, self.env, self.found, self.present, self.stamp, self.base, self.missing,
                self.reason, self.status, self.added, self.listed]


LIVE = "*"  # Row.listed of a record whose listed members depend on more than its row: made anew each time


class Listing:
    """The records of a fresh manifest, skills by name and then the broken ones, with their statuses;
    with a profile, only those in its scope (a provider outside it is no provider for the agent)."""

    def __init__(self, manifest, rows, profile=None, cache=None):
        self.manifest, self.rows, self.profile, self.hidden = manifest, rows, profile, 0
        self.cache = cache  # (the inputs that key the status cache, whether a row changed since it was read)
        self.live = []  # the records listed_texts made anew (listing.LIVE): (index, the text made from)
        self.shown = None  # where listed_json put each skill's record: [start, end], None where it is not shown
        # One skill's status depends on others' only when some skill requires something.
        self.settled = None
        if profile:  # every record parsed, to match names, globs and capabilities against the profile
            every = self._records()
            self.settled = [r for r in every if profile.admits(r)]
            self.hidden = len(every) - len(self.settled)  # said wherever the listing is: a filter shows
        if manifest.head.get("requirements", True):  # most catalogues need neither the module nor the work
            from . import capabilities

            self.settled = capabilities.resolve(self.settled if profile else self._records())

    def briefs(self):
        """{'name', 'status'} of every record, with the health flags and their reasons where one is set,
        and a broken SKILL.md's filePath and error: what `nexus status` counts, read without parsing a
        valid entry."""
        if self.settled is not None:
            return self.settled
        found = []
        for name, row in zip(self.manifest.names(), self.rows):
            brief = {"name": name, "status": row.status}
            if '"degraded":true' in row.added or '"drifted":true' in row.added:
                brief.update(fastjson.loads(row.added))
            found.append(brief)
        return found + [{"status": "invalid", **fastjson.loads(line.rstrip(b","))} for line in self.manifest.lines()[1]]

    def texts(self, keep=lambda status: True):
        """The JSON text of each record kept by keep(status): the entry merged with what evaluate() adds."""
        if self.settled is not None:
            return [fastjson.dumps(r).encode() for r in self.settled if keep(r["status"])]
        return [text for text, status_, _ in self._texts() if keep(status_)]

    def _texts(self):
        """(JSON text, status, row; None for a broken skill) of every record."""
        skill_lines, invalid_lines = self.manifest.lines()[:2]
        # An entry with one of these keys of its own (piped in, say) is merged with them, not spliced.
        clash = self.manifest.head.get("evaluatedKeys", True)
        for line, row in zip(skill_lines, self.rows):
            yield _spliced(line, row, clash), row.status, row
        for line in invalid_lines:
            yield line.rstrip(b","), "invalid", None

    def _records(self):
        return [fastjson.loads(text) for text, _, _ in self._texts()]

    def json(self, keep=lambda status: True):
        """The JSON array of the records kept, as bytes."""
        return b"[" + b",".join(self.texts(keep)) + b"]"

    def records(self, keep=lambda status: True):
        if self.settled is not None:
            return [r for r in self.settled if keep(r["status"])]
        return [fastjson.loads(text) for text, status_, _ in self._texts() if keep(status_)]

    def listed_texts(self, keep, members):
        """The JSON text of each record kept, with the members `nexus skills list --json` adds (each row's
        `listed`): `members(text)` -> (the record's text with them, the members to keep or LIVE) makes them
        where they are not known or not kept, and for a broken skill. Outside a settled catalogue only; the
        cache is written when one was made (`save`)."""
        found, self.shown = [], []
        for text, status_, row in self._texts():
            if row is not None:
                self.shown.append(len(found) if keep(status_) else None)  # where each skill's record lies
            if not keep(status_):
                continue
            if row is None or row.listed is None or row.listed == LIVE:
                made, kept = members(text)
                if kept == LIVE:
                    self.live.append((len(found), text))
                if row is not None and row.listed is None:
                    row.listed = kept
                    self.cache[1] = True
                text = made
            elif row.listed:
                text = text[:-1] + row.listed.encode() + b"}"
            found.append(text)
        return found

    def listed_json(self, keep, members):
        """The JSON array of listed_texts(), as bytes; `live` holds where each record made anew lies in it:
        [(start, end, the text members() made it from)]."""
        texts, at, where = self.listed_texts(keep, members), 1, {}
        for index, text in enumerate(texts):
            where[index] = at
            at += len(text) + 1
        self.live = [(where[index], where[index] + len(texts[index]), text) for index, text in self.live]
        self.shown = [None if index is None else [where[index], where[index] + len(texts[index])]
                      for index in self.shown]
        return b"[" + b",".join(texts) + b"]"

    def save(self):
        """Write the status cache when a row changed since it was read."""
        if self.cache and self.cache[1]:
            _write_cache(self.cache[0], dict(zip(self.manifest.names(), self.rows)))
            self.cache[1] = False

    def snapshot(self, complete, listed=None, keep=None):
        """Keep this listing as a whole in the listing cache: its counts (summary()), and `listed`, the output of
        `skills list --json` for the filter named `keep` (where its records made anew lie in it: `live`, from
        listed_json), with what they were computed from (`snapshot`). Only for
        a listing that its rows settle alone (no profile, no requirements) and whose every row is sure (no
        state.json too recent to trust); `complete`: every row's state was read (Listing.rows of states=True),
        else only where the status needs it."""
        if self.settled is not None or self.profile is not None or not self.cache:
            return
        needs, states = {}, []
        for name, row in zip(self.manifest.names(), self.rows):
            needs.setdefault((*row.bins, None, *row.env), [row.bins, row.env, row.found, row.present])
            if row.stamp != NO_STATE and (complete or row.base == "ready"):
                if row.stamp is None:
                    return  # it must be read again next time: nothing to keep
                states.append([name, row.stamp, row.base == "ready"])  # the last: `nexus status` reads it
        listed = listed or b""
        live = [[start, end, text.decode("latin-1")] for start, end, text in self.live] if listed else []
        briefs = self.briefs()
        head = {"key": [self.cache[0], zlib.crc32(self.manifest.whole())], "complete": complete,
                "needs": list(needs.values()), "states": states, "summary": summary(briefs),
                "keep": keep if listed else None, "crc": zlib.crc32(listed), "live": live,
                # what patched() needs to put an edited skill's record in its place
                "shown": self.shown if listed else None, "briefs": briefs[:len(self.rows)]}
        _keep(head, listed)


def _keep(head, listed):
    try:
        fileio.write_atomic(paths.listing_cache(), fastjson.dumps(head).encode() + b"\n" + listed)
    except OSError:
        pass  # only slower


def _spliced(line, row, clash):
    """The JSON text of a skill's record: its manifest line's entry with what its row adds. `clash`: some entry
    may have one of those keys of its own (the manifest's head says), and is merged with them, not spliced."""
    text = manifestlib.entry_text(line)
    extra = f'"status":"{row.status}","missing":{row.missing},'
    if row.reason:
        extra += '"disabledReason":' + fastjson.dumps(row.reason) + ","
    extra += row.added[1:-1]
    if clash and any(key in text for key in EVALUATED):
        merged = {**fastjson.loads(text), **fastjson.loads("{" + extra + "}")}  # its keys keep their place
        return fastjson.dumps(merged).encode()
    return manifestlib.with_members(text, extra.encode())


def listed(config, warn, states=True, scoped=True, save=True, manifest=None):
    """The Listing of every skill in the scope of the profile in force (scoped=False: every skill). With
    states=False only the statuses are sure (as `nexus status` needs them): `verified` may be stale where
    the status does not depend on the state. save=False: the caller writes the status cache (Listing.save).
    `manifest`: current_manifest(), when the caller has it."""
    manifest = manifest if manifest is not None else current_manifest(config, warn)  # an empty one is one
    rows, cache = _rows(manifest, config, warn, states)
    found = Listing(manifest, rows, scope.chosen(config) if scoped else None, cache)
    if save:
        found.save()
    return found


def _rows(manifest, config, warn, states):
    """(a row per skill of the manifest: the cached one where nothing it depends on changed, else
    computed again; [the inputs that key the cache, whether a row was computed again])."""
    cache, inputs = _read_cache(), _inputs(config)
    cached = cache["skills"] if cache and all(cache.get(k) == v for k, v in inputs.items()) else {}
    checker, now, root = status.Checker(config), time.time_ns(), paths.skills_state()
    rows, changed = [], not cached
    for line in manifest.lines()[0]:
        name, key = line[1:line.index(b'"', 1)].decode(), zlib.crc32(line)
        row, skill = cached.get(name), None
        if row is None or row.key != key or _present(checker, row.bins, row.env) != [row.found, row.present]:
            skill = _entry(line)
            listed_ = row.listed if row is not None and row.key == key else None  # what the entry and config make
            row, changed = _computed(checker, skill, key), True
            row.listed = listed_
        if row.stamp != NO_STATE and (states or row.base == "ready"):  # its state matters here
            path = f"{root}/{paths.checked_name(name)}/state.json"  # paths.state_file, its root found once
            if row.stamp is None or row.stamp != _stamp(path):
                skill = skill or _entry(line)
                row.stamp = _stamp(path, now)
                state = skill_state.of(skill, warn)  # read after its stamp: a change meanwhile is seen next time
                row.status, row.added = _with_state(checker, skill, row.base, state)
                changed = True
        rows.append(row)
    return rows, [inputs, changed]


def _inputs(config):
    """What keys the whole status cache."""
    day = time.strftime("%Y-%m-%d", time.gmtime())  # health looks back a number of days
    return {"config": zlib.crc32(fastjson.dumps(config).encode()), "platform": sys.platform, "day": day,
            "nexus": __version__, "layout": CACHE_LAYOUT}


def _needs_hold(checker, needs):
    """True when each [bins, env, found, present] kept is still what is found and present."""
    return all(_present(checker, bins, env) == [found, present] for bins, env, found, present in needs)


def _entry(line):
    """The entry of a skill's line in the manifest."""
    return fastjson.loads(manifestlib.entry_text(line))


def _present(checker, bins, env):
    """[the binaries found, the env vars set] among those named."""
    return [[b for b in bins if checker.has_binary(b)], [n for n in env if status.is_set(checker.environ.get(n))]]


def _computed(checker, skill, key):
    """A new row: what the skill's status depends on, and its status as far as its state does not
    matter (the state is read where it does)."""
    script = status.script_file(skill)  # looked up as the binaries are: a script removed is seen next time
    bins, env = sorted({*binaries(skill), *required(skill, "anyBins"), *([script] if script else [])}), env_names(skill)
    prompt = skill.get("type") == "prompt"
    base, missing, reason = checker.without_state(skill)
    return Row(key, bins, env, *_present(checker, bins, env), NO_STATE if prompt else None, base,
               fastjson.dumps(missing), reason, *_with_state(checker, skill, base, {}), None)


def _with_state(checker, skill, base, state):
    """[status, the JSON text of what else the state adds] (status.Checker.with_state)."""
    found, added = checker.with_state(skill, base, state)
    return [found, fastjson.dumps(added)]


def _stamp(path, now=None):
    """[inode, size, mtime] of a state.json ([] when there is none); with `now`, None when it is too
    recent to be trusted later (it may change again within its mtime's tick)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return []
    except OSError:
        return None
    if now is not None and info.st_mtime_ns > now - RACY_NS:
        return None
    return [info.st_ino, info.st_size, info.st_mtime_ns]


TEXTS = tuple(Row.FIELDS.index(field) for field in ("missing", "added", "listed"))  # JSON texts that many rows share:
# the cache file holds each different one once, in "texts", and a row its index there


def _read_cache():
    """The cache, its rows as Rows, when it has the shape this nexus writes; None otherwise (it is only
    slower)."""
    try:
        cache = fastjson.loads(fileio.read_own(paths.status_cache()) or b"null")  # another's, or a link: not ours
        texts, skills = cache["texts"], cache["skills"]
        for name, row in skills.items():
            for field in TEXTS:
                row[field] = texts[row[field]]
            row = skills[name] = Row(*row)
            "".join(row.bins + row.env + row.found + row.present)  # TypeError unless lists of names
            if not (type(row.key) is int and row.status in STATUS_KEYS and row.base in STATUS_KEYS
                    and (row.stamp is None or type(row.stamp) is list or row.stamp == NO_STATE)
                    and row.missing[:1] == row.added[:1] == "{" and (row.reason is None or type(row.reason) is str)
                    and (row.listed in (None, "", LIVE) or row.listed.startswith(',"permissions":{'))):
                return None  # not what this nexus writes: computed again
        return cache
    except (BadInput, TypeError, KeyError, IndexError, AttributeError, ValueError):  # ValueError: a row's length
        return None


def _write_cache(inputs, skills):
    texts, rows = {}, {}
    for name, row in skills.items():
        row = rows[name] = row.as_list()
        for field in TEXTS:
            row[field] = texts.setdefault(row[field], len(texts))
    try:
        fileio.write_json(paths.status_cache(), {**inputs, "texts": list(texts), "skills": rows})
    except OSError:
        pass  # a cache that cannot be written is only slower


SUMMARY_KEYS = {*STATUS_KEYS.values(), "degraded", "drifted", "failing"}


def read_kept():
    """(the head of the listing cache, parsed, or None; the output after it): read once for snapshot() and
    patched(). The file is input: one not nexus's own is not read (fileio.read_own)."""
    data = fileio.read_own(paths.listing_cache())
    head, _, listed = (data or b"").partition(b"\n")
    try:
        return fastjson.loads(head), listed
    except ValueError:
        return None, b""


def snapshot(manifest, config, complete, keep=None, kept=None):
    """(the counts, the output of `skills list --json` for the filter named `keep` or None, where its records
    made anew lie in it: [(start, end, text)]) of the listing kept
    by Listing.snapshot, when nothing it was computed from changed: the manifest (fresh) and the inputs of the
    status cache, which of the binaries and env vars named are there, and the stamp of each state.json it
    read (`complete`: of every skill, as a listing that shows what the state adds needs); else None. The
    file is input: one not nexus's own, or of another shape, is not used. `kept`: read_kept(), when read."""
    if manifest.head.get("requirements", True) or scope.chosen(config) is not None:
        return None
    head, listed = kept if kept is not None else read_kept()
    try:
        counts = head["summary"]
        if (head["key"] != [_inputs(config), zlib.crc32(manifest.whole())]
                or (complete and head["complete"] is not True) or set(counts) != SUMMARY_KEYS
                or any(type(count) is not int for count in counts.values())):
            return None
        checker, root = status.Checker(config), paths.skills_state()
        if not _needs_hold(checker, head["needs"]):
            return None
        for name, stamp, ready in head["states"]:
            if (complete or ready) and _stamp(f"{root}/{paths.checked_name(name)}/state.json") != stamp:
                return None
        live = _holes(head["live"], listed)
        listed = listed if keep is not None and head["keep"] == keep and zlib.crc32(listed) == head["crc"] else None
    except (ValueError, TypeError, KeyError, AttributeError, NexusError):  # UsageError: a name that is none
        return None
    return counts, listed, live


def patched(manifest, config, keep, selected, members, warn, kept=None):
    """The output of `skills list --json` for the filter named `keep` (`selected(status)`), from the listing kept
    whole (snapshot) where the manifest was updated in place since (manifest.updated: a few skills edited):
    each edited skill's record made again and put in its place, the counts mended, the listing cache written
    again (`kept`: read_kept(), when read). None where the listing kept is of another manifest or the filter, or
    anything else changed (as
    snapshot() checks), or an edited record moves in or out of what is shown, or is made anew each time."""
    if not manifest.edited or manifest.head.get("requirements", True) or scope.chosen(config) is not None:
        return None
    head, listed = kept if kept is not None else read_kept()
    try:
        inputs = _inputs(config)
        shown, briefs, counts, states = head["shown"], head["briefs"], head["summary"], head["states"]
        skill_lines = manifest.lines()[0]
        if (head["key"] != [inputs, manifest.before] or head["complete"] is not True or head["keep"] != keep
                or zlib.crc32(listed) != head["crc"] or not len(shown) == len(skill_lines) == len(briefs)
                or set(counts) != SUMMARY_KEYS):
            return None
        checker, root, now = status.Checker(config), paths.skills_state(), time.time_ns()
        if not _needs_hold(checker, head["needs"]):
            return None
        edited = dict((name, i) for i, name in manifest.edited)
        for name, stamp, _ in states:
            if name not in edited and _stamp(f"{root}/{paths.checked_name(name)}/state.json") != stamp:
                return None
        states = [state for state in states if state[0] not in edited]
        clash, parts, at, moved = manifest.head.get("evaluatedKeys", True), [], 0, []
        for name, i in sorted(edited.items(), key=lambda item: item[1]):
            line = skill_lines[i]
            skill = _entry(line)
            row = _computed(checker, skill, zlib.crc32(line))
            if row.stamp != NO_STATE:
                row.stamp = _stamp(f"{root}/{paths.checked_name(name)}/state.json", now)
                if row.stamp is None:
                    return None  # too recent to keep: the listing is made as a whole
                row.status, row.added = _with_state(checker, skill, row.base, skill_state.of(skill, warn))
                states.append([name, row.stamp, row.base == "ready"])
            head["needs"].append([row.bins, row.env, row.found, row.present])
            span = shown[i]
            if (span is None) != (not selected(row.status)) or span is not None and any(
                    start < span[1] and span[0] < end for start, end, _ in head["live"]):
                return None
            brief = {"name": name, "status": row.status}
            if '"degraded":true' in row.added or '"drifted":true' in row.added:
                brief.update(fastjson.loads(row.added))
            for key, count in summary([briefs[i]]).items():
                counts[key] -= count
            for key, count in summary([brief]).items():
                counts[key] += count
            briefs[i] = brief
            if span is not None:
                if not (type(span[0]) is int and type(span[1]) is int and at <= span[0] <= span[1] <= len(listed)):
                    return None  # not where a record can lie
                made, kept = members(_spliced(line, row, clash))
                if kept == LIVE:
                    return None
                parts += [listed[at:span[0]], made]
                at = span[1]
                moved.append((span[1], len(made) - (span[1] - span[0])))
        import bisect  # an edit's listing only

        listed = b"".join(parts + [listed[at:]])
        ends, by = [end for end, _ in moved], [0]
        for _, change in moved:
            by.append(by[-1] + change)

        def shifted(where):  # a place in the output: moved by the records made again that end before it
            return where + by[bisect.bisect_right(ends, where)]

        head["shown"] = [span and [shifted(span[0]), shifted(span[1])] for span in shown]  # an edited one's end too
        head["live"] = [[shifted(start), shifted(end), text] for start, end, text in head["live"]]
        live = _holes(head["live"], listed)
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, NexusError):
        return None
    head.update(key=[inputs, zlib.crc32(manifest.whole())], states=states, crc=zlib.crc32(listed))
    _keep(head, listed)
    return filled(listed, live, members)


def _holes(live, listed):
    """[(start, end, text)] of a listing cache's `live`: ValueError unless each lies in order within `listed`."""
    found, at = [], 0
    for start, end, text in live:
        if not (type(start) is int and type(end) is int and at <= start <= end <= len(listed)):
            raise ValueError("not where a record lies")
        found.append((start, end, text.encode("latin-1")))
        at = end
    return found


def filled(listed, live, members):
    """The output of a listing kept (snapshot), each record that is made anew made (`members`, as listed_texts
    takes it)."""
    parts, at = [], 0
    for start, end, text in live:
        parts += [listed[at:start], members(text)[0]]
        at = end
    return b"".join(parts + [listed[at:]])


def evaluate_all(manifest, config, warn):
    """Every record of `manifest` (fresh) in the profile's scope, with its status."""
    return listed(config, warn, manifest=manifest).records()


def records(config, warn):
    """Every skill with its status, for the commands that show them all."""
    return listed(config, warn).records()


def settled(config, name, warn=None):
    """(the record of skill `name`, every record): its status as the whole catalogue settles it, for a skill
    that requires a capability or another skill (the gateway's gate, `skill show`)."""
    found = records(config, warn)
    return next(r for r in found if r["name"] == name), found


def summary(found):
    """How many skills have each status: {"ready": N, "needsSetup": N, ...}, how many are degraded or
    have drifted (flags judged only for skills installed and configured: status.Checker.with_state), and
    how many of the ready ones are failing (status.failing: `ready` counts them too)."""
    counts = dict.fromkeys(STATUS_KEYS.values(), 0)
    counts.update(degraded=0, drifted=0, failing=0)
    for record in found:
        counts[STATUS_KEYS[record["status"]]] += 1
        counts["degraded"] += bool(record.get("degraded"))
        counts["drifted"] += bool(record.get("drifted"))
        counts["failing"] += status.failing(record)
    return counts


def filtered(found):
    """{"profile": name, "hidden": N} of the profile in force over a Listing, or None: what a listing says
    of the skills it does not show."""
    return {"profile": found.profile.name, "hidden": found.hidden} if found.profile else None


def unhealthy(found):
    """Every skill that is degraded or has drifted, and every SKILL.md that is invalid: (name or file,
    what, why), for `nexus status --check`."""
    flagged = [(r["name"], flag, r[flag + "Reason"]) for r in found for flag in ("degraded", "drifted") if r.get(flag)]
    return flagged + [(r.get("filePath") or r.get("name"), "invalid", r.get("error") or "")
                      for r in found if r["status"] == "invalid"]
