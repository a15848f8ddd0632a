"""The usage logs read back: `nexus skill stats --json` over 500,000 log lines beside mawk counting the
same, and `nexus sessions` and `nexus report` over the same lines."""

import datetime
import importlib.util
import json

from common import Case, Row, bench_env, make_catalogue, median, paired, peak_mb, rounds

SKILLS, ENTRIES = 50, 10_000

# Per skill: calls, success rate and mean duration, as nexus reports them (mawk has no JSON parser:
# it finds the fields by pattern).
AWK = r"""
match($0, /"skill":"[^"]*"/) {
    skill = substr($0, RSTART + 9, RLENGTH - 10)
    calls[skill]++
    if (match($0, /"ms":[0-9.]+/)) ms[skill] += substr($0, RSTART + 5, RLENGTH - 5)
    if ($0 ~ /"exit":0[,}]/) ok[skill]++
}
END { for (s in calls) printf "%s %d %.4f %.0f\n", s, calls[s], ok[s] / calls[s], ms[s] / calls[s] }
"""


def write_logs(state_dir, names, now, entries=ENTRIES):
    """`entries` lines per skill as the gateway writes them (schema.usage_entry's keys, compact), oldest
    first, one every 4 minutes back from now, the calls of every 50 in a row in one session across the
    skills; every 10th fails."""
    from nexus import fastjson, schema

    stamps = [(now - datetime.timedelta(minutes=4 * (entries - i))).isoformat(timespec="milliseconds")
              .replace("+00:00", "Z") for i in range(entries)]
    for name in names:
        lines = []
        for i, ts in enumerate(stamps):
            failed = i % 10 == 0
            args = ["calendar", "events", "today"] if failed else ["gmail", "messages", "list", "--limit", "5"]
            entry = schema.usage_entry(ts, name, "tool", 100 + i % 900, args=args, exit=1 if failed else 0,
                                       error="rate limit exceeded" if failed else None, tool="gog",
                                       session=f"20261130-000000-{i // 50:08x}")
            lines.append(fastjson.dumps(entry) + "\n")
        (state_dir / name / "usage.log").write_text("".join(lines))


def check(env, mawk):
    """Both count the same calls, successes and mean durations: the race is between equals."""
    import subprocess

    report = json.loads(subprocess.run(["nexus", "skill", "stats", "--json"], env=env, capture_output=True,
                                       check=True).stdout)
    ours = {s["name"]: (s["totalInvocations"], s["successRate"], s["avgDurationMs"]) for s in report["skills"]}
    theirs = {}
    for line in subprocess.run(mawk, env=env, capture_output=True, text=True, check=True).stdout.splitlines():
        name, calls, rate, mean = line.split()
        theirs[name] = (int(calls), float(rate), int(mean))
    if ours != theirs:
        raise SystemExit("bench: nexus skill stats and mawk disagree")


def rows(bench):
    root = bench.scratch("stats")
    names = make_catalogue(root, SKILLS)
    env = bench_env(root)
    state = root / "nexus" / "state" / "nexus" / "skills"
    write_logs(state, names, datetime.datetime.now(datetime.timezone.utc))
    (root / "count.awk").write_text(AWK)
    logs = sorted(str(state / name / "usage.log") for name in names)
    hidden = bench.scratch("no-orjson")  # orjson made unimportable: the standard library's parser reads
    (hidden / "orjson.py").write_text("raise ImportError('hidden by make bench')\n")
    stats = Case("stats", ["nexus", "skill", "stats", "--json"], env)
    plain = Case("stats, no orjson", stats.argv, {**env, "PYTHONPATH": str(hidden)})
    mawk = Case("mawk", ["mawk", "-f", str(root / "count.awk"), *logs], env)
    check(env, mawk.argv)
    fast = importlib.util.find_spec("orjson") is not None
    times = rounds([stats, plain, mawk], 1)
    times = rounds([stats, plain, mawk], 7)
    # the fallback (the standard library's C scanner) within twice what mawk takes, orjson within 1.5 times
    for case, what, most in ((stats, "with orjson" if fast else "orjson not installed", 1.5),
                             (plain, "no orjson (the fallback)", 2)):
        ratio = median([s / m for s, m in zip(times[case.label], times["mawk"])])
        yield Row(f"skill stats --json, {SKILLS * ENTRIES:,} lines, {what}",
                  f"{median(times[case.label]) / 1000:.2f} s", ratio, f"<= {most:g}x mawk", ratio <= most)
    yield Row("  mawk counting the same (for reference)", f"{median(times['mawk']) / 1000:.2f} s",
              paired(times, "mawk"), "", True)

    sessions = Case("sessions", ["nexus", "sessions", "--json"], env)
    report = Case("report", ["nexus", "report", "-o", str(root / "report.html")], env)
    times = rounds([sessions, report], 5)
    for case, what in ((sessions, "sessions --json"), (report, "report -o FILE")):
        seconds = median(times[case.label]) / 1000
        yield Row(f"{what}, {SKILLS * ENTRIES:,} lines", f"{seconds:.2f} s", paired(times, case.label), "< 3 s",
                  seconds < 3)
    small = bench.scratch("stats-small")  # a tenth of the lines: memory that stays constant stays the same
    write_logs(small / "nexus" / "state" / "nexus" / "skills", make_catalogue(small, SKILLS),
               datetime.datetime.now(datetime.timezone.utc), ENTRIES // 10)
    big_mb, small_mb = peak_mb(sessions.argv, env), peak_mb(sessions.argv, bench_env(small))
    yield Row(f"  sessions --json peak memory, {SKILLS * ENTRIES:,} lines against a tenth of them",
              f"{big_mb:.1f} MB", big_mb / small_mb, "<= 1.25x", big_mb / small_mb <= 1.25)
