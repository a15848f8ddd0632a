"""Verification: `nexus skills verify --all` of 100 skills whose verify is `true`, beside xargs -P2."""

import json
import subprocess

from common import Case, Row, bench_env, make_catalogue, median, rounds

SKILLS = 100


def rows(bench):
    root = bench.scratch("verify")
    make_catalogue(root, SKILLS, verify="true", missing=False)
    for tool in ("ffmpeg", "tmux", "python3"):  # the bundled skills' tools, as quick as true
        (root / "bin" / tool).symlink_to("/bin/true")
    env = bench_env(root)
    done = subprocess.run(["nexus", "skills", "verify", "--all", "--json"], env=env, capture_output=True, check=True)
    count = len(json.loads(done.stdout))  # the bundled tool and script skills are verified too: as many for xargs
    (root / "lines").write_text("x\n" * count)
    verify = Case("verify", ["nexus", "skills", "verify", "--all"], env)
    xargs = Case("xargs", ["xargs", "-P2", "-n1", "sh", "-c", "true"], env, stdin=str(root / "lines"))
    times = rounds([verify, xargs], 1)
    times = rounds([verify, xargs], 11)
    ratio = median([v / x for v, x in zip(times["verify"], times["xargs"])])
    yield Row(f"skills verify --all, {count} skills whose verify is true", f"{median(times['verify']):.0f} ms",
              ratio, "<= 2x xargs", ratio <= 2)
    yield Row(f"  xargs -P2 sh -c true, {count} times (for reference)", f"{median(times['xargs']):.0f} ms",
              None, "", True)
