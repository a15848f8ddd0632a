"""nexus-stats and `nexus skill stats` against figures computed here from the logs the tests write;
every kind of bad input; `nexus status`; `nexus skills rotate`, also while runs append."""

import collections
import datetime
import json
import os
import pty
import random
import shutil
import subprocess
import sys

import pytest
from helpers import bundled_names, write_config, write_log, write_raw, write_skill

NOW = datetime.datetime.now(datetime.timezone.utc)


DAY_MINUTES = 24 * 60


@pytest.fixture(autouse=True)
def now():
    """Each test's own "now": one taken at import ages by the minutes a long suite takes to get here."""
    global NOW
    NOW = datetime.datetime.now(datetime.timezone.utc)


def iso(moment):
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ago(now=None, **delta):
    """The time `delta` before `now` (by default NOW, when the tests were collected)."""
    return iso((now or NOW) - datetime.timedelta(**delta))


def parse(ts):
    return datetime.datetime.fromisoformat(ts)


def age_days(entry):
    return (NOW - parse(entry["ts"])).total_seconds() / 86400


def run_json(script_runner, *argv, **kwargs):
    result = script_runner.run(list(argv), **kwargs)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# The expected figures, computed from the entries the test wrote.

def succeeded(entry):
    return entry["exit"] == 0 if "exit" in entry else "error" not in entry


def refused_for_policy(entry):
    return entry.get("refused") == "disabled"


def failed(entry):
    """A failure of the skill: a refusal for policy is none."""
    return not succeeded(entry) and not refused_for_policy(entry)


def message(entry):
    return entry.get("error") or f"exit {entry['exit']}"


def figures(entries):
    calls, refused = len(entries), sum(map(refused_for_policy, entries))
    return {
        "totalInvocations": calls,
        "successRate": round(sum(map(succeeded, entries)) / (calls - refused), 4),
        "refusedForPolicy": refused,
        "avgDurationMs": round(sum(e["ms"] for e in entries) / calls),
        "lastUsed": max(e["ts"] for e in entries),  # canonical UTC strings sort as times
    }


# name -> (metadata.nexus, category): the category follows from the metadata alone.
SKILLS = {
    "gog": ({}, "userData"),  # a known tool that signs in to the user's account
    "search": ({"tool": "search", "primaryEnv": "SEARCH_KEY"}, "credentials"),
    "notes": ({}, "prompts"),
    "tmux": ({}, "other"),
}
GONE = "gone"  # has a log but no SKILL.md any more
GOG_COMMANDS = [  # args, calls in the window: distinct counts, so the ranking is unambiguous
    (["gmail", "messages", "list", "--limit", "5"], 12),
    (["calendar", "events", "today"], 8),
    (["drive", "files", "list", "--all"], 5),
    (["gmail", "send", "-t", "me@example.com"], 3),
    (["--limit", "3", "--token=***", "--json"], 4),  # options alone: shown by their names, never their values
    ([], 2),
    (["tasks", "list", "done", "extra"], 1),
]
EXPECTED_COMMANDS = [{"command": "gmail messages list", "calls": 12}, {"command": "calendar events today", "calls": 8},
                     {"command": "drive files list", "calls": 5}, {"command": "--limit --token --json", "calls": 4},
                     {"command": "gmail send", "calls": 3}]
ERRORS = ["rate limit exceeded", "token expired", "network unreachable"]


def random_age(rng, days):
    """Minutes ago, clear of the 7-day and 30-day edges, which the tool measures from a later `now`."""
    while True:
        minutes = rng.uniform(1, days * DAY_MINUTES)
        if all(abs(minutes - edge * DAY_MINUTES) > 60 for edge in (7, 30)):
            return minutes


def tool_entry(rng, name, args, minutes):
    entry = {"ts": ago(minutes=minutes), "skill": name, "type": "tool", "args": args, "ms": rng.randint(5, 4000)}
    roll = rng.random()
    if roll < 0.05:
        entry.update(exit=1, error="Skill is disabled", refused="disabled")  # a call, but no failure of the skill
    elif roll < 0.15:
        entry["error"] = "not configured"  # refused before running: no exit code
    elif roll < 0.4:
        entry["exit"] = rng.choice([1, 2, 124])
        if rng.random() < 0.7:
            entry["error"] = rng.choice(ERRORS)
    else:
        entry["exit"] = 0
    return entry


@pytest.fixture
def usage(workspace, nexus_home):
    """Skills and logs with known content; returns every entry written, in and out of the window."""
    rng = random.Random(4)
    for name, (meta, _) in SKILLS.items():
        write_skill(workspace, name, meta=meta)
    entries = []
    for args, calls in GOG_COMMANDS:
        entries += [tool_entry(rng, "gog", args, random_age(rng, 29)) for _ in range(calls)]
    entries += [tool_entry(rng, "gog", ["old", "command"], rng.uniform(31, 40) * DAY_MINUTES) for _ in range(20)]
    for name in ("search", "tmux", GONE):
        entries += [tool_entry(rng, name, ["query", str(i)], random_age(rng, 40)) for i in range(rng.randint(20, 50))]
    entries += [{"ts": ago(minutes=random_age(rng, 40)), "skill": "notes", "type": "prompt", "ms": rng.randint(1, 9)}
                for _ in range(30)]
    for name in (*SKILLS, GONE):
        write_log(nexus_home, name, sorted((e for e in entries if e["skill"] == name), key=lambda e: e["ts"]))
    return entries


def expected_all(entries):
    window = [e for e in entries if age_days(e) < 30]
    skills = []
    for name in (*SKILLS, GONE):
        mine = [e for e in window if e["skill"] == name]
        category = SKILLS[name][1] if name in SKILLS else "other"
        skills.append({"name": name, "type": mine[0]["type"], "category": category, "removed": name == GONE,
                       **figures(mine)})
    skills.sort(key=lambda s: (-s["totalInvocations"], s["name"]))
    failures = collections.Counter((e["skill"], message(e)) for e in window if age_days(e) < 7 and failed(e))
    categories = [{"name": c, "totalInvocations": sum(s["totalInvocations"] for s in skills if s["category"] == c),
                   "skills": [s["name"] for s in skills if s["category"] == c]}
                  for c in ("userData", "credentials", "prompts", "other")]
    return {"days": 30, **figures(window), "skills": skills,
            "recentFailures": [{"skill": s, "error": m, "count": n}
                               for (s, m), n in sorted(failures.items(), key=lambda i: (-i[1], i[0]))],
            "categories": categories, "skippedLines": 0}


def expected_gog(entries):
    window = [e for e in entries if e["skill"] == "gog" and age_days(e) < 30]
    today = datetime.datetime.now().astimezone().date()
    dates = [today - datetime.timedelta(days=n) for n in range(6, -1, -1)]
    per_date = collections.Counter(parse(e["ts"]).astimezone().date() for e in window)
    failures = sorted((e for e in window if failed(e)), key=lambda e: e["ts"], reverse=True)[:5]
    errors = [{"ts": e["ts"], "error": message(e), **({"exit": e["exit"]} if "exit" in e else {}),
               "resolved": any(succeeded(s) and s["ts"] > e["ts"] for s in window)} for e in failures]
    return {"name": "gog", "days": 30, "type": "tool", "category": "userData", "removed": False, **figures(window),
            "daily": [{"date": d.isoformat(), "calls": per_date[d]} for d in dates],
            "commonCommands": EXPECTED_COMMANDS, "recentErrors": errors, "skippedLines": 0}


def exact_quantile(values, q):
    """The nearest-rank quantile: the ceil(q * n)-th smallest value, the largest for p95 of few values."""
    import fractions
    import math

    return sorted(values)[max(1, math.ceil(fractions.Fraction(str(q)) * len(values))) - 1]


def test_p50_and_p95_are_exact_quantiles_for_small_samples(script_runner, workspace, nexus_home):
    rng = random.Random(25)
    now = datetime.datetime.now(datetime.timezone.utc)
    samples = {}
    for n in range(1, 51):
        name = f"s{n}"
        write_skill(workspace, name, meta={"tool": "sh"})
        samples[name] = [rng.choice((0, 1, 2, 7, 40, 300, 999, 4321, rng.randrange(10_000))) for _ in range(n)]
        write_log(nexus_home, name, [{"ts": ago(now, minutes=i + 1), "skill": name, "type": "tool", "ms": ms, "exit": 0}
                                     for i, ms in enumerate(samples[name])])
    report = json.loads(script_runner.run(["nexus", "skill", "stats", "--json"]).stdout)
    assert len(report["skills"]) == 50
    for skill in report["skills"]:
        for key, q in (("p50Ms", 0.5), ("p95Ms", 0.95)):
            exact = exact_quantile(samples[skill["name"]], q)
            assert abs(skill[key] - exact) <= exact * 0.01 + 0.5, (skill["name"], key, skill[key], exact)
    write_skill(workspace, "two", meta={"tool": "sh"})  # the case: p95 was the faster call, below the average
    write_log(nexus_home, "two", [{"ts": ago(now, minutes=m), "skill": "two", "type": "tool", "ms": ms, "exit": 0}
                                  for m, ms in ((2, 300), (1, 1))])
    shown = script_runner.run(["nexus", "skill", "stats", "two"]).stdout
    assert "(p50 1ms, p95 0.3s)" in shown


def quantiles_checked(figures_, entries):
    """Take p50Ms and p95Ms out of a report's figures, after checking each is within 1% (and the
    rounding to whole milliseconds) of the exact quantile of the entries' durations."""
    for key, q in (("p50Ms", 0.5), ("p95Ms", 0.95)):
        exact = exact_quantile([e["ms"] for e in entries], q)
        assert abs(figures_.pop(key) - exact) <= exact * 0.01 + 1, key
    return figures_


def without_since(report, window):
    """The report without its `since` (a time the tool takes when it runs) and with its quantiles checked."""
    assert report.pop("since").endswith("Z")
    quantiles_checked(report, window)
    for skill in report.get("skills", []):
        quantiles_checked(skill, [e for e in window if e["skill"] == skill["name"]])
    return report


def in_window(entries, skill=None):
    return [e for e in entries if age_days(e) < 30 and skill in (None, e["skill"])]


def test_all_skills_figures_match(script_runner, usage):
    expected, window = expected_all(usage), in_window(usage)
    assert without_since(run_json(script_runner, "nexus-stats", "--json"), window) == expected
    assert without_since(run_json(script_runner, "nexus", "skill", "stats", "--json"), window) == expected


def test_one_skill_figures_match(script_runner, usage):
    expected = expected_gog(usage)
    assert sum(d["calls"] for d in expected["daily"]) > 0 and expected["recentErrors"]
    window = in_window(usage, "gog")
    assert without_since(run_json(script_runner, "nexus-stats", "gog", "--json"), window) == expected
    assert without_since(run_json(script_runner, "nexus", "skill", "stats", "gog", "--json"), window) == expected


def test_days_narrows_the_window(script_runner, usage):
    report = run_json(script_runner, "nexus", "skill", "stats", "--days", "3", "--json")
    assert report["totalInvocations"] == sum(1 for e in usage if age_days(e) < 3)
    gog = run_json(script_runner, "nexus", "skill", "stats", "gog", "--days", "3", "--json")
    assert len(gog["daily"]) == 3


def test_stdin_gives_the_same_figures(script_runner, usage, nexus_home, tmp_path):
    combined = tmp_path / "all.log"
    logs = sorted((nexus_home / "state" / "nexus" / "skills").glob("*/usage.log"))
    combined.write_text("".join(p.read_text() for p in logs))
    with combined.open() as stdin:
        report = run_json(script_runner, "nexus-stats", "--stdin", "--json", stdin=stdin)
    assert without_since(report, in_window(usage)) == expected_all(usage)


def test_human_output_all_skills(script_runner, usage):
    result = script_runner.run(["nexus", "skill", "stats"])
    assert result.returncode == 0, result.stderr
    out = result.stdout
    expected = expected_all(usage)
    assert out.splitlines()[:3] == ["=" * 63, "NEXUS SKILL USAGE STATISTICS", "=" * 63]
    assert f"Total invocations: {expected['totalInvocations']} (past 30 days)" in out
    rows = {line.split()[1]: line for line in out.splitlines() if line[:5].strip().rstrip(".").isdigit()}
    assert set(rows) == {*SKILLS, GONE}
    for skill in expected["skills"]:
        assert f" {skill['totalInvocations']} " in rows[skill["name"]]
    assert "(prompt)" in rows["notes"] and "(removed)" in rows[GONE]
    assert "Recent Failures (past 7 days):" in out and "Skill Categories:" in out
    failures = expected["recentFailures"]
    shown = [line for line in out.splitlines() if line.startswith("  - ") and "occurrence" in line]
    assert len(shown) == len(failures)
    top = failures[0]
    assert shown[0] == f'  - {top["skill"]}: "{top["error"]}" ({top["count"]} occurrence{"s" * (top["count"] != 1)})'
    assert out.isascii() and "\033" not in out  # not a terminal: plain ASCII
    assert script_runner.run(["nexus-stats"]).stdout == out  # the plumbing prints the same layout


def test_human_output_lists_ten_failure_messages(script_runner, workspace, nexus_home):
    write_skill(workspace, "tmux")
    write_log(nexus_home, "tmux", [{"ts": ago(hours=n + 1), "skill": "tmux", "type": "tool", "exit": 1, "ms": 5,
                                    "error": f"failure number {n}"} for n in range(13)])
    out = script_runner.run(["nexus", "skill", "stats"]).stdout
    assert sum(line.startswith('  - tmux: "failure number') for line in out.splitlines()) == 10
    assert "  - 3 other messages: see --json" in out


def test_human_output_one_skill_with_bars(script_runner, workspace, nexus_home):
    write_skill(workspace, "gog")
    now = datetime.datetime.now(datetime.timezone.utc)  # not NOW: the suite may have run for minutes since
    counts = {0: 4, 1: 2, 3: 1}  # days ago -> calls
    entries = [{"ts": ago(now, days=days, minutes=2 + i), "skill": "gog", "type": "tool", "args": ["x"], "exit": 0,
                "ms": 1500} for days, calls in counts.items() for i in range(calls)]
    entries.append({"ts": ago(now, hours=2, minutes=5), "skill": "gog", "type": "tool", "args": ["x"], "exit": 3,
                    "error": "rate limit exceeded", "ms": 500})
    write_log(nexus_home, "gog", sorted(entries, key=lambda e: e["ts"]))
    result = script_runner.run(["nexus", "skill", "stats", "gog"])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "GOG USAGE STATISTICS" in lines and "Average duration: 1.4s (p50 1.5s, p95 1.5s)" in lines
    per_date = collections.Counter(parse(e["ts"]).astimezone().date() for e in entries)
    bars = [line for line in lines if line.startswith("  ") and line[2:5].isalpha() and line[5] == ":"]
    assert [int(line.split()[-1]) for line in bars] == [per_date[datetime.datetime.now().astimezone().date()
                                                                 - datetime.timedelta(days=n)] for n in range(6, -1, -1)]
    largest = max(per_date.values())
    for line in bars:
        calls = int(line.split()[-1])
        assert line.count("#") == round(30 * calls / largest)  # scaled to the largest day
    assert "  1. x (8 calls)" in lines
    # a later call succeeded, so the error is marked resolved
    assert any(line.startswith("  - ") and line.endswith(': "rate limit exceeded" (resolved)') for line in lines)
    (last_used,) = [line for line in lines if line.startswith("Last used: ")]
    assert last_used.endswith("(2 minutes ago)")  # the newest call is the 2-minute-old one


def test_relative_time_in_the_table(script_runner, workspace, nexus_home):
    write_skill(workspace, "tmux")
    write_log(nexus_home, "tmux", [{"ts": ago(hours=2, minutes=5), "skill": "tmux", "type": "tool", "exit": 0, "ms": 300}])
    result = script_runner.run(["nexus", "skill", "stats"])
    row = next(line for line in result.stdout.splitlines() if " tmux " in line)
    assert row.split()[1:5] == ["tmux", "1", "100%", "0.3s"] and row.endswith("2 hours ago")


def run_on_tty(argv, **env):
    """Run argv with stdout on a pseudo-terminal; returns (exit code, stdout, stderr)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE,
                            env={**os.environ, **env})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=30), b"".join(chunks).decode(), proc.stderr.read().decode()


def test_terminal_gets_bars_and_no_color_plain(workspace, nexus_home):
    write_skill(workspace, "tmux")
    write_log(nexus_home, "tmux", [{"ts": ago(minutes=5), "skill": "tmux", "type": "tool", "exit": 0, "ms": 3}])
    argv = [shutil.which("nexus"), "skill", "stats", "tmux"]
    code, out, err = run_on_tty(argv)
    assert code == 0, err
    assert "█" * 30 in out and "═" in out
    code, out, err = run_on_tty(argv, NO_COLOR="1")
    assert code == 0, err
    assert "#" * 30 in out and "█" not in out and "\033" not in out


# Bad input: counted or reported, never a traceback.

def test_corrupt_lines_are_skipped_and_counted(script_runner, workspace, nexus_home):
    write_skill(workspace, "tmux")
    good = {"ts": ago(hours=1), "skill": "tmux", "type": "tool", "exit": 0, "ms": 10}
    path = write_log(nexus_home, "tmux", [good, "garbage", '{"ts": "', "[1, 2]", '"text"', "", "   ", good,
                                          '{"ts": "x"} trailing', "[" * 5000])  # past any parser's nesting
    with path.open("ab") as f:
        f.write(b'\xff\xfe not json\n' + json.dumps({**good, "error": "caf\xe9"}).encode("latin-1") + b"\n")
    for argv in (["nexus-stats", "--json"], ["nexus", "skill", "stats", "tmux", "--json"]):
        result = script_runner.run(argv)
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["totalInvocations"] == 3  # the non-UTF-8 line still counts
        assert report["skippedLines"] == 7
        assert f"{path}: skipped 7 lines: not a JSON object" in result.stderr
        assert "Traceback" not in result.stderr


@pytest.mark.once
def test_usage_logs_read_the_same_with_orjson_and_without(workspace, nexus_home, tmp_path):
    pytest.importorskip("orjson")  # the fast extra, which make's venv has
    write_skill(workspace, "tmux")
    good = {"ts": ago(hours=1), "skill": "tmux", "type": "tool", "exit": 0, "ms": 10}
    text = json.dumps(good)
    path = write_log(nexus_home, "tmux", [
        good, {**good, "exit": 3, "error": "caf\u00e9 \U0001f600"}, text.replace('"ms": 10', '"ms": NaN'),
        text.replace('"exit": 0', '"exit": 123456789012345678901234567890'), text.replace("{", '{"ms": -1, ', 1),
        text.replace('"tool"', '"tool\\udcff"'), "garbage", "", "  ", f"{text} {text}", f"  {text}\t", "[" * 5000])
    with path.open("ab") as f:
        f.write(text.replace("10", "11").encode().replace(b'"tool"', b'"t\xffol"') + b"\n")
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "orjson.py").write_text("raise ImportError('hidden by the test')\n")
    runs = [subprocess.run(["nexus-stats", "--json"], env={**os.environ, **env}, capture_output=True, text=True)
            for env in ({}, {"PYTHONPATH": str(hidden)})]
    assert runs[0].returncode == runs[1].returncode == 0, runs[1].stderr
    reports = [{k: v for k, v in json.loads(run.stdout).items() if k != "since"} for run in runs]  # now - 30 days
    assert reports[0] == reports[1] and runs[0].stderr == runs[1].stderr
    report = reports[0]
    assert report["totalInvocations"] == 4 and report["skippedLines"] == 7, report


@pytest.mark.parametrize("broken", [
    {"skill": "tmux", "type": "tool", "ms": 1},  # no ts
    {"ts": "yesterday", "skill": "tmux", "type": "tool", "ms": 1},
    {"ts": "NOW", "type": "tool", "ms": 1},  # no skill
    {"ts": "NOW", "skill": "tmux", "ms": 1},  # no type
    {"ts": "NOW", "skill": "tmux", "type": "shell", "ms": 1},
    {"ts": "NOW", "skill": "tmux", "type": ["tool"], "ms": 1},  # a list or an object: a traceback before
    {"ts": "NOW", "skill": "tmux", "type": {"tool": 1}, "ms": 1},
    {"ts": "NOW", "skill": "tmux", "type": "tool"},  # no ms
    {"ts": "NOW", "skill": "tmux", "type": "tool", "ms": "12"},
    {"ts": "NOW", "skill": "tmux", "type": "tool", "ms": -5},
    {"ts": "NOW", "skill": "tmux", "type": "tool", "ms": 1, "exit": "0"},
    {"ts": "NOW", "skill": ["tmux"], "type": "tool", "ms": 1},
    {"ts": "NOW", "skill": "../etc", "type": "tool", "ms": 1},
    {"ts": 12345, "skill": "tmux", "type": "tool", "ms": 1},
    {"ts": "NOW", "skill": "tmux", "type": "tool", "ms": 1e308},  # out of any sane range: no call wrote it
    {"ts": "NOW", "skill": "tmux", "type": "tool", "ms": 366 * 86400 * 1000 + 1},
    {"ts": "NOW", "skill": "tmux", "type": "tool", "ms": 1, "exit": 10**9},
    {"ts": "NOW", "skill": "tmux", "type": "tool", "ms": 1, "exit": -256},
])
def test_entries_missing_fields_are_skipped(script_runner, workspace, nexus_home, broken):
    write_skill(workspace, "tmux")
    good = {"ts": ago(hours=1), "skill": "tmux", "type": "tool", "exit": 0, "ms": 10}
    if broken.get("ts") == "NOW":
        broken["ts"] = good["ts"]
    path = write_log(nexus_home, "tmux", [good, broken, good, '{"ts": "%s", "skill": "tmux", "type": "tool", "ms": NaN}'
                                          % good["ts"]])
    result = script_runner.run(["nexus-stats", "--json"])
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["totalInvocations"], report["skippedLines"]) == (2, 2)
    assert [s["name"] for s in report["skills"]] == ["tmux"]
    assert f"{path}: skipped 2 lines: missing or invalid ts, skill, type, ms or exit" in result.stderr


def test_future_timestamps_are_skipped(script_runner, workspace, nexus_home):
    write_skill(workspace, "tmux")
    entry = {"skill": "tmux", "type": "tool", "exit": 0, "ms": 10}
    path = write_log(nexus_home, "tmux", [{**entry, "ts": ago(hours=1)}, {**entry, "ts": ago(days=-2)},
                                          {**entry, "ts": "2999-01-01T00:00:00Z"},
                                          {**entry, "ts": ago(minutes=-1)}])  # a slightly fast clock is fine
    result = script_runner.run(["nexus", "skill", "stats", "--json"])
    report = json.loads(result.stdout)
    assert (report["totalInvocations"], report["skippedLines"]) == (2, 2)
    assert f"{path}: skipped 2 lines: timestamp in the future" in result.stderr


def test_empty_logs_and_no_logs(script_runner, workspace, nexus_home):
    write_skill(workspace, "tmux")
    for argv in (["nexus-stats", "--json"], ["nexus", "skill", "stats", "tmux", "--json"]):
        report = run_json(script_runner, *argv)
        assert report["totalInvocations"] == 0 and report["successRate"] is None and report["lastUsed"] is None
    write_log(nexus_home, "tmux", [])
    report = run_json(script_runner, "nexus-stats", "--json")
    assert (report["totalInvocations"], report["skills"], report["skippedLines"]) == (0, [], 0)
    human = script_runner.run(["nexus", "skill", "stats"])
    assert human.returncode == 0 and "No skill was used in this window." in human.stdout
    one = script_runner.run(["nexus", "skill", "stats", "tmux"])
    assert one.returncode == 0 and "'tmux' was not used in this window." in one.stdout


def test_log_of_a_removed_skill_still_counts(script_runner, workspace, nexus_home):
    write_log(nexus_home, "gone", [{"ts": ago(hours=3), "skill": "gone", "type": "tool", "exit": 1, "ms": 7}])
    report = run_json(script_runner, "nexus-stats", "--json")
    assert report["totalInvocations"] == 1
    assert report["skills"][0] | {"lastUsed": None} == {"name": "gone", "type": "tool", "category": "other",
                                                        "removed": True, "totalInvocations": 1, "successRate": 0.0, "refusedForPolicy": 0,
                                                        "avgDurationMs": 7, "p50Ms": 7, "p95Ms": 7,
                                                        "lastUsed": None}
    assert run_json(script_runner, "nexus", "skill", "stats", "gone", "--json")["totalInvocations"] == 1
    assert "gone (removed)" in script_runner.run(["nexus", "skill", "stats"]).stdout


def test_unknown_skill_is_refused(script_runner, workspace):
    write_skill(workspace, "tmux")
    result = script_runner.run(["nexus", "skill", "stats", "tmx"])
    assert result.returncode == 1
    assert "Skill 'tmx' not found. Did you mean: tmux?" in result.stderr
    result = script_runner.run(["nexus-stats", "Bad/Name"])
    assert result.returncode == 2 and "invalid skill name" in result.stderr


@pytest.mark.parametrize("days", ["0", "-1", "-30", "abc", "1.5", "99999999"])
def test_bad_days_is_a_usage_error(script_runner, days):
    for argv in (["nexus-stats", "--days", days], ["nexus", "skill", "stats", f"--days={days}", "--json"]):
        result = script_runner.run(argv)
        assert result.returncode == 2
        assert f"--days needs a whole number from 1 to 36,500, not '{days}'" in result.stderr
        assert "Traceback" not in result.stderr and result.stdout == ""


def test_stdin_on_a_terminal_is_refused_not_awaited():
    master, slave = pty.openpty()
    try:
        result = subprocess.run([shutil.which("nexus-stats"), "--stdin"], stdin=slave, capture_output=True,
                                text=True, timeout=30)
    finally:
        os.close(slave)
        os.close(master)
    assert result.returncode == 2
    assert "stdin is a terminal or closed" in result.stderr


@pytest.mark.parametrize("argv", [["nexus-stats"], ["nexus", "skill", "stats"], ["nexus", "status"],
                                  ["nexus", "skills", "rotate"]])
def test_help(script_runner, argv):
    result = script_runner.run([*argv, "--help"])
    assert result.returncode == 0 and "Usage:" in result.stdout


# nexus status

def test_status_counts_every_status(script_runner, workspace, nexus_home):
    write_skill(workspace, "ready-one")
    write_skill(workspace, "needs-key", meta={"requires": {"env": ["NEXUS_TEST_UNSET_KEY"]}})
    write_skill(workspace, "needs-bin", meta={"requires": {"bins": ["nexus-test-no-such-binary"]}})
    write_skill(workspace, "switched-off")
    write_skill(workspace, "elsewhere", meta={"os": ["win32" if sys.platform != "win32" else "darwin"]})
    # allowBundled = [] disables every bundled skill, so the counts do not depend on this machine's tools
    write_config(nexus_home, "[skills]\nallowBundled = []\n[skills.entries.switched-off]\nenabled = false\n")
    disabled = 1 + len(bundled_names())
    result = script_runner.run(["nexus", "status"])
    assert result.returncode == 0, result.stderr
    first, sandbox = result.stdout.splitlines()
    assert first == f"nexus: 1 ready, 1 need setup, 1 not installed, {disabled} disabled"
    assert sandbox.startswith("sandbox: ") and sandbox.endswith("(skills.sandbox.mode: untrusted)")  # README says so
    write_raw(workspace, "broken", "---\nname: broken\n---\nno description\n")
    result = script_runner.run(["nexus", "status"])
    assert result.stdout.startswith(f"nexus: 1 ready, 1 need setup, 1 not installed, {disabled} disabled, 1 invalid\n")
    counts = run_json(script_runner, "nexus", "status", "--json")
    assert counts.pop("sandbox")["mode"] == "untrusted"  # what confinement offers: tests/test_sandbox.py
    assert counts == {
        "ready": 1, "needsSetup": 1, "notInstalled": 1, "disabled": disabled, "invalid": 1, "unsupported": 1,
        "degraded": 0, "drifted": 0, "failing": 0}
    assert script_runner.run(["nexus", "skills", "list", "--summary"]).stdout == result.stdout.splitlines(True)[0]



# nexus skills rotate

def seq_lines(name, count):
    return [{"ts": ago(minutes=count - i), "skill": name, "type": "tool", "exit": 0, "ms": 1, "seq": i}
            for i in range(count)]


def log_seqs(nexus_home, name):
    text = (nexus_home / "state" / "nexus" / "skills" / name / "usage.log").read_text()
    return [json.loads(line)["seq"] for line in text.splitlines()]


def test_rotate_keeps_the_newest_entries(script_runner, nexus_home):
    write_config(nexus_home, "[skills.log]\nmaxEntries = 10\n")
    write_log(nexus_home, "busy", seq_lines("busy", 25))
    write_log(nexus_home, "quiet", seq_lines("quiet", 5))
    report = run_json(script_runner, "nexus", "skills", "rotate", "--json")
    assert report == {"skills": [{"name": "busy", "logEntries": 10}, {"name": "quiet", "logEntries": 5}],
                      "maxEntries": 10, "maxBytes": 2 * 1024 * 1024, "jobsRemoved": 0}
    assert log_seqs(nexus_home, "busy") == list(range(15, 25))
    assert log_seqs(nexus_home, "quiet") == list(range(5))
    state = json.loads((nexus_home / "state" / "nexus" / "skills" / "busy" / "state.json").read_text())
    assert state["logEntries"] == 10
    result = script_runner.run(["nexus", "skills", "rotate"])
    assert result.stdout == ("nexus: rotated 2 usage logs to at most 10 entries and 2,097,152 bytes each; "
                             "removed 0 ended jobs\n")


def test_rotate_keeps_within_max_bytes(script_runner, nexus_home):
    lines = seq_lines("busy", 20)
    size = len(json.dumps(lines[-1])) + 1
    write_config(nexus_home, f"[skills.log]\nmaxBytes = {size * 3 + 1}\n")
    write_log(nexus_home, "busy", lines)
    assert run_json(script_runner, "nexus", "skills", "rotate", "--json")["skills"] == [{"name": "busy", "logEntries": 3}]
    assert log_seqs(nexus_home, "busy") == [17, 18, 19]


APPENDER = """
import sys
from nexus import config
from nexus.state import skill_state, usage_log
name, count = sys.argv[1], int(sys.argv[2])
settings = config.load()
for _ in range(count):
    with skill_state.Update(name) as current:
        current["seq"] = current.get("seq", 0) + 1  # the global order of appends, kept under the lock
        entry = {"ts": "2026-01-01T00:00:00.000Z", "skill": name, "type": "tool", "exit": 0, "ms": 1,
                 "seq": current["seq"]}
        usage_log.append(name, current, entry, settings)
"""


def test_rotate_while_runs_append_loses_nothing_beyond_the_limit(script_runner, nexus_home):
    write_config(nexus_home, "[skills.log]\nmaxEntries = 40\n")
    write_log(nexus_home, "busy", [])
    writers, appends = 4, 150
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, "busy", str(appends)]) for _ in range(writers)]
    rotations_during = 0
    while any(p.poll() is None for p in procs):
        assert script_runner.run(["nexus", "skills", "rotate"]).returncode == 0
        rotations_during += 1
    assert [p.wait() for p in procs] == [0] * writers
    assert rotations_during > 0
    assert script_runner.run(["nexus", "skills", "rotate"]).returncode == 0
    total = writers * appends
    seqs = log_seqs(nexus_home, "busy")  # every line parses as JSON
    # The log holds the newest entries without a gap: rotation dropped only what the limit prunes.
    assert 36 <= len(seqs) <= 40
    assert seqs == list(range(total - len(seqs) + 1, total + 1))


def away_from_the_edge(minutes, days=30):
    """`minutes`, moved two hours back when within an hour of `days`: a window's edge moves as time passes."""
    return minutes + 120 if abs(minutes - days * DAY_MINUTES) < 60 else minutes


@pytest.mark.once
def test_large_logs_shared_between_processes_give_the_figures_of_one_stream(script_runner, workspace, nexus_home,
                                                                            tmp_path):
    """Over 16 MB of logs are counted by a process per CPU and merged (stats.feed_logs); `--stdin` reads
    the same lines in one process: the two reports must be the same, warnings included."""
    rng, logs = random.Random(7), []
    for n, name in enumerate(("alpha", "beta", "gamma")):
        write_skill(workspace, name, meta={"tool": "sh"})
        # none within an hour of the 30 days' edge: the two runs start seconds apart on a loaded machine
        lines = [json.dumps({"ts": ago(minutes=away_from_the_edge(rng.uniform(1, 40 * DAY_MINUTES))), "skill": name,
                             "type": "tool",
                             "ms": rng.randint(1, 9000), "args": ["x" * 120, str(i)], "exit": rng.choice([0, 0, 0, 1]),
                             "session": f"s{i % 97}", **({"error": f"e{i % 5}"} if i % 4 == 0 else {})})
                 for i in range(30_000 + n * 5_000)]
        lines[n * 7] = "{torn"
        logs.append(write_log(nexus_home, name, lines))
    assert sum(path.stat().st_size for path in logs) > 16 * 1024 * 1024
    combined = tmp_path / "all.log"
    combined.write_bytes(b"".join(path.read_bytes() for path in logs))
    shared = script_runner.run(["nexus-stats", "--json"])
    with combined.open() as stdin:
        streamed = script_runner.run(["nexus-stats", "--stdin", "--json"], stdin=stdin)
    assert shared.returncode == streamed.returncode == 0
    reports = [json.loads(result.stdout) for result in (shared, streamed)]
    for report in reports:
        report.pop("since")
    assert reports[0] == reports[1] and reports[0]["skippedLines"] == 3
    assert shared.stderr.count("skipped 1 line") == 3 and streamed.stderr.count("skipped 3 lines") == 1


def test_after_rotation_the_window_says_how_far_back_the_log_goes(script_runner, workspace, nexus_home):
    from helpers import write_config, write_log

    write_skill(workspace, "feed", meta={"tool": "sh"})
    now = datetime.datetime.now(datetime.timezone.utc)
    write_log(nexus_home, "feed", [{"ts": (now - datetime.timedelta(days=20 - n)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                                    "skill": "feed", "type": "tool", "ms": 5, "exit": 0} for n in range(20)])
    whole = script_runner.run(["nexus", "skill", "stats"]).stdout
    assert "Total invocations: 20 (past 30 days)\n" in whole
    write_config(nexus_home, "[skills.log]\nmaxEntries = 2\n")
    assert script_runner.run(["nexus", "skills", "rotate"]).returncode == 0
    report = json.loads(script_runner.run(["nexus", "skill", "stats", "--json"]).stdout)
    kept = (now - datetime.timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert report["totalInvocations"] == 2 and report["logsSince"] == {"feed": kept}
    since = datetime.datetime.fromisoformat(kept.replace("Z", "+00:00")).astimezone().strftime("%Y-%m-%d")
    assert f"Total invocations: 2 (past 30 days; the log of feed holds calls since {since} only)" in \
        script_runner.run(["nexus", "skill", "stats"]).stdout
    assert f"(past 30 days; the log holds calls since {since} only)" in \
        script_runner.run(["nexus", "skill", "stats", "feed"]).stdout
