"""The one spawn path (gateway.process): the steps it runs in the child before exec, seen from real processes.

Each test runs a small program of its own that starts children through nexus.gateway.process, as nexus-mcp
and the gateway do, so nothing is mocked: the folders, signals and errors are the system's.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest


def python(program, *args, **how):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(program), *map(str, args)], capture_output=True,
                          text=True, timeout=60, **how)


def test_a_child_runs_in_its_folder_while_ours_never_moves_even_from_many_threads(tmp_path):
    folders = [tmp_path / f"d{i}" for i in range(8)]
    for folder in folders:
        folder.mkdir()
    done = python("""
        import os, sys, threading
        from nexus.gateway import process
        start = os.getcwd()
        seen, moved = {}, []
        def one(folder):
            for _ in range(5):
                out = process.run(["pwd"], cwd=folder, stdout=process.CAPTURE).stdout.decode().strip()
                seen.setdefault(folder, set()).add(out)
                if os.getcwd() != start:
                    moved.append(os.getcwd())
        threads = [threading.Thread(target=one, args=(f,)) for f in sys.argv[1:]]
        [t.start() for t in threads]
        [t.join() for t in threads]
        print(all(seen[f] == {f} for f in sys.argv[1:]), moved)
        """, *folders, cwd=tmp_path)
    assert done.stdout.strip() == "True []", done.stderr


def test_what_cannot_start_is_the_oserror_it_was(tmp_path):
    script = tmp_path / "noexec"
    script.write_text("echo hi\n")
    script.chmod(0o755)  # no #! line: the kernel will not run it
    done = python("""
        import sys
        from nexus.gateway import process
        for argv, cwd in ((["no-such-program-here"], sys.argv[1]), (["true"], sys.argv[1] + "/gone"),
                          ([sys.argv[2]], sys.argv[1]), ([sys.argv[2]], None)):
            try:
                process.run(argv, cwd=cwd)
            except OSError as e:
                print(type(e).__name__, e.errno, e.filename == argv[0] or e.filename)
        """, tmp_path, script)
    assert done.stdout.splitlines() == [
        "FileNotFoundError 2 True",  # looked up on PATH in the prepared child, as posix_spawnp does
        f"FileNotFoundError 2 {tmp_path}/gone",  # the folder is the file that is missing
        "OSError 8 True",  # ENOEXEC, prepared child or not
        "OSError 8 True",
    ], done.stderr


def test_a_prepare_step_runs_in_the_child_and_its_failure_is_raised_here(tmp_path):
    done = python("""
        import os
        from nexus.gateway import process
        out = process.run(["echo", "hi"], stdout=process.CAPTURE, prepare=lambda: os.write(1, b"prepared "))
        print(out.stdout.decode().strip())
        def refuse():
            raise PermissionError(1, "confinement refused", "landlock")
        try:
            process.run(["true"], prepare=refuse)
        except OSError as e:
            print(type(e).__name__, e.strerror, e.filename)
        """)
    # the step ran in the child, after its stdout was set up and before the program
    assert done.stdout.splitlines() == ["prepared hi", "PermissionError confinement refused landlock"], done.stderr


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
@pytest.mark.parametrize("parent_death", [True, False])
def test_a_server_killed_outright_takes_its_tools_with_it_when_asked(tmp_path, parent_death):
    pidfile = tmp_path / "pid"
    server = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys, threading
        from nexus.gateway import process
        def call():  # in a worker thread, as nexus-mcp runs its calls
            process.run(["sh", "-c", f"echo $$ > {sys.argv[1]}; exec sleep 300"], parent_death=sys.argv[2] == "1")
        threading.Thread(target=call).start()
        """), str(pidfile), "1" if parent_death else "0"], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        tool = int(pidfile.read_text())
        server.kill()
        server.wait()
        deadline = time.monotonic() + (10 if parent_death else 2)  # a parent-death signal comes at once
        while alive(tool) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert alive(tool) != parent_death
    finally:
        try:
            os.killpg(server.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# A tool that starts a daemon the usual way: a subshell starts it in a session of its own (setsid) and exits,
# so that it is an orphan outside the tool's process group; it writes its pid where the test reads it.
DAEMONIZING = """#!/bin/sh
( setsid sh -c 'echo $$ > "$0"; exec sleep 300' "$1.$$" & )
sleep 300
"""


def _gone(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] == b"Z"  # killed, its reaper not yet there
    except FileNotFoundError:
        return True


def _daemon(prefix):
    """The daemon's pid once it has written it."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = [p for p in prefix.parent.glob(prefix.name + ".*") if p.read_text().strip()]
        if found:
            return int(found[0].read_text())
        time.sleep(0.05)
    raise AssertionError("the daemon never started")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a reaper of orphans is Linux's")
def test_what_a_tool_started_in_a_session_of_its_own_dies_with_it_on_timeout_and_job_kill(workspace, bindir, tmp_path):
    from helpers import make_tool, write_skill

    make_tool(bindir, "daemonize", DAEMONIZING)
    write_skill(workspace, "daemonize", meta={"tool": "daemonize"})
    daemons = []
    try:
        timed_out = subprocess.run(["nexus", "skill", "run", "daemonize", "--timeout", "1", "--", tmp_path / "t"],
                                   capture_output=True, text=True, timeout=60)
        assert timed_out.returncode == 124, timed_out.stderr
        daemons.append(_daemon(tmp_path / "t"))
        assert _gone(daemons[-1])

        job = subprocess.run(["nexus", "skill", "run", "daemonize", "--background", "--", tmp_path / "j"],
                             capture_output=True, text=True, timeout=60).stdout.strip()
        daemons.append(_daemon(tmp_path / "j"))
        assert not _gone(daemons[-1])
        assert subprocess.run(["nexus", "job", "kill", job], capture_output=True, timeout=60).returncode == 0
        assert _gone(daemons[-1])
    finally:
        for pid in daemons:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def test_a_signal_that_comes_before_the_child_is_held_reaches_it_once_it_is():
    # An agent may cancel (SIGINT to the gateway) the moment the tool starts, before the gateway holds its
    # Child: the signal was dropped then, and the call ran on until its timeout (the 124 below).
    done = python("""
        import os, signal
        from nexus.gateway import process
        with process.Forwarding(group=True) as forwarding:
            os.kill(os.getpid(), signal.SIGINT)  # nothing to pass it on to yet
            child = process.Child(["sh", "-c", "trap 'exit 7' INT; while :; do sleep 0.05; done"], group=True)
            forwarding.attach(child)
            print(child.wait(timeout=5).exit)
        """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in ("7", "130")  # its trap, or the signal itself when it came before the trap
