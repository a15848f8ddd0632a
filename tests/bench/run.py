"""`make bench`: every target of nexus's speed, one row each, measured on this machine.

Protocol of a bench module (tests/bench/bench_*.py, run in name order):

    \"\"\"First line: what the module measures.\"\"\"
    from common import Case, Row, rounds, paired

    def rows(bench):
        root, env = bench.catalogue(1000)          # a scratch nexus with 1,000 skills, shared by modules
        times = rounds([Case("list", ["nexus", "skills", "list", "--json"], env)], 21)
        ratio = paired(times, "list")
        yield Row("skills list --json, 1,000 skills", f"{median(times['list']):.1f} ms", ratio, "<= 3x", ratio <= 3)

- `rows(bench)` yields Row(what, figure, ratio, target, ok): the figure as text with its unit, the ratio
  to the row's yardstick (or None), the target as text, and whether it was met.
- Time whole commands with `rounds(cases, count)`: each round runs `python -c pass` (the same
  interpreter nexus runs on) and then every case once, in an order that rotates; `paired(times, label,
  minus=None)` is the median over the rounds of (label - minus) / python in the same round. A ratio
  is always taken against `python -c pass` timed in the same rounds, never against a start time
  measured once. A Case's `before` runs untimed before each of its runs (to edit a file, say).
- Peak memory is `peak_mb(argv, env)`: the command's own process, read with wait4 by a small parent.
- `bench.catalogue(count, tool_every=1)` builds a nexus home of `count` skills once per `make bench`
  (tool skills with state.json, most verified; see common.make_catalogue) and returns (root, env);
  a module may edit its skills, but must leave them runnable. `bench.scratch(name)` is a fresh folder.
- Whatever a module builds goes under the run's scratch folder, removed at the end.

The table goes to stdout; the exit status is 1 when any row missed its target. Arguments name the
modules to run (`python tests/bench/run.py bench_run`); without them, every module runs.
"""

import importlib.util
import os
import pathlib
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

from common import bench_env, make_catalogue  # noqa: E402


class Bench:
    """What a module gets: shared catalogues and scratch folders under one temporary folder."""

    def __init__(self, top):
        self.top = top
        self._catalogues = {}

    def scratch(self, name):
        folder = self.top / name
        folder.mkdir(parents=True)
        return folder

    def catalogue(self, count, tool_every=1):
        key = (count, tool_every)
        if key not in self._catalogues:
            root = self.scratch(f"catalogue-{count}-{tool_every}")
            make_catalogue(root, count, tool_every)
            self._catalogues[key] = root, bench_env(root)
        return self._catalogues[key]


def main():
    print(f"# make bench: {os.cpu_count()} cores; ratios are to `python -c pass` timed in the same rounds (medians)")
    print(f"{'what':66} {'figure':>10} {'ratio':>7}  {'target':13} result")
    missed = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nexus-bench-") as top:
        bench = Bench(pathlib.Path(top))
        for path in sorted(HERE.glob("bench_*.py")):
            if sys.argv[1:] and path.stem not in sys.argv[1:]:
                continue
            spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            for row in module.rows(bench):
                missed += not row.ok
                ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "-"
                print(f"{row.what:66} {row.figure:>10} {ratio:>7}  {row.target:13} {'ok' if row.ok else 'MISSED'}",
                      flush=True)
    print(f"# {missed or 'no'} target{'' if missed == 1 else 's'} missed; {time.monotonic() - started:.0f} s")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
