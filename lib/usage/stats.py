"""Usage statistics: an Aggregator takes usage entries one at a time and keeps only running figures,
so a log of any length costs the same memory."""

import collections
import datetime
import heapq
import itertools
import math
import os

from .. import fastjson, paths, schema, shares
from ..catalog import listing, manifest as manifestlib
from ..style import Progress, plural
from ..skill.entry import skill_class
from ..state import skill_state, usage_log

RECENT_DAYS = 7  # the span of "recent failures" and of the daily bars
FUTURE_SLACK = datetime.timedelta(minutes=5)  # the clocks of concurrent writers may differ a little
ONE_MS = datetime.timedelta(milliseconds=1)
COMMAND_WORDS = 3
# Past these, a value was not written by a call (`"ms": 1e308`, NaN, an exit of 10**9): the line is skipped
# and counted as invalid, as a line of the wrong shape is.
MAX_MS = 366 * 86400 * 1000  # a call of over a year
MAX_EXIT, MIN_EXIT = 255, -255
TOP_COMMANDS = 5
TOP_ERRORS = 5
CATEGORIES = ("userData", "credentials", "prompts", "other")

CORRUPT = "not a JSON object"
INVALID = "missing or invalid ts, skill, type, ms or exit"
FUTURE = "timestamp in the future"
from_iso = datetime.datetime.fromisoformat
TYPES = schema.LOG_TYPES  # a tuple: a list or an object (unhashable) is simply not one of them
NUMBERS = (int, float)
BATCH = 8192  # lines counted between two settlings of the figures: what they hold unsettled stays small
POLICY = schema.POLICY_REFUSALS


def recent_days(days):
    return min(days, RECENT_DAYS)


def iso(moment):
    if moment is None:
        return None
    return moment.astimezone(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def command(args):
    """The leading words of a call's args, up to the first option: 'gmail messages list'; for a call of
    options alone, the options it gave, without their values: '--limit --json'."""
    words = []
    for arg in args[:COMMAND_WORDS]:
        if not isinstance(arg, str) or arg.startswith("-"):
            break
        words.append(arg)
    if words or not args:
        return " ".join(words)
    return " ".join(a.partition("=")[0] for a in args if isinstance(a, str) and a.startswith("-"))


def category(meta):
    """userData: the tool signs in to the user's accounts; credentials: the skill needs a secret."""
    return {"prompt": "prompts", "oauth": "userData", "api-key": "credentials", "cli": "other"}[skill_class(meta)]


class Durations:
    """p50 and p95 in one pass and little memory: a log-bucket histogram (the DDSketch method). Each
    duration falls in the bucket ceil(log(ms) / log(GAMMA)); a quantile is read back as the middle of
    its bucket, within ACCURACY (1%) of the exact value. A skill's durations take at most a few
    hundred buckets, however many calls it had."""

    ACCURACY = 0.01
    GAMMA = (1 + ACCURACY) / (1 - ACCURACY)
    LOG_GAMMA = math.log(GAMMA)

    __slots__ = ("buckets", "count")
    _bucket_of = {}  # duration -> bucket, for the durations seen: whole milliseconds repeat

    def __init__(self):
        self.buckets, self.count = {}, 0

    def add(self, ms, calls=1):
        bucket = self._bucket_of.get(ms)
        if bucket is None:
            bucket = math.ceil(math.log(ms) / self.LOG_GAMMA) if ms >= 1 else -math.inf
            if len(self._bucket_of) < 100_000:
                self._bucket_of[ms] = bucket
        self.buckets[bucket] = self.buckets.get(bucket, 0) + calls
        self.count += calls

    def merge(self, other):
        for bucket, count in other.buckets.items():
            self.buckets[bucket] = self.buckets.get(bucket, 0) + count
        self.count += other.count

    def quantile(self, q):
        """The duration within which a fraction q of the calls took, in whole milliseconds; None without
        calls. The nearest rank: the ceil(q * count)-th shortest call, so that p95 of a few calls is
        their slowest rather than a figure below the average."""
        if not self.count:
            return None
        rank, seen = max(1, math.ceil(round(q * self.count, 9))), 0  # round: 0.95 * 20 is 19.000000000000004
        for key in sorted(self.buckets):  # -inf holds the calls under a millisecond
            seen += self.buckets[key]
            if seen >= rank:
                return 0 if key == -math.inf else round(2 * self.GAMMA ** key / (self.GAMMA + 1))
        return None


class Figures:
    """The running figures of one skill, or of all of them. A call's duration is first counted by its value
    in `pending` (a plain dict: whole milliseconds repeat), and settled into calls, ms and durations by
    settle(), which the Aggregator calls after every batch of lines and before any figure is read."""

    __slots__ = ("calls", "successes", "refused", "ms", "last", "last_ok", "type", "tool", "durations", "pending")

    def __init__(self):
        self.calls = self.successes = self.refused = self.ms = 0
        self.last = self.last_ok = self.type = self.tool = None
        self.durations, self.pending = Durations(), {}

    def count(self, ts, ok, ms, type_, tool, policy=False):
        """One call; a refusal for `policy` counts as a call, never in the success rate."""
        pending = self.pending
        pending[ms] = pending.get(ms, 0) + 1
        if policy:
            self.refused += 1
        if ok:
            self.successes += 1
            if self.last_ok is None or ts > self.last_ok:
                self.last_ok = ts
        if self.last is None or ts >= self.last:
            self.last, self.type, self.tool = ts, type_, tool

    def settle(self):
        for ms, calls in self.pending.items():
            self.calls += calls
            self.ms += ms * calls
            self.durations.add(ms, calls)
        self.pending.clear()

    def merge(self, other):
        self.settle()
        other.settle()
        self.calls += other.calls
        self.successes += other.successes
        self.refused += other.refused
        self.ms += other.ms
        self.durations.merge(other.durations)
        if other.last_ok is not None and (self.last_ok is None or other.last_ok > self.last_ok):
            self.last_ok = other.last_ok
        if other.last is not None and (self.last is None or other.last >= self.last):  # as count() does
            self.last, self.type, self.tool = other.last, other.type, other.tool

    def as_json(self):
        self.settle()
        judged = self.calls - self.refused
        return {
            "totalInvocations": self.calls,
            "successRate": round(self.successes / judged, 4) if judged else None,
            "refusedForPolicy": self.refused,
            "avgDurationMs": round(self.ms / self.calls) if self.calls else None,
            "p50Ms": self.durations.quantile(0.5),
            "p95Ms": self.durations.quantile(0.95),
            "lastUsed": iso(self.last),
        }


def message_of(entry):
    """What a failed call's log says went wrong: its error, else its exit status."""
    error = entry.get("error")
    return error[:schema.ERROR_CHARS] if isinstance(error, str) and error else f"exit {entry.get('exit')}"


class Aggregator:
    """Figures of the entries within `days` of now: of every skill, or in detail of skill `name`."""

    def __init__(self, days, name=None, now=None, session=None, series=False, profile=None):
        self.now = now or datetime.datetime.now(datetime.timezone.utc)
        self.days, self.name, self.session, self.profile = days, name, session, profile
        # With `series` (for the usage report): calls and failures per local day and skill, and sessions.
        self.series = series
        self.per_day = collections.Counter()  # (local date, skill) -> calls
        self.failed_per_day = collections.Counter()  # (local date, skill, message) -> calls
        self.last_failed = {}  # (skill, message) -> the time of its newest failed call
        self._dates = {}  # a minute of UTC time -> its local date (local_date)
        self.sessions = None
        if series:
            from .sessions import Summary  # only for the usage report's series: sessions is not on the way of stats

            self.sessions = Summary()
        self.filtered = bool(name or session or profile)
        self.since = self.now - datetime.timedelta(days=days)
        self.recent = self.now - datetime.timedelta(days=recent_days(days))
        self.future = self.now + FUTURE_SLACK
        self.skills = {}  # name -> Figures
        self.failures = collections.Counter()  # (skill, message) -> calls, in the recent days
        self.skipped = collections.Counter()  # reason -> lines
        self.daily = collections.Counter()  # local date -> calls (skill `name` only)
        self.commands = collections.Counter()  # leading words of args -> calls (skill `name` only)
        self.errors = []  # a min-heap of the newest failures (skill `name` only)
        self.models = {}  # model -> Figures, of the calls an agent said its model for (NEXUS_MODEL)
        self.tokens = collections.Counter()  # (model, "promptTokens" or "completionTokens") -> tokens
        self._order = itertools.count()

    def add_lines(self, lines):
        """Count each of some JSON Lines (str): a usage entry, a blank line (ignored), or a line that is
        not a JSON object. Each line is parsed once (fastjson.values: orjson where it is
        installed): this loop is most of what `nexus skill stats` costs."""
        count, corrupt, lines = self.count, 0, iter(lines)
        for batch in iter(lambda: list(itertools.islice(lines, BATCH)), []):
            for entry in fastjson.values(batch):
                if type(entry) is dict:
                    count(entry)
                elif entry is not fastjson.BLANK:
                    corrupt += 1
            for figures in itertools.chain(self.skills.values(), self.models.values()):
                figures.settle()
        self.skipped[CORRUPT] += corrupt

    def count(self, entry):
        """Count one usage entry (add_lines settles the figures after it). Once per line: what it costs, with
        the parsing, is what `nexus skill stats` costs."""
        get = entry.get
        try:  # four fields every line has: a missing one is an invalid line, as a wrong one is
            text, name, type_, ms = entry["ts"], entry["skill"], entry["type"], entry["ms"]
            ts = from_iso(text)  # parse_iso, inline
        except (KeyError, TypeError, ValueError):
            self.skipped[INVALID] += 1
            return
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=datetime.timezone.utc)
        code = get("exit", 0)
        if (type(name) is not str or type_ not in TYPES or type(code) is not int or type(ms) not in NUMBERS
                or not 0 <= ms <= MAX_MS or not MIN_EXIT <= code <= MAX_EXIT):
            self.skipped[INVALID] += 1
            return
        if ts > self.future:
            self.skipped[FUTURE] += 1
            return
        if ts < self.since or self.filtered and ((self.name and name != self.name) or (
                self.session and get("session") != self.session) or (self.profile and get("profile") != self.profile)):
            return
        figures = self.skills.get(name)
        if figures is None:
            if not paths.is_valid_name(name):
                self.skipped[INVALID] += 1
                return
            figures = self.skills[name] = Figures()
        refused = get("refused")
        policy = refused is not None and type(refused) is str and refused in POLICY
        ok = code == 0 if "exit" in entry else not get("error")
        figures.count(ts, ok, ms, type_, get("tool"), policy)
        model = get("model")
        if model is not None and type(model) is str:
            self._by_model(model, entry, ts, ok, ms, type_, policy)
        if not (ok or policy):  # from here on: whether it failed
            self._failed(name, ts, entry)
        if self.filtered or self.series:
            self._detail_of(entry, name, text, ts, ok or policy)

    def _detail_of(self, entry, name, text, ts, ok):
        if self.series:
            day = self.local_date(text, ts)
            self.per_day[day, name] += 1
            if not ok:
                message = message_of(entry)
                self.failed_per_day[day, name, message] += 1
                if ts > self.last_failed.get((name, message), ts - ONE_MS):
                    self.last_failed[name, message] = ts
            self.sessions.add(entry, not ok)
        if self.name:
            self.daily[self.local_date(text, ts)] += 1
            if isinstance(entry.get("args"), list):
                self.commands[command(entry["args"])] += 1

    def _by_model(self, model, entry, ts, ok, ms, type_, policy):
        found = self.models.get(model)
        if found is None:
            found = self.models[model] = Figures()
        found.count(ts, ok, ms, type_, None, policy)
        for key in ("promptTokens", "completionTokens"):
            tokens = entry.get(key)
            if type(tokens) is int and tokens >= 0:
                self.tokens[model, key] += tokens

    def local_date(self, text, ts):
        """The local date of a call: its time `ts`, parsed from `text`. Converting a time to the local
        zone costs more than the rest of a line, so a canonical UTC time's date is remembered per
        minute (every zone's offset is a whole number of minutes), for the window's minutes at most."""
        if text[-1:] != "Z":
            return ts.astimezone().date()
        day = self._dates.get(text[:16])
        if day is None:
            if len(self._dates) > 100_000:
                self._dates.clear()
            day = self._dates[text[:16]] = ts.astimezone().date()
        return day

    def _failed(self, name, ts, entry):
        message = message_of(entry)
        if ts >= self.recent:
            self.failures[name, message] += 1
        if self.name:
            self._keep_error(ts, message, entry.get("exit"))

    def _keep_error(self, ts, message, code):
        item = (ts, next(self._order), message, code)
        if len(self.errors) < TOP_ERRORS:
            heapq.heappush(self.errors, item)
        else:
            heapq.heappushpop(self.errors, item)

    COUNTERS = ("failures", "skipped", "daily", "commands", "per_day", "failed_per_day", "tokens")

    def share(self):
        """What this aggregator gathered, as plain data that pickles, for another's merge()."""
        return {"skills": self.skills, "models": self.models, "errors": self.errors,
                "sessions": self.sessions and self.sessions.found, "lastFailed": self.last_failed,
                **{key: getattr(self, key) for key in self.COUNTERS}}

    def merge(self, share):
        """Add what another aggregator of the same window gathered (its share())."""
        for mine, theirs in ((self.skills, share["skills"]), (self.models, share["models"])):
            for name, figures in theirs.items():
                if name in mine:
                    mine[name].merge(figures)
                else:
                    mine[name] = figures
        for key in self.COUNTERS:
            getattr(self, key).update(share[key])
        for key, ts in share["lastFailed"].items():
            if ts > self.last_failed.get(key, ts - ONE_MS):
                self.last_failed[key] = ts
        for ts, _, message, code in share["errors"]:
            self._keep_error(ts, message, code)
        if self.sessions is not None:
            self.sessions.merge(share["sessions"])

    def like(self):
        """A new aggregator of the same window and filters."""
        return Aggregator(self.days, self.name, self.now, self.session, self.series, self.profile)

    def report(self, manifest_skills):
        """Every figure as plain data: the document `nexus skill stats --json` prints."""
        report = {"days": self.days, "since": iso(self.since), **({"session": self.session} if self.session else {}),
                  **({"profile": self.profile} if self.profile else {})}
        if self.models:  # skills spec 9.5: which model does best with what
            report["models"] = sorted(({"name": model, **figures.as_json(),
                                        **{key: self.tokens[model, key] for key in ("promptTokens", "completionTokens")}}
                                       for model, figures in self.models.items()),
                                      key=lambda m: (-m["totalInvocations"], m["name"]))
        if self.name:
            return {"name": self.name, **report, **self._skill(self.name, manifest_skills), **self._detail()}
        total = Figures()
        for figures in self.skills.values():
            total.merge(figures)
        skills = sorted((self._skill(n, manifest_skills) for n in self.skills),
                        key=lambda s: (-s["totalInvocations"], s["name"]))
        failures = [{"skill": skill, "error": message, "count": count}
                    for (skill, message), count in sorted(self.failures.items(), key=lambda i: (-i[1], i[0]))]
        categories = [{"name": c, "totalInvocations": sum(s["totalInvocations"] for s in skills if s["category"] == c),
                       "skills": [s["name"] for s in skills if s["category"] == c]} for c in CATEGORIES]
        return {**report, **total.as_json(), "skills": skills, "recentFailures": failures,
                "categories": categories, "skippedLines": sum(self.skipped.values())}

    def _skill(self, name, manifest_skills):
        figures = self.skills.get(name) or Figures()
        entry = manifest_skills.get(name)
        meta = entry or {"type": figures.type, "tool": figures.tool}
        return {"name": name, "type": schema.logged_type(meta), "category": category(meta),
                "removed": entry is None, **figures.as_json()}

    def _detail(self):
        figures = self.skills.get(self.name) or Figures()
        today = self.now.astimezone().date()
        span = recent_days(self.days)
        dates = [today - datetime.timedelta(days=n) for n in range(span - 1, -1, -1)]
        errors = [{"ts": iso(ts), "error": message, **({"exit": code} if code is not None else {}),
                   "resolved": figures.last_ok is not None and figures.last_ok > ts}
                  for ts, _, message, code in sorted(self.errors, reverse=True)]
        return {
            "daily": [{"date": d.isoformat(), "calls": self.daily[d]} for d in dates],
            "commonCommands": [{"command": c, "calls": n} for c, n in self.commands.most_common(TOP_COMMANDS)],
            "recentErrors": errors,
            "skippedLines": sum(self.skipped.values()),
        }


def feed(aggregator, label, lines, warn):
    """Add every line of one source of JSON Lines; one warning per kind of line skipped."""
    before = aggregator.skipped.copy()
    aggregator.add_lines(lines)
    said_skipped(aggregator, before, label, warn)


def said_skipped(aggregator, before, label, warn):
    """One warning per kind of line skipped since `before` (the aggregator's skipped counts then)."""
    for reason, count in (aggregator.skipped - before).items():
        warn(f"{label}: skipped {plural(count, 'line')}: {reason}")


def collect(config, days, name=None, stream=None, warn=None, session=None, aggregator=None, profile=None):
    """The report of the per-skill usage logs, or of `stream` (JSON Lines), with the skills' metadata;
    of one session's calls alone, with `session`, of one profile's with `profile`. An `aggregator` of the caller's own keeps what it
    gathers beside the report (the usage report's series)."""
    warn = warn or (lambda line: None)
    manifest = listing.current_manifest(config, warn)
    skills = manifest.skills()
    if name is not None:
        path = paths.usage_log(name)  # validates the name (even '') before it becomes a path
        if stream is None and name not in skills and not os.path.exists(path):
            manifestlib.find(manifest, name)  # raises "not found", with suggestions
    aggregator = aggregator or Aggregator(days, name, session=session, profile=profile)
    if stream is not None:
        feed(aggregator, "stdin", stream, warn)
        return aggregator.report(skills)
    logged = [name] if name else usage_log.logged_skills()
    feed_logs(aggregator, [paths.usage_log(skill) for skill in logged], warn)
    return {**aggregator.report(skills), **rotated(logged, aggregator.since)}


def rotated(names, since):
    """{"logsSince": {skill: the time of its oldest line}} of the skills whose log rotation cut within the
    window (the state keeps when: usage_log.prune), else {}: the window's figures reach back only that far."""
    found = {}
    for name in names:
        kept = skill_state.read(name).get("logSince")
        moment = schema.parse_iso(kept) if isinstance(kept, str) else None
        if moment is not None and moment > since:
            found[name] = kept
    return {"logsSince": found} if found else {}


def feed_logs(aggregator, logs, warn):
    """Add every line of some usage logs. Large logs are shared out between a process per CPU
    (nexus.shares): each share is counted into an aggregator of its own, whose figures are merged here."""
    dealt = shares.dealt(logs)
    weight = [sum(map(shares.size, share)) for share in dealt]
    progress = Progress("reading usage logs", total=sum(weight), size=True)  # by the megabyte: one log may be most
    if len(dealt) <= 1:
        with progress:
            for path in logs:
                feed_log(aggregator, path, warn, progress)
        return
    here = os.getpid()

    def counted(share):
        found, warnings = aggregator.like(), []
        for path in share:  # the others' logs are counted when their figures come back
            feed_log(found, path, warnings.append, progress if os.getpid() == here else None)
        return found.share(), warnings

    with progress:
        for n, (gathered, warnings) in enumerate(shares.mapped(counted, dealt)):
            aggregator.merge(gathered)
            for line in warnings:
                warn(line)
            if n:
                progress.step(weight[n])


CHUNK = 1 << 20  # of a log read at once: progress is said between chunks


def feed_log(aggregator, path, warn, progress=None):
    """Add every line of one usage log, a chunk at a time, stepping `progress` by its size; a log that is
    not there adds nothing."""
    try:
        with open(path, encoding="utf-8", errors="replace", newline="\n") as lines:
            before = aggregator.skipped.copy()
            for chunk in iter(lambda: lines.readlines(CHUNK), []):
                aggregator.add_lines(chunk)
                if progress is not None:
                    progress.step(sum(map(len, chunk)))
            said_skipped(aggregator, before, path, warn)
    except FileNotFoundError:
        pass
    except OSError as e:
        warn(f"cannot read '{path}': {e.strerror}")


def of_skills(names, days=30):
    """The Aggregator of a few skills' logs over the past `days`: only their logs are read."""
    aggregator = Aggregator(days)
    for name in names:
        feed_log(aggregator, paths.usage_log(name), lambda line: None)
    return aggregator


def success_rates(names, days=30):
    """{name: success rate over the past `days`, or None without calls}."""
    figures = of_skills(names, days).skills
    return {name: figures[name].as_json()["successRate"] if name in figures else None for name in names}


def call_counts(names, days=30):
    """{name: calls over the past `days`}."""
    return {name: figures.calls for name, figures in of_skills(names, days).skills.items()}
