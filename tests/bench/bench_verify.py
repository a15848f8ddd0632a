"""Verification: `nexus skills verify --all` of 100 skills whose verify is `true`, beside xargs -P2."""

from common import Case, Row, bench_env, make_catalogue, median, rounds

SKILLS = 100


def rows(bench):
    root = bench.scratch("verify")
    make_catalogue(root, SKILLS, verify="true", missing=False)
    env = bench_env(root)
    (root / "lines").write_text("x\n" * SKILLS)
    verify = Case("verify", ["nexus", "skills", "verify", "--all"], env)
    xargs = Case("xargs", ["xargs", "-P2", "-n1", "sh", "-c", "true"], env, stdin=str(root / "lines"))
    times = rounds([verify, xargs], 1)
    times = rounds([verify, xargs], 11)
    ratio = median([v / x for v, x in zip(times["verify"], times["xargs"])])
    yield Row(f"skills verify --all, {SKILLS} skills whose verify is true", f"{median(times['verify']):.0f} ms",
              ratio, "<= 2x xargs", ratio <= 2)
    yield Row(f"  xargs -P2 sh -c true, {SKILLS} times (for reference)", f"{median(times['xargs']):.0f} ms",
              None, "", True)
