"""The gateway's own cost (issue 3): `nexus skill run T -- ARGS` against `T ARGS`, side by side."""

import json
import shutil

from common import bench_env, python_start_ms as measure_start, time_command


def run(workdir, python_start_ms):
    env = bench_env(workdir)
    skills = workdir / "nexus" / "skills" / "echo-tool"
    skills.mkdir(parents=True)
    meta = {"nexus": {"tool": "echo-tool", "verify": "echo-tool ok"}}
    (skills / "SKILL.md").write_text(f"---\nname: echo-tool\ndescription: Echo.\nmetadata: {json.dumps(meta)}\n---\nEcho.\n")
    bindir = workdir / "bin"
    bindir.mkdir()
    tool = bindir / "echo-tool"
    tool.symlink_to(shutil.which("true"))
    env["PATH"] = f"{bindir}:{env['PATH']}"
    gateway_argv = ["nexus", "skill", "run", "echo-tool", "--", "hello", "world"]
    time_command(gateway_argv, env=env, runs=1)  # first run: manifest and verification
    rows = []
    for _ in range(5):  # interleaved rounds, so all three see the same machine; the median round counts
        start = measure_start()
        direct = time_command([str(tool), "hello", "world"], env=env, runs=30)
        gateway = time_command(gateway_argv, env=env, runs=30)
        rows.append(((gateway - direct) / start, start, direct, gateway))
    ratio, start, direct, gateway = sorted(rows)[len(rows) // 2]
    yield ("bare interpreter start, this round", f"{start:.1f} ms", "", True)
    yield ("direct: echo-tool hello world", f"{direct:.1f} ms", "", True)
    yield ("gateway: nexus skill run echo-tool -- hello world", f"{gateway:.1f} ms", "", True)
    yield ("gateway overhead / bare interpreter start", f"{ratio:.2f}x", "<= 2.00x", ratio <= 2.0)
