"""Helpers the benchmarks share: timing whole commands, and building skill trees."""

import json
import os
import statistics
import subprocess
import sys
import time


def time_command(argv, env=None, runs=20, warmup=3, stdin=subprocess.DEVNULL):
    """Median wall time of a command in milliseconds."""
    samples = []
    for i in range(warmup + runs):
        t = time.perf_counter()
        subprocess.run(argv, env=env, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        if i >= warmup:
            samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def python_start_ms():
    return time_command([sys.executable, "-c", "pass"], runs=30)


def bench_env(workdir, **extra):
    env = dict(os.environ)
    env.update(NEXUS_HOME=str(workdir / "nexus"), MANAGED_SKILLS_DIR=str(workdir / "managed"),
               HOME=str(workdir / "home"))
    env.pop("NEXUS_CONFIG", None)
    env.update(extra)
    return env


def make_skills(root, count, prefix="skill"):
    """`count` prompt skills with realistic frontmatter under root."""
    for i in range(count):
        folder = root / f"{prefix}-{i:05d}"
        folder.mkdir(parents=True)
        meta = {"nexus": {"emoji": "🔧", "requires": {"bins": ["sh"], "env": []}, "os": ["linux", "darwin"]}}
        (folder / "SKILL.md").write_text(
            f"---\nname: {prefix}-{i:05d}\ndescription: Benchmark skill number {i} that does a useful thing.\n"
            f"metadata: {json.dumps(meta, ensure_ascii=False)}\n---\n# Skill {i}\n\n" + "Instructions.\n" * 40)
