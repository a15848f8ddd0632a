"""Reading many skills as the ecosystem writes them, good and bad: nexus-discover over 3,000 mixed SKILL.md files."""

import sys

from common import HERE, Case, Row, median, paired, rounds

sys.path.insert(0, str(HERE.parent))  # tests/, for the mixed skills the suite checks for correctness
from helpers import write_mixed_skills  # noqa: E402


def rows(bench):
    root = bench.scratch("mixed")
    write_mixed_skills(root, 3000)
    discover = Case("discover", ["nexus-discover", "--invalid", str(root)])
    times = rounds([discover], 5)
    seconds = median(times["discover"]) / 1000
    yield Row("nexus-discover --invalid, 3,000 mixed skills (4 in 9 broken)", f"{seconds:.2f} s",
              paired(times, "discover"), "<= 3 s", seconds <= 3)
