"""`nexus skill stats --json` over 50 skills x 10,000 usage entries: time and peak memory.

The logs are written directly, in the gateway's format, all within the default 30-day window so
every entry is aggregated. Peak memory is the child's own max RSS, from os.wait4.
"""

import datetime
import json
import os
import shutil
import statistics
import time

from common import bench_env, make_skills

SKILLS, ENTRIES, RUNS = 50, 10_000, 3
TARGET_S, TARGET_MB = 3.0, 100


def write_logs(state_dir, names, now):
    """ENTRIES lines per skill, oldest first, one every 4 minutes back from now; every 10th fails."""
    stamps = [(now - datetime.timedelta(minutes=4 * (ENTRIES - i))).isoformat(timespec="milliseconds")
              .replace("+00:00", "Z") for i in range(ENTRIES)]
    for name in names:
        ok = json.dumps({"skill": name, "type": "tool", "args": ["gmail", "messages", "list", "--limit", "5"],
                         "exit": 0, "tool": "gog"})[1:]
        failed = json.dumps({"skill": name, "type": "tool", "args": ["calendar", "events", "today"], "exit": 1,
                             "error": "rate limit exceeded", "tool": "gog"})[1:]
        folder = state_dir / name
        folder.mkdir(parents=True)
        lines = [f'{{"ts":"{ts}","ms":{100 + i % 900},{failed if i % 10 == 0 else ok}\n' for i, ts in enumerate(stamps)]
        (folder / "usage.log").write_text("".join(lines))


def run_measured(argv, env, out_path):
    """(seconds, peak RSS in MB, exit code) of one run of argv, stdout to out_path."""
    with open(out_path, "wb") as out:
        start = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=[(os.POSIX_SPAWN_DUP2, out.fileno(), 1)])
        _, status, usage = os.wait4(pid, 0)
        seconds = time.perf_counter() - start
    return seconds, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def run(workdir, python_start_ms):
    env = bench_env(workdir)
    home = workdir / "nexus"
    make_skills(home / "skills", SKILLS)
    names = sorted(p.name for p in (home / "skills").iterdir())
    write_logs(home / "state" / "nexus" / "skills", names, datetime.datetime.now(datetime.timezone.utc))
    argv = [shutil.which("nexus", path=env["PATH"]), "skill", "stats", "--json"]
    runs = [run_measured(argv, env, workdir / "stats.json") for _ in range(RUNS)]
    report = json.loads((workdir / "stats.json").read_text())
    correct = all(code == 0 for _, _, code in runs) and report["totalInvocations"] == SKILLS * ENTRIES
    seconds = statistics.median(s for s, _, _ in runs)
    peak = max(mb for _, mb, _ in runs)
    label = f"nexus skill stats --json, {SKILLS} x {ENTRIES:,} entries"
    return [
        (f"{label} (median of {RUNS})", f"{seconds:.2f} s", f"< {TARGET_S:g} s", correct and seconds < TARGET_S),
        (f"{label}, peak RSS", f"{peak:.1f} MB", f"< {TARGET_MB} MB", correct and peak < TARGET_MB),
    ]
