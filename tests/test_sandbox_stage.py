"""What a confined skill writes to the caller's folder ({cwd}) is staged (gateway.stage): nothing reaches the real
folder while the call runs, and after it what would run later outside the sandbox is set aside, never applied.

Each test is a finding of a hostile review of the read-only binds this replaced: a nested repository, a hooks
folder, a .git file, a bare repository, a .git made during the call, the quarantine pre-occupied, a folder on
PATH, a dotfiles folder; and what staging must still do (apply writes and deletions) without being turned
against the real folder (a link swapped in while the call ran). The same mount namespace holds a `unix` grant to
the sockets it names: where sockets live is hidden but those.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from helpers import answering, make_tool, write_config, write_skill
from test_sandbox import probe_skill, send_tool_call

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="confinement is Linux's here")

# One action an argument, in order: write:PATH:TEXT, rm:PATH, rmtree:PATH, mkdir:PATH, link:TARGET:PATH,
# touch:PATH, wait:PATH (until it exists), block (occupy the names the old quarantine renamed to)
STAGER = f"""#!{sys.executable}
import os, shutil, sys, time
for action in sys.argv[1:]:
    what, _, rest = action.partition(":")
    try:
        if what == "write":
            path, _, text = rest.partition(":")
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        elif what == "rm":
            os.unlink(rest)
        elif what == "rmtree":
            shutil.rmtree(rest)
        elif what == "mkdir":
            os.makedirs(rest, exist_ok=True)
        elif what == "link":
            target, _, path = rest.partition(":")
            os.symlink(target, path)
        elif what == "touch":
            open(rest, "w").close()
        elif what == "wait":
            deadline = time.monotonic() + 60
            while not os.path.exists(rest) and time.monotonic() < deadline:
                time.sleep(0.05)
        elif what == "block":  # the gateway's pid, from the host's /proc, as the review's skill found it
            for pid in os.listdir("/proc"):
                try:
                    line = open(f"/proc/{{pid}}/cmdline", "rb").read()
                except OSError:
                    continue
                if pid.isdigit() and b"skill\\0run\\0stager" in line:
                    os.makedirs(f".git.made-by-stager.{{pid}}/keep", exist_ok=True)
        print(action, "ok", sep="\t")
    except Exception as e:
        print(action, getattr(e, "strerror", None) or repr(e), sep="\t")
"""


def landlock_abi():
    import ctypes

    return max(ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1), 0)


def overlay():
    """Whether an unprivileged overlay can be mounted here (a user namespace, userxattr)."""
    probe = subprocess.run(["unshare", "-Urm", "sh", "-c", "d=$(mktemp -d) && mkdir $d/l $d/u $d/w $d/m && mount -t "
                            "overlay overlay -o lowerdir=$d/l,upperdir=$d/u,workdir=$d/w,userxattr $d/m; r=$?; "
                            "rm -rf $d; exit $r"], capture_output=True)
    return probe.returncode == 0


needs_stage = pytest.mark.skipif(landlock_abi() < 1 or not overlay(), reason="no Landlock or no overlay here")


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True)
    return home


@pytest.fixture
def stager(tmp_path, bindir, nexus_home):
    """An added (so confined) tool skill that does what its arguments say; (run it from a folder: the
    CompletedProcess with .said, each action's outcome)."""
    make_tool(bindir, "stager", STAGER)
    write_skill(tmp_path / "managed", "stager", meta={"tool": "stager"})

    def run(cwd, *actions, wait=True):
        argv = ["nexus", "skill", "run", "stager", "--", *actions]
        if not wait:
            return subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
        done.said = dict(line.rsplit("\t", 1) for line in done.stdout.splitlines() if "\t" in line)
        return done

    return run


@pytest.fixture
def signals(tmp_path, nexus_home):
    """A folder the tool is granted, outside the one it is called from (staged: seen by none while it runs),
    where it and the test say where they are."""
    folder = tmp_path / "signals"
    folder.mkdir()
    write_config(nexus_home, f'[skills.entries.stager.sandbox]\nwrite = ["{folder}"]\n')
    return folder


def set_aside(done):
    """{path in the caller's folder: where it was kept}, from the call's stderr."""
    found = {}
    for line in done.stderr.splitlines():
        if ": not applied: " in line:
            path = line.split(": not applied: ", 1)[1].split(" (", 1)[0]
            found[path] = line.rsplit("; kept in ", 1)[1]
    return found


def waited(path):
    """Wait (a minute at most: a shared machine) for the tool to say it got there."""
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), path


def last_log(nexus_home):
    lines = (nexus_home / "state" / "nexus" / "skills" / "stager" / "usage.log").read_text().splitlines()
    return json.loads(lines[-1])


@needs_stage
def test_an_ordinary_write_a_change_and_a_deletion_are_applied(home, stager, nexus_home):
    work = home / "work"
    (work / "old.txt").write_text("old\n")
    (work / "gone.txt").write_text("x\n")
    (work / "tree" / "deep").mkdir(parents=True)
    (work / "tree" / "deep" / "f").write_text("f\n")
    (work / "script.sh").write_text("#!/bin/sh\n")
    (work / "script.sh").chmod(0o755)
    done = stager(work, "write:new.txt:new", "write:old.txt:changed", "rm:gone.txt", "rmtree:tree",
                  "mkdir:tree", "write:tree/only:1", "link:new.txt:alias", "write:script.sh:#!/bin/sh\necho\n",
                  "write:sub/dir/file:deep")
    assert done.returncode == 0, done.stderr
    assert (work / "new.txt").read_text() == "new" and (work / "old.txt").read_text() == "changed"
    assert not (work / "gone.txt").exists()
    assert sorted(os.listdir(work / "tree")) == ["only"]  # the folder made anew holds only what the call put there
    assert os.readlink(work / "alias") == "new.txt"  # a link as a link
    assert (work / "script.sh").stat().st_mode & 0o777 == 0o755  # its mode kept
    assert (work / "sub" / "dir" / "file").read_text() == "deep"
    assert not os.listdir(nexus_home / "state" / "nexus" / "stages")  # the stage is removed
    assert not any(a.startswith("user.overlay.") for a in os.listxattr(work / "old.txt"))
    assert last_log(nexus_home)["exit"] == 0
    status = json.loads(subprocess.run(["nexus", "status", "--json"], capture_output=True, text=True).stdout)
    assert status["sandbox"]["overlay"] is True and "overlay yes" in status["sandbox"]["text"]


@needs_stage
def test_a_nested_repositorys_git_is_never_written(home, stager, nexus_home):
    """Called from a folder of repositories, a tool wrote ~/work/proj/.git/config (an fsmonitor) and its hooks."""
    work = home / "work"
    (work / "proj" / ".git" / "hooks").mkdir(parents=True)
    (work / "proj" / ".git" / "config").write_text("[core]\n")
    done = stager(work, "write:proj/.git/config:[core]\n\tfsmonitor = touch /tmp/pwned",
                  "write:proj/.git/hooks/pre-commit:#!/bin/sh", "write:proj/src.py:print()")
    assert done.returncode == 1, done.stderr
    assert (work / "proj" / ".git" / "config").read_text() == "[core]\n"
    assert not (work / "proj" / ".git" / "hooks" / "pre-commit").exists()
    assert (work / "proj" / "src.py").read_text() == "print()"  # the rest is applied
    kept = set_aside(done)
    assert list(kept) == [str(work / "proj" / ".git")], done.stderr
    assert kept[str(work / "proj" / ".git")].startswith(str(nexus_home / "state" / "nexus" / "set-aside"))
    assert (pathlib.Path(kept[str(work / "proj" / ".git")]) / "config").read_text().startswith("[core]\n\tfsmonitor")
    assert "would run outside the sandbox later: not applied" in last_log(nexus_home)["error"]


@needs_stage
@pytest.mark.parametrize("hooks", [".husky", "tools/hooks"])
def test_a_repositorys_hooks_path_is_never_written(home, stager, hooks):
    """core.hooksPath = .husky (set in a .git/config the tool could not write) led git to hooks it could."""
    work = home / "work"
    (work / ".git").mkdir()
    (work / ".git" / "config").write_text(f'[core]\n\tbare = false\n[Core]\n\thooksPath = "{hooks}"\n')
    done = stager(work, f"write:{hooks}/pre-commit:#!/bin/sh", "write:README:x")
    assert done.returncode == 1 and not (work / hooks / "pre-commit").exists(), done.stderr
    assert (work / "README").exists()
    assert str(work / hooks) in set_aside(done), done.stderr


@needs_stage
def test_a_git_file_leads_to_a_git_folder_that_is_never_written(home, stager):
    """`git init --separate-git-dir=gitdata`: .git is a file naming gitdata/, whose hooks ran at `git commit`."""
    work = home / "work"
    (work / ".git").write_text(f"gitdir: {work / 'gitdata'}\n")
    for name in ("objects", "refs", "hooks"):
        (work / "gitdata" / name).mkdir(parents=True)
    (work / "gitdata" / "HEAD").write_text("ref: refs/heads/main\n")
    done = stager(work, "write:gitdata/hooks/pre-commit:#!/bin/sh")
    assert done.returncode == 1 and not (work / "gitdata" / "hooks" / "pre-commit").exists(), done.stderr
    assert str(work / "gitdata") in set_aside(done)


@needs_stage
def test_a_bare_repository_made_in_the_folder_is_never_applied(home, stager):
    """A folder holding HEAD, objects and refs is a repository to git, whose config's core.pager then ran."""
    work = home / "work"
    done = stager(work, "write:bare/HEAD:ref: refs/heads/main", "mkdir:bare/objects", "mkdir:bare/refs/heads",
                  "write:bare/config:[core]\n\tpager = touch /tmp/pwned; cat", "write:notes.txt:n")
    assert done.returncode == 1 and not (work / "bare").exists(), done.stderr
    assert (work / "notes.txt").exists()
    # completing one the folder already half holds is the same
    (work / "half" / "objects").mkdir(parents=True)
    (work / "half" / "refs").mkdir()
    done = stager(work, "write:half/HEAD:ref: refs/heads/main", "write:half/config:[core]")
    assert done.returncode == 1 and not (work / "half" / "HEAD").exists() and not (work / "half" / "config").exists()


@needs_stage
def test_a_git_folder_made_during_the_call_is_not_there_while_it_runs(home, signals, stager):
    """A .git made during the call ran at the user's `git status` while the call still slept."""
    work = home / "work"
    call = stager(work, "write:.git/config:[core]\n\tfsmonitor = x", "write:made.txt:1", f"touch:{signals}/made",
                  f"wait:{signals}/go", wait=False)
    try:
        waited(signals / "made")
        assert not (work / ".git").exists() and not (work / "made.txt").exists()  # nothing reaches it meanwhile
    finally:
        (signals / "go").touch()
        out, err = call.communicate(timeout=120)
    assert call.returncode == 1 and not (work / ".git").exists(), err
    assert (work / "made.txt").exists()


@needs_stage
def test_what_is_set_aside_cannot_be_kept_by_occupying_the_place_it_goes(home, stager, nexus_home):
    """The old quarantine renamed a made .git to a name the skill could take first; it stayed, and ran."""
    work = home / "work"
    aside = nexus_home / "state" / "nexus" / "set-aside"
    done = stager(work, "block", "write:.git/hooks/pre-commit:#!/bin/sh", f"write:{aside}/stager.x/.git/y:1")
    assert done.returncode == 1, done.stderr
    assert done.said[f"write:{aside}/stager.x/.git/y:1"] == "Permission denied"
    assert not (work / ".git").exists()
    assert set_aside(done)[str(work / ".git")].startswith(str(aside))


@needs_stage
def test_a_folder_on_path_inside_the_folder_is_never_written(home, stager, monkeypatch):
    """Called from ~/work with ~/work/tools on PATH, a tool wrote ~/work/tools/deploy, which the user ran later."""
    work = home / "work"
    (work / "tools").mkdir()
    monkeypatch.setenv("PATH", f"{os.environ['PATH']}:{work / 'tools'}")
    done = stager(work, "write:tools/deploy:#!/bin/sh", "write:other:1")
    assert done.returncode == 1 and not (work / "tools" / "deploy").exists(), done.stderr
    assert (work / "other").exists() and str(work / "tools") in set_aside(done)
    # called from the PATH folder itself: none of it
    done = stager(work / "tools", "write:ls:#!/bin/sh")
    assert done.returncode == 1 and not (work / "tools" / "ls").exists(), done.stderr


@needs_stage
def test_what_a_dotfile_links_to_is_never_written(home, stager):
    """~/.bash_aliases and ~/.config/nvim link into ~/dotfiles: called from there, a tool rewrote them."""
    dotfiles = home / "dotfiles"
    (dotfiles / "nvim").mkdir(parents=True)
    (dotfiles / "bash_aliases").write_text("alias ll='ls -l'\n")
    (home / ".config").mkdir()
    (home / ".bash_aliases").symlink_to(dotfiles / "bash_aliases")
    (home / ".config" / "nvim").symlink_to(dotfiles / "nvim")
    done = stager(dotfiles, "write:bash_aliases:alias ls=evil", "write:nvim/init.lua:os.execute()",
                  "write:README.md:mine")
    assert done.returncode == 1, done.stderr
    assert (dotfiles / "bash_aliases").read_text() == "alias ll='ls -l'\n"
    assert not (dotfiles / "nvim" / "init.lua").exists() and (dotfiles / "README.md").exists()
    assert {str(dotfiles / "bash_aliases"), str(dotfiles / "nvim")} <= set(set_aside(done))


@needs_stage
def test_a_link_swapped_in_while_the_call_ran_is_never_followed(home, tmp_path, signals, stager):
    """The real folder is not the stage's: a folder of it replaced by a link to elsewhere during the call must not
    lead the applying gateway there."""
    outside = tmp_path / "outside"
    outside.mkdir()
    work = home / "work"
    (work / "sub").mkdir()
    call = stager(work, "write:sub/planted:x", "mkdir:made", "write:made/inner:y", f"touch:{signals}/ready",
                  f"wait:{signals}/go", wait=False)
    try:
        waited(signals / "ready")
        (work / "sub").rmdir()
        (work / "sub").symlink_to(outside)
        (work / "made").symlink_to(outside)
    finally:
        (signals / "go").touch()
        out, err = call.communicate(timeout=120)
    assert not os.listdir(outside), err
    assert call.returncode == 1 and os.path.islink(work / "sub") and os.path.islink(work / "made"), err
    assert "a link in your folder" in err


@needs_stage
def test_a_stage_left_by_a_killed_gateway_is_set_aside_by_the_next_call(home, signals, stager, nexus_home):
    work = home / "work"
    call = stager(work, "write:half.txt:1", f"touch:{signals}/ready", f"wait:{signals}/never", wait=False)
    waited(signals / "ready")
    call.kill()
    call.communicate()
    assert not (work / "half.txt").exists()
    status = subprocess.run(["nexus", "status", "--check"], capture_output=True, text=True)
    assert status.returncode == 1 and "not applied" in status.stdout + status.stderr, status.stdout
    done = stager(work, "write:next.txt:1")
    assert done.returncode == 0 and "nexus was killed" in done.stderr and not (work / "half.txt").exists()
    assert (work / "next.txt").exists()
    assert not os.listdir(nexus_home / "state" / "nexus" / "stages")


@pytest.fixture
def sockets():
    """Two Unix sockets in a folder of /tmp and an abstract one, each answering ping with pong: {name: address}."""
    folder = pathlib.Path(tempfile.mkdtemp(dir="/tmp", prefix="nexus-sockets-"))
    found = {"granted": str(folder / "granted.sock"), "other": str(folder / "other.sock"),
             "abstract": f"@nexus-test-{os.getpid()}-{id(folder)}"}
    with answering(found.values()):
        yield found
    shutil.rmtree(folder)


@needs_stage
@pytest.mark.parametrize("network", [False, True])
def test_a_unix_grant_reaches_the_socket_it_names_alone(home, tmp_path, bindir, sockets, nexus_home, network):
    """`unix: [ONE_PATH]` opened every Unix socket (tmux's grant reached D-Bus, docker.sock, ssh-agent), and with
    the network an abstract one too: Landlock does not mediate connect() to a path."""
    probe_skill(tmp_path / "managed", bindir, sandbox={"unix": [sockets["granted"]], "network": network})

    def reached(address):
        done = subprocess.run(["nexus", "skill", "run", "probe", "--", "unix", address], capture_output=True,
                              text=True, cwd=home / "work", stdin=subprocess.DEVNULL, timeout=120)
        return done.returncode == 0

    assert reached(sockets["granted"])
    assert not reached(sockets["other"])
    if landlock_abi() >= 6 or not network:  # scoped (Landlock ABI 6), or in a network namespace of its own
        assert not reached(sockets["abstract"])


@needs_stage
def test_over_mcp_the_model_hears_what_was_not_applied(home, stager):
    """An agent must know its write is not all there: the result is an error that says what was set aside."""
    pytest.importorskip("mcp")
    work = home / "work"
    server = subprocess.Popen([shutil.which("nexus-mcp")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, cwd=work)
    try:
        send_tool_call(server, "stager", {"args": ["write:.envrc:export X=1", "write:out:1"]})
        while (answer := json.loads(server.stdout.readline())).get("id") != 1:
            pass
    finally:
        server.stdin.close()
        server.wait(30)
    text = "".join(c.get("text", "") for c in answer["result"]["content"])
    assert answer["result"]["isError"] and f"not applied ({work / '.envrc'})" in text, text
    assert (work / "out").exists() and not (work / ".envrc").exists()
