"""Confinement: what running a skill confined adds to running it unconfined, and the floor under it."""

import ctypes
import json
import os
import time

from common import TOOL, Case, Row, bench_env, make_catalogue, median, paired, rounds

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000


def floor(step, count=200):
    """Median ms of fork, `step` in the child, exec true(1), wait: the cost the kernel sets."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            try:
                step()
                os.execv("/bin/true", ["true"])
            finally:
                os._exit(127)
        os.waitpid(pid, 0)
        times.append((time.perf_counter() - started) * 1000)
    return median(times)


def rows(bench):
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(444, None, 0, 1)
    if abi < 1:
        yield Row("confined skill run: no Landlock here, nothing to measure", "-", None, "-", True)
        return
    ruleset = ctypes.create_string_buffer(bytes(8 + 8 + 8))
    ruleset[0:8] = (1 << 1).to_bytes(8, "little")  # handles writing files, allows none: enough to be a domain
    size = 8 if abi < 4 else 16 if abi < 6 else 24

    def landlock():
        fd = libc.syscall(444, ruleset, size, 0)
        libc.prctl(38, 1, 0, 0, 0)
        libc.syscall(446, fd, 0)

    from nexus.gateway import sandbox  # the seccomp filter a confined call without network gets

    program = sandbox.seccomp_filter()

    def seccomp():
        libc.prctl(38, 1, 0, 0, 0)
        libc.prctl(sandbox.PR_SET_SECCOMP, sandbox.SECCOMP_MODE_FILTER, program[0], 0, 0)

    def pidns():  # the PID namespace and the init a confined call runs under: a fork more, and a wait
        libc.unshare(CLONE_NEWUSER | CLONE_NEWPID)
        if os.fork():
            os.wait()
            os._exit(0)

    def mounts():  # a mount namespace with one read-only bind (a .git in {cwd})
        uid = os.getuid()
        libc.unshare(CLONE_NEWUSER | CLONE_NEWNS)
        for name, text in (("uid_map", f"{uid} {uid} 1"), ("setgroups", "deny")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        libc.mount(None, b"/", None, sandbox.MS_REC | sandbox.MS_PRIVATE, None)
        libc.mount(b"/usr", b"/usr", None, sandbox.MS_BIND | sandbox.MS_REC, None)
        flags = sum(ms for st, ms in ((os.ST_NOSUID, 2), (os.ST_NODEV, 4), (os.ST_NOEXEC, 8), (os.ST_NOATIME, 1024),
                                      (os.ST_RELATIME, sandbox.MS_RELATIME)) if os.statvfs("/usr").f_flag & st)
        libc.mount(None, b"/usr", None, sandbox.MS_BIND | sandbox.MS_REMOUNT | sandbox.MS_RDONLY | flags, None)

    spawn = floor(lambda: None)
    userns = floor(lambda: libc.unshare(CLONE_NEWUSER)) - spawn
    netns = floor(lambda: libc.unshare(CLONE_NEWUSER | CLONE_NEWNET)) - spawn - userns
    pid = floor(pidns) - spawn - userns
    mount = floor(mounts) - spawn - userns
    restrict = floor(landlock) - spawn
    filtered = floor(seccomp) - spawn if program else None
    unrooted = floor(lambda: sandbox._no_root(libc)) - spawn if os.geteuid() == 0 else None
    yield Row("floor: fork + exec + wait of true(1) (posix_spawn is the unconfined path)", f"{spawn:.1f} ms", None,
              "-", True)
    yield Row("floor: a user namespace, over that", f"{userns:.1f} ms", None, "-", True)
    yield Row("floor: a network namespace in it, over that", f"{netns:.1f} ms", None, "-", True)
    yield Row("floor: a PID namespace in it and the fork of its init, over that", f"{pid:.1f} ms", None, "-", True)
    yield Row("floor: a mount namespace in it with one read-only bind, over that", f"{mount:.1f} ms", None, "-",
              True)
    yield Row("floor: a Landlock domain, over that", f"{restrict:.1f} ms", None, "-", True)
    if filtered is not None:
        yield Row("floor: the seccomp filter of a confined call, over that", f"{filtered:.1f} ms", None, "-",
                  True)

    if unrooted is not None:
        yield Row("floor: as root, a program started without capabilities, over that", f"{unrooted:.1f} ms", None,
                  "-", True)

    root = bench.scratch("sandbox")
    make_catalogue(root, 2)
    env = bench_env(root)
    managed = root / "managed" / "confined-tool"
    managed.mkdir(parents=True)
    meta = {"tool": TOOL, "verify": "true"}
    (managed / "SKILL.md").write_text(f"---\nname: confined-tool\ndescription: true(1), confined.\n"
                                      f"metadata: {json.dumps({'nexus': meta})}\n---\n# confined-tool\n")
    plain = Case("unconfined", ["nexus", "skill", "run", TOOL], env)
    confined = Case("confined", ["nexus", "skill", "run", "confined-tool"], env)
    times = rounds([plain, confined], 2)  # the first runs build the manifest and verify
    times = rounds([plain, confined], 31)
    ratio = paired(times, "confined", minus="unconfined")
    figure = median(times["confined"]) - median(times["unconfined"])
    # The target (issue 44): 0.3x, or where the kernel's own cost is above that, the floors of the layers this call
    # uses plus 0.1x, in `python -c pass` of these rounds. This call (no network grant, a tool skill staging {cwd})
    # uses them all: a user namespace with network, PID and mount namespaces in it, Landlock, seccomp, and as root
    # no capabilities. A floor measured below zero (noise) counts as none.
    used = [userns, netns, pid, mount, restrict, filtered or 0, unrooted or 0]
    floors = sum(max(0.0, f) for f in used)
    floor_ratio = floors / median(times["python -c pass"])
    target = max(0.3, floor_ratio + 0.1)
    yield Row(f"confined skill run of a trivial tool, overhead over the unconfined run (its layers' floors: "
              f"{floors:.1f} ms, {floor_ratio:.2f}x)", f"{figure:.1f} ms", ratio,
              f"<= {target:.2f}x", ratio <= target)
