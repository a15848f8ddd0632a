"""`make bench`: run every tests/bench/bench_*.py in a scratch NEXUS_HOME and print its figures.

Each bench module has run(workdir) -> list of (label, value, target) rows; the figures go to
stdout as a table, beside the bare interpreter start measured in the same run.
"""

import importlib.util
import pathlib
import sys
import tempfile

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

from common import python_start_ms  # noqa: E402


def main():
    start = python_start_ms()
    print(f"{'bare interpreter start (python -c pass)':58} {start:9.1f} ms")
    failed = 0
    for path in sorted(HERE.glob("bench_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(f"\n# {path.stem}: {module.__doc__.strip().splitlines()[0]}")
        with tempfile.TemporaryDirectory() as workdir:
            for label, value, target, ok in module.run(pathlib.Path(workdir), start):
                failed += not ok
                print(f"{label:58} {value:>12}   target {target:16} {'ok' if ok else 'MISSED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
