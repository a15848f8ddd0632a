"""The catalogue: listing, status, and what one edit among many skills costs; a full refresh from nothing."""

import itertools

from common import TOOL, Case, Row, edit_skill, median, paired, rounds

LIST = ["nexus", "skills", "list", "--json"]


def rows(bench):
    root, env = bench.catalogue(1000)
    times = rounds([Case("list", LIST, env), Case("status", ["nexus", "status"], env)], 2)
    times = rounds([Case("list", LIST, env), Case("status", ["nexus", "status"], env)], 31)
    ratio = paired(times, "list")
    yield Row("skills list --json, 1,000 tool skills with state, fresh", f"{median(times['list']):.1f} ms", ratio,
              "<= 3x", ratio <= 3)
    ratio = paired(times, "status")
    yield Row("nexus status, 1,000 tool skills with state", f"{median(times['status']):.1f} ms", ratio,
              "<= 2x", ratio <= 2)

    root, env = bench.catalogue(10000)
    others = itertools.cycle(f"skill-{i:05d}" for i in range(1, 10000, 7))
    edit = lambda: edit_skill(root, next(others))  # noqa: E731 - a different skill before every run
    direct = Case("direct", [str(root / "bin" / TOOL), "hello", "world"], env)
    gateway = Case("gateway", ["nexus", "skill", "run", TOOL, "--", "hello", "world"], env, before=edit)
    rounds([direct, gateway, Case("list", LIST, env)], 1)
    times = rounds([direct, gateway], 21)
    ratio = paired(times, "gateway", minus="direct")
    figure = median(times["gateway"]) - median(times["direct"])
    yield Row("one SKILL.md of 10,000 edited: next skill run of another, overhead", f"{figure:.1f} ms", ratio,
              "<= 2x", ratio <= 2)
    times = rounds([Case("list", LIST, env, before=edit)], 9)
    seconds = median(times["list"]) / 1000
    yield Row("one SKILL.md of 10,000 edited: next skills list --json", f"{seconds:.3f} s", paired(times, "list"),
              "<= 0.25 s", seconds <= 0.25)

    state = root / "nexus" / "state" / "nexus" / "skills"
    cold = lambda: [p.unlink() for p in state.iterdir() if p.is_file()]  # noqa: E731 - the caches, not the state
    times = rounds([Case("refresh", ["nexus", "skills", "refresh"], env, before=cold)], 7)
    seconds = median(times["refresh"]) / 1000
    yield Row("cold skills refresh, 10,000 skills (their state kept)", f"{seconds:.3f} s", paired(times, "refresh"),
              "<= 0.6 s", seconds <= 0.6)
