"""Builders for the files tests put in place (skills, stand-in tools, config, usage logs), and readers of
what nexus keeps."""

import contextlib
import json
import shutil
import socket
import stat
import subprocess
import textwrap
import threading
import time

import pytest


def needs(program):
    """Skip where `program` is not installed; .ci/run installs it, so in CI the skip is a failure."""
    return pytest.mark.skipif(shutil.which(program) is None, reason=f"{program} is not installed")


def make_tool(bindir, name, script="#!/bin/sh\nexit 0\n"):
    path = bindir / name
    path.write_text(textwrap.dedent(script))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def write_skill(root, name, description="A test skill.", meta=None, body="# Body\n\nDo the thing.\n",
                folder=None, extra=""):
    """A skill folder with a SKILL.md; `meta` is the metadata.nexus object."""
    skill_dir = root / (folder or name)
    skill_dir.mkdir(parents=True, exist_ok=True)
    lines = ["---", f"name: {name}", f"description: {json.dumps(description)}"]
    if meta is not None:
        lines.append("metadata: " + json.dumps({"nexus": meta}, ensure_ascii=False))
    text = "\n".join(lines) + "\n" + extra + "---\n" + body
    (skill_dir / "SKILL.md").write_text(text)
    return skill_dir


def write_raw(root, folder, content):
    skill_dir = root / folder
    skill_dir.mkdir(parents=True, exist_ok=True)
    path = skill_dir / "SKILL.md"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def jsonl(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def by_name(records):
    return {r["name"]: r for r in records}


def write_config(nexus_home, text):
    nexus_home.mkdir(parents=True, exist_ok=True)
    path = nexus_home / "nexus.toml"
    path.write_text(textwrap.dedent(text))
    return path


def bundled_names():
    """The names of the skills that ship inside the package."""
    import pathlib

    import nexus

    root = pathlib.Path(nexus.__file__).parent / "skills"
    return sorted(p.name for p in root.iterdir() if (p / "SKILL.md").exists())


def state_dir(nexus_home, name):
    """A skill's state folder under a test's NEXUS_HOME."""
    return nexus_home / "state" / "nexus" / "skills" / name


def read_state(nexus_home, name):
    return json.loads((state_dir(nexus_home, name) / "state.json").read_text())


def read_log(nexus_home, name):
    """A skill's usage log as entries; [] when it has none."""
    path = state_dir(nexus_home, name) / "usage.log"
    return jsonl(path.read_text()) if path.exists() else []


def write_log(nexus_home, name, lines):
    """A skill's usage.log of dicts (written as JSON) and raw strings (written as they are); its path."""
    folder = state_dir(nexus_home, name)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "usage.log"
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


MIXED_SKILLS = [  # (loads, SKILL.md text for folder NAME): skills as the ecosystem writes them, good and bad
    (True, "---\nname: NAME\ndescription: Plain skill NAME.\n---\nBody.\n"),
    (True, '---\nname: NAME\ndescription: d\nmetadata: {"openclaw": {"requires": {"bins": ["a",],},},}\n---\nB\n'),
    (True, "\ufeff---\r\nname: NAME\r\ndescription: Use it: when asked\r\n---\r\nB\r\n"),
    (True, "---\ndescription: |\n  Nameless.\n---\n---\nrule in body\n"),
    (True, "---\nname: NAME\ndescription: first\ndescription: second #cut\nversion: 1.10\n---\nB\n"),
    (False, "---\nname: NAME\n---\nno description\n"),
    (False, "---\nname: NAME\ndescription: [unclosed\n---\nB\n"),
    (False, "no frontmatter at all\n"),
    (False, "---\nname: NAME\ndescription: d\nmetadata:\n\tnexus: {}\n---\nB\n"),
]


def write_mixed_skills(root, count):
    """`count` skill folders in `root`, of every kind of MIXED_SKILLS in turn; {name: whether it loads}."""
    found = {}
    for i in range(count):
        loads, text = MIXED_SKILLS[i % len(MIXED_SKILLS)]
        name = f"skill-{i:04d}"
        (root / name).mkdir()
        (root / name / "SKILL.md").write_bytes(text.replace("NAME", name).encode())
        found[name] = loads
    return found


def on_terminal(argv, columns=None, stdout_too=True, cwd=None):
    """Run argv as a person would, its stderr (and, with stdout_too, its stdout) on a pseudo-terminal,
    `columns` wide (COLUMNS, as a shell sets it): (exit code, what the terminal showed, stdout when it
    was piped)."""
    import os
    import pty
    import subprocess

    leader, follower = pty.openpty()
    env = {**os.environ, "LC_ALL": "C.UTF-8", "TERM": "xterm", **({"COLUMNS": str(columns)} if columns else {})}
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=follower, cwd=cwd, env=env,
                               stdout=follower if stdout_too else subprocess.PIPE)
    os.close(follower)
    piped = process.stdout.read().decode() if not stdout_too else ""
    shown = drained(leader)
    return process.wait(timeout=120), shown.decode().replace("\r\n", "\n"), piped


def drained(leader, shown=b""):
    """`shown`, then what a pseudo-terminal's leader reads until its command closes its end (the leader is closed)."""
    import os

    try:
        while chunk := os.read(leader, 65536):  # read as it comes: a full terminal would block the command
            shown += chunk
    except OSError:  # EIO: the command closed its end
        pass
    os.close(leader)
    return shown


def console_scripts(root):
    """{program: the module it starts from} of the commands' scripts in root/tools/bin (pyproject.toml's
    script-files): `nexus` runs nexus.tools.nexus's main(), `nexus-run` nexus.tools.plumbing.run's, any other
    plumbing tool its row of the command table (nexus.tools.commands's script(NAME))."""
    found = {}
    for script in sorted((root / "tools" / "bin").iterdir()):
        imports = [line.split() for line in script.read_text().splitlines() if line.startswith("from ")]
        found[script.name] = imports[0][1] if imports and imports[0][2] == "import" else None
    return found


def wait_for(condition, seconds=15):
    """True once condition() is, False when `seconds` pass first: a liveness bound, never a timing."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def git(repo, *args):
    """git in `repo`, as a test's author: its output, the test failing with git's error."""
    done = subprocess.run(["git", "-c", "user.name=Test", "-c", "user.email=test@example.com",
                           "-c", "init.defaultBranch=main", *args], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def commit(repo, message):
    """Everything in `repo` committed: the new commit."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def pong(server, stop):
    """Answer each connection to the listening stream socket `server` (a timeout set) ping with pong, until
    `stop` is set."""
    while not stop.is_set():
        try:
            conn, _ = server.accept()
        except OSError:
            continue
        with conn:
            conn.recv(10)
            conn.send(b"pong")


@contextlib.contextmanager
def answering(addresses):
    """A Unix socket at each address (a path, or @NAME for an abstract one) that answers ping with pong while the
    block runs: stand-ins for the user's agents."""
    servers, stop = [], threading.Event()
    for address in addresses:
        server = socket.socket(socket.AF_UNIX)
        server.bind("\0" + address[1:] if address.startswith("@") else address)
        server.listen()
        server.settimeout(0.2)
        servers.append(server)

    threads = [threading.Thread(target=pong, args=(s, stop)) for s in servers]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        stop.set()
        for t in threads:
            t.join()
        for server in servers:
            server.close()
