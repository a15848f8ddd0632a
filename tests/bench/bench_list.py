"""Listing and refreshing skills (issue 2): list with a fresh manifest, full refresh at 1,000 and 10,000."""

import subprocess
import time

from common import bench_env, make_skills, time_command


def _refresh_ms(env):
    started = time.perf_counter()
    subprocess.run(["nexus", "skills", "refresh"], env=env, check=True, capture_output=True)
    return (time.perf_counter() - started) * 1000


def run(workdir, python_start_ms):
    for count, target_ms in ((1000, 1000), (10000, 10000)):
        env = bench_env(workdir / str(count))
        make_skills(workdir / str(count) / "nexus" / "skills", count)
        refresh = min(_refresh_ms(env) for _ in range(3 if count == 1000 else 1))
        yield (f"full refresh of {count:,} skills", f"{refresh:.0f} ms", f"< {target_ms:,} ms", refresh < target_ms)
        if count == 1000:
            listing = time_command(["nexus", "skills", "list", "--json"], env=env, runs=15)
            yield ("skills list --json, 1,000 skills, fresh manifest", f"{listing:.1f} ms", "< 150 ms", listing < 150)
            yield ("  the same, as a multiple of python -c pass", f"{listing / python_start_ms:.1f}x", "(for reference)", True)
