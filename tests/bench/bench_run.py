"""The gateway: what `nexus skill run` adds to running its tool, at every catalogue size, alone and under load."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time

from common import HERE, TOOL, Case, Row, bench_env, make_catalogue, median, paired, peak_mb, rounds, PYTHON_PASS

GATEWAY = ["nexus", "skill", "run", TOOL, "--", "hello", "world"]
WORKERS, RUNS_EACH = 8, 200


def overhead(root, env, label, count=31):
    """The gateway's time over the tool's own, as a multiple of python -c pass in the same rounds."""
    direct = Case("direct", [str(root / "bin" / TOOL), "hello", "world"], env)
    gateway = Case("gateway", GATEWAY, env)
    times = rounds([direct, gateway], 2)  # the first runs build the manifest and verify
    times = rounds([direct, gateway], count)
    ratio = paired(times, "gateway", minus="direct")
    figure = median(times["gateway"]) - median(times["direct"])
    return Row(f"skill run overhead over the tool, {label}", f"{figure:.1f} ms", ratio, "<= 1.5x", ratio <= 1.5)


def script_overhead(bench, count=31):
    """A script skill: its child is forked, to be given its folder before exec (gateway.process), where a
    tool skill's is posix_spawn'ed; the same target."""
    root = bench.scratch("script")
    make_catalogue(root, 2)
    env = bench_env(root)
    folder = root / "nexus" / "skills" / "script-true"
    folder.mkdir()
    (folder / "true.sh").write_text("exit 0\n")
    meta = {"type": "script", "runner": "sh", "script": "true.sh", "verify": "true"}
    (folder / "SKILL.md").write_text(f"---\nname: script-true\ndescription: Runs sh true.sh.\n"
                                     f"metadata: {json.dumps({'nexus': meta})}\n---\n# script-true\n")
    direct = Case("direct", ["sh", str(folder / "true.sh")], env)
    gateway = Case("gateway", ["nexus", "skill", "run", "script-true"], env)
    times = rounds([direct, gateway], 2)
    times = rounds([direct, gateway], count)
    ratio = paired(times, "gateway", minus="direct")
    figure = median(times["gateway"]) - median(times["direct"])
    return Row("skill run overhead over the script, 8 skills (a forked child)", f"{figure:.1f} ms", ratio, "<= 1.5x",
               ratio <= 1.5)


def pip_version(python):
    return subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True,
                          check=True).stdout.split()[1]


def installed(bench):
    """{label: (the `nexus` a way of installing writes, the Python it runs on)}: make's venv (today's
    pip), a venv as Python's own `venv` makes it, whose bundled pip (23.2 with Python 3.11) installs
    the same wheel, and `make install`."""
    source = bench.scratch("source")  # a copy, so that building leaves the checkout alone
    shutil.copytree(HERE.parent.parent, source, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "tests", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".bench"))
    quiet = {**os.environ, "PYTHONWARNINGS": "ignore"}
    wheels, venv, prefix = bench.scratch("wheels"), bench.top / "venv", bench.top / "prefix"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w",
                    str(wheels), str(source)], check=True, env=quiet, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", *map(str, wheels.iterdir())],
                   check=True, env=quiet)
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "nexus-deps.pth"), "w") as pth:  # its dependencies: make's venv's, after its own
        pth.write(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(["make", "--no-print-directory", "-C", str(source), "install", f"PREFIX={prefix}",
                    f"PYTHON={sys.executable}", "PIPFLAGS=--no-deps --no-build-isolation", "EXTRAS="],
                   check=True, env=quiet, stdout=subprocess.DEVNULL)
    return {f"pip {pip_version(sys.executable)} (make's venv)": (shutil.which("nexus"), sys.executable),
            f"pip {pip_version(python)} (a python -m venv)": (str(venv / "bin" / "nexus"), python),
            "make install": (str(prefix / "bin" / "nexus"), sys.executable)}


def launchers(bench, count=31):
    """`skill run`'s overhead through each way of installing, each against its own Python's `python -c
    pass`, in the same rounds. Each has a nexus home of its own: each has its own bundled skills."""
    cases, measured = [], []
    for label, (nexus, python) in installed(bench).items():
        root = bench.scratch(f"installed-{len(cases)}")
        make_catalogue(root, 2)
        env = bench_env(root)
        direct, gateway = Case(f"direct {label}", [str(root / "bin" / TOOL), "hello", "world"], env), \
            Case(label, [nexus, "skill", "run", TOOL, "--", "hello", "world"], env)
        base = Case(f"{label} python", [python, "-c", "pass"], env) if python != sys.executable else None
        cases += [direct, gateway] + ([base] if base else [])
        measured.append((label, direct.label, base.label if base else "python -c pass"))
    rounds(cases, 2)  # the first runs build the manifest and verify
    times = rounds(cases, count)
    for label, direct, base in measured:
        ratio = paired(times, label, minus=direct, base=base)
        figure = median(times[label]) - median(times[direct])
        yield Row(f"skill run overhead, 8 skills, {label}", f"{figure:.1f} ms", ratio, "<= 1.5x",
                  ratio <= 1.5)


def rows(bench):
    yield from launchers(bench)  # 2 skills and the six bundled ones: 8
    yield script_overhead(bench)
    for count in (1000, 10000):
        root, env = bench.catalogue(count)
        yield overhead(root, env, f"{count:,} tool skills with state")

    root, env = bench.catalogue(50000, tool_every=10)
    rounds([Case("gateway", GATEWAY, env)], 2)
    peak = max(peak_mb(GATEWAY, env) for _ in range(5))
    base = max(peak_mb(PYTHON_PASS, env) for _ in range(5))
    yield Row("peak RSS of one skill run, 50,000 skills", f"{peak:.1f} MB", peak / base, "<= 20 MB", peak <= 20)

    yield throughput(bench)


def batch(argv, env):
    """Wall seconds for WORKERS shell loops that each run argv RUNS_EACH times."""
    loop = f'i=0; while [ $i -lt {RUNS_EACH} ]; do "$@" </dev/null >/dev/null 2>&1; i=$((i+1)); done'
    started = time.perf_counter()
    pids = [os.posix_spawnp("sh", ["sh", "-c", loop, "sh", *argv], env) for _ in range(WORKERS)]
    for pid in pids:
        os.waitpid(pid, 0)
    return time.perf_counter() - started


def throughput(bench):
    """WORKERS x RUNS_EACH gateway runs of one skill against as many `python -c pass`, runs per second."""
    root = bench.scratch("throughput")
    make_catalogue(root, 8)
    env = bench_env(root)
    (root / "nexus" / "nexus.toml").write_text("[skills.log]\nmaxEntries = 1000000\nmaxBytes = 1000000000\n")
    rounds([Case("gateway", GATEWAY, env)], 2)
    log = root / "nexus" / "state" / "nexus" / "skills" / TOOL / "usage.log"
    before = len(log.read_bytes().splitlines())
    python, gateway = [], []
    for _ in range(2):  # alternated, so both meet the machine in the same moods
        python.append(batch(PYTHON_PASS, env))
        gateway.append(batch(GATEWAY, env))
    logged = len(log.read_bytes().splitlines()) - before
    ratio = sum(python) / sum(gateway)  # runs per second, gateway over python
    runs = WORKERS * RUNS_EACH
    ok = ratio >= 0.65 and logged == 2 * runs  # what a run at 1.5x python's allows, with the log's lock shared
    return Row(f"{WORKERS} workers x {RUNS_EACH} skill run, runs/s (log lines == runs: {logged == 2 * runs})",
               f"{runs / median(gateway):.0f}/s", ratio, ">= 0.65x", ok)
