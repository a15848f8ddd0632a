"""What the benchmarks share: running whole commands and timing them in interleaved rounds beside
`python -c pass`, measuring a command's own peak memory, and building catalogues of skills."""

import hashlib
import json
import os
import pathlib
import statistics
import sys
import time

HERE = pathlib.Path(__file__).parent
PYTHON_PASS = [sys.executable, "-c", "pass"]  # the yardstick: the interpreter nexus runs on, doing nothing
TOOL = "echo-tool"  # the tool skill the gateway benchmarks run: a link to true(1)


class Row:
    """One line of the table: what was measured, the figure, its ratio to the yardstick of its row
    (None when it has none), the target as text, and whether the target was met."""

    def __init__(self, what, figure, ratio, target, ok):
        self.what, self.figure, self.ratio, self.target, self.ok = what, figure, ratio, target, ok


class Case:
    """A command to time: argv in env; `before()`, untimed, before each of its runs; stdin from a file."""

    def __init__(self, label, argv, env=None, before=None, stdin=None):
        self.label, self.argv, self.env, self.before, self.stdin = label, argv, env or os.environ, before, stdin


def spawn(argv, env, stdin=None):
    """(milliseconds, exit status) of one run of argv, its output thrown away, timed from this process."""
    actions = [(os.POSIX_SPAWN_OPEN, 0, stdin or os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    started = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, env, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    return (time.perf_counter() - started) * 1000, os.waitstatus_to_exitcode(status)


def rounds(cases, count):
    """Each case once per round, the yardstick first, the others in an order that rotates from round
    to round, so that every case meets the machine in the same moods. {label: [ms, one per round]}."""
    cases = [Case("python -c pass", PYTHON_PASS), *cases]
    times = {case.label: [] for case in cases}
    others = cases[1:]
    for n in range(count):
        shift = n % len(others) if others else 0
        for case in [cases[0], *others[shift:], *others[:shift]]:
            if case.before:
                case.before()
            ms, code = spawn(case.argv, case.env, case.stdin)
            if code != 0:
                raise SystemExit(f"bench: {' '.join(map(str, case.argv))} exited {code}")
            times[case.label].append(ms)
    return times


def median(values):
    return statistics.median(values)


def paired(times, label, minus=None, base="python -c pass"):
    """The median, over the rounds, of (label's time - minus's time) / base's time in that round (base:
    `python -c pass`, or another yardstick timed among the cases, such as another Python's)."""
    base = times[base]
    other = times[minus] if minus else [0] * len(base)
    return median([(t - o) / b for t, o, b in zip(times[label], other, base)])


def peak_mb(argv, env):
    """The peak resident memory of argv's own process, in MB: read with wait4 by a small parent
    (`python -I -S`), since a child started from a large process reports that process's memory."""
    probe = [sys.executable, "-I", "-S", str(HERE / "peak.py"), *argv]
    read, write = os.pipe()
    pid = os.posix_spawn(probe[0], probe, env, file_actions=[(os.POSIX_SPAWN_DUP2, write, 1)])
    os.close(write)
    with os.fdopen(read) as out:
        kilobytes = out.read().strip()
    os.waitpid(pid, 0)
    return int(kilobytes) / 1024


def bench_env(root, **extra):
    """The environment of a scratch nexus under `root`, with `root/bin` (the stand-in tools) first on PATH."""
    env = dict(os.environ)
    env.update(NEXUS_HOME=str(root / "nexus"), MANAGED_SKILLS_DIR=str(root / "managed"), HOME=str(root / "home"),
               PATH=f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}")
    for name in ("NEXUS_CONFIG", "NEXUS_SESSION_ID", "NEXUS_DEBUG", "SOURCE_DATE_EPOCH"):
        env.pop(name, None)
    env.update(extra)
    return env


def _write(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def skill_text(name, number, tool=None, verify=None):
    meta = {"emoji": "🔧", "requires": {"bins": [], "env": []}, "os": ["linux", "darwin"]}
    if tool:
        meta.update(tool=tool, verify=verify or f"{tool} --version")
    return (f"---\nname: {name}\ndescription: Benchmark skill number {number} that does a useful thing.\n"
            f"metadata: {json.dumps({'nexus': meta}, ensure_ascii=False)}\n---\n# {name}\n\n" + "Instructions.\n" * 40)


def make_catalogue(root, count, tool_every=1, tools=40, verify=None, missing=True):
    """`count` skills in root's workspace, one in `tool_every` a tool skill with its state.json (most
    verified, some failed, some never), and `tools` stand-in tools in root/bin, one in four `missing`,
    so that the catalogue has every status. The last skill is TOOL, which runs true(1)."""
    bindir, workspace = root / "bin", root / "nexus" / "skills"
    state_root = root / "nexus" / "state" / "nexus" / "skills"
    for folder in (bindir, workspace, state_root):
        folder.mkdir(parents=True, exist_ok=True)
    for t in range(tools):
        if t % 4 or not missing:
            tool = bindir / f"tool-{t}"
            _write(tool, "#!/bin/sh\nexit 0\n")
            tool.chmod(0o755)
    (bindir / TOOL).symlink_to("/bin/true")
    skills = [(f"skill-{i:05d}", i, f"tool-{i % tools}" if i % tool_every == 0 else None) for i in range(count - 1)]
    skills.append((TOOL, count, TOOL))
    for name, number, tool in skills:
        folder = workspace / name
        folder.mkdir()
        text = skill_text(name, number, tool, verify)
        _write(folder / "SKILL.md", text)
        if tool:
            (state_root / name).mkdir(mode=0o700)
            ok = number % 10 != 3
            state = {"version": 1, "configured": ok and number % 10 != 7, "type": "tool", "tool": tool,
                     "verify": verify or f"{tool} --version", "lastVerified": "2026-01-01T00:00:00.000Z",
                     "lastVerifyOk": ok, "totalInvocations": number % 50, "successCount": number % 50}
            if state["configured"]:
                state["fingerprint"] = {"skillSha256": hashlib.sha256(text.encode()).hexdigest(),
                                        "verifyOutputHash": None, "capturedAt": "2026-01-01T00:00:00.000Z"}
            _write(state_root / name / "state.json", json.dumps(state))
    return [name for name, _, _ in skills]


def edit_skill(root, name):
    """Add a line to a skill's SKILL.md as an editor saves it: a new file renamed over the old one."""
    path = root / "nexus" / "skills" / name / "SKILL.md"
    _write(f"{path}.new", path.read_text() + f"Edited at {time.time_ns()}.\n")
    os.replace(f"{path}.new", path)
