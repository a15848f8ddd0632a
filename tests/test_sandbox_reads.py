"""What a confined skill reads and is handed, by construction (gateway.sandbox): the system from a list, its own
folders and grants, where its program lies (never through a link, never off the deny list), nothing of /tmp or
a home it is not given, whichever HOME it is called with; a fixed environment and what it declares; and an added
skill never takes another's config by its name.

The tool is test_sandbox's probe; nothing is mocked: the kernel's Landlock does the refusing.
"""

import json
import os
import pathlib
import pwd
import shutil
import subprocess
import sys
import tempfile

import pytest

from helpers import make_tool, write_config, write_skill
from test_sandbox import PROBE, SH_PROBE, home, managed, needs_sandbox, probe_skill, run  # noqa: F401 - fixtures

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="confinement is Linux's here")


@needs_sandbox
def test_outside_the_system_a_confined_skill_reads_no_ticket_in_tmp_nor_a_private_folder(managed, bindir, home,
                                                                                         tmp_path, nexus_home):
    """Reads were "/ minus $HOME": a Kerberos ticket in /tmp (its default cache, /tmp/krb5cc_UID) and a file in a
    0700 folder of the user's outside $HOME were read, and any folder listed. Reads come from a list now."""
    probe_skill(managed, bindir)
    ticket = tempfile.NamedTemporaryFile(prefix=f"krb5cc_{os.getuid()}_nexus_test_", delete=False)
    private = tempfile.mkdtemp(prefix="nexus-test-runtime-")  # 0700, as /run/user/UID is
    try:
        ticket.write(b"KRB-TICKET\n")
        ticket.close()
        with open(os.path.join(private, "secret"), "w") as f:
            f.write("RUNTIME-SECRET\n")
        elsewhere = tmp_path / "srv"
        (elsewhere / "data").mkdir(parents=True)

        def outcome(*args):
            return run("probe", "--", *map(str, args), cwd=home / "work").returncode

        assert outcome("read", ticket.name) == outcome("read", os.path.join(private, "secret")) == 3
        assert outcome("list", private) == outcome("list", elsewhere) == outcome("list", tempfile.gettempdir()) == 3
        # the system is read: programs, their settings, what programs need of /proc
        assert outcome("read", "/etc/passwd") == outcome("list", "/usr/bin") == outcome("read", "/proc/self/status") \
            == outcome("read", "/proc/cpuinfo") == 0
        granted = run("probe", "--", "read", ticket.name, cwd=home / "work")
        assert f"to grant it, nexus skill allow probe --read {ticket.name}" in granted.stderr, granted.stderr
        write_config(nexus_home, f'[skills.entries.probe.sandbox]\nread = ["{private}"]\n')
        assert outcome("read", os.path.join(private, "secret")) == outcome("list", private) == 0
    finally:
        os.unlink(ticket.name)
        shutil.rmtree(private)


@pytest.mark.once
@needs_sandbox
def test_as_an_unprivileged_user_its_own_ticket_in_tmp_is_not_read(nobody):
    """As nobody, as the review ran it: nobody's Kerberos ticket (/tmp/krb5cc_65534, 0600) and a file in a 0700
    folder of nobody's were read by a confined skill; the system still is."""
    uid = pwd.getpwnam("nobody").pw_uid
    root = tempfile.mkdtemp(prefix="nexus-nobody-")
    ticket = os.path.join(tempfile.gettempdir(), f"krb5cc_{uid}_nexus_test_{os.getpid()}")
    try:
        bindir, home, managed = (os.path.join(root, name) for name in ("bin", "home", "managed"))
        os.makedirs(os.path.join(home, "work"))
        os.makedirs(os.path.join(root, "runtime"))
        os.mkdir(bindir)
        probe_skill(pathlib.Path(managed), pathlib.Path(bindir), program=SH_PROBE)
        for path, text in ((ticket, "KRB-TICKET\n"), (os.path.join(root, "runtime", "secret"), "RUNTIME-SECRET\n")):
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o600)
        subprocess.run(["chown", "-R", "nobody:nogroup", root, ticket], check=True)
        os.chmod(root, 0o755)
        os.chmod(os.path.join(root, "runtime"), 0o700)
        env = {**os.environ, "NEXUS_HOME": os.path.join(home, "nexus"), "HOME": home, "MANAGED_SKILLS_DIR": managed,
               "PATH": f"{bindir}:{os.environ['PATH']}"}

        def as_them(path):
            return nobody.run(["nexus", "skill", "run", "probe", "--", "read", path], env,
                              cwd=os.path.join(home, "work"), stdin=subprocess.DEVNULL)

        for path in (ticket, os.path.join(root, "runtime", "secret")):
            done = as_them(path)
            assert done.returncode == 3 and "Permission denied" in done.stderr, (path, done.stderr)
        assert as_them("/etc/passwd").returncode == 0
    finally:
        shutil.rmtree(root)
        os.unlink(ticket)


@needs_sandbox
def test_where_its_program_lies_is_read_but_never_through_a_link_nor_where_skills_write(managed, bindir, home,
                                                                                       tmp_path, nexus_home):
    """installed() granted a program's prefix/lib as its real path: a lib that links to ~/.ssh read ~/.ssh/id_rsa,
    and a program in another skill's {tmp} (which a confined skill writes) made its own grants. Now the siblings
    are never links, nothing is inferred in nexus's state, and `skill show` says what is added."""
    prefix = home / "tools" / "tool"  # in $HOME, where installed() inferred before
    (prefix / "bin").mkdir(parents=True)
    (prefix / "libexec").mkdir()
    (prefix / "libexec" / "data").write_text("needed\n")
    (prefix / "lib").symlink_to(home / ".ssh")
    make_tool(prefix / "bin", "probe", PROBE)
    write_skill(managed, "probe", meta={"tool": str(prefix / "bin" / "probe")})
    assert run("probe", "--", "read", prefix / "libexec" / "data", cwd=home / "work").returncode == 0
    stolen = run("probe", "--", "read", home / ".ssh" / "id_rsa", cwd=home / "work")
    assert stolen.returncode == 3 and "Permission denied" in stolen.stderr, stolen.stderr
    assert run("probe", "--", "read", prefix / "lib" / "id_rsa", cwd=home / "work").returncode == 3
    shown = json.loads(subprocess.run(["nexus", "skill", "show", "probe", "--json"], capture_output=True, text=True,
                                      check=True).stdout)["permissions"]["installed"]
    assert str(prefix / "bin") in shown and str(prefix / "libexec") in shown
    assert not any(p.startswith(str(home / ".ssh")) or p == str(prefix / "lib") for p in shown), shown
    text = subprocess.run(["nexus", "skill", "show", "probe"], capture_output=True, text=True, check=True).stdout
    assert f"Reads where its program lies: {prefix / 'bin'}" in text, text

    # a program in a skill's {tmp}, as a confined skill writes it: nothing is inferred from there
    planted = nexus_home / "state" / "nexus" / "skills" / "stagea" / "tmp"
    (planted / "bin").mkdir(parents=True)
    (planted / "lib").mkdir()
    (planted / "lib" / "x").write_text("x\n")
    make_tool(planted / "bin", "x", PROBE)
    write_skill(managed, "stageb", meta={"tool": str(planted / "bin" / "x")})
    done = run("stageb", "--", "read", planted / "lib" / "x", cwd=home / "work")
    assert done.returncode != 0 and "ok" not in done.stdout, (done.stdout, done.stderr)


@needs_sandbox
def test_a_program_run_through_env_reads_the_venv_it_finds_on_path(managed, bindir, home, tmp_path, nexus_home):
    """`#!/usr/bin/env python3`: the python3 env finds on the PATH the skill is handed, a venv's outside $HOME,
    with its pyvenv.cfg (without it, Python would not know it is a venv)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    make_tool(bindir, "where", "#!/usr/bin/env python3\nimport sys\nprint(sys.prefix)\n")
    write_skill(managed, "where", meta={"tool": "where"})
    done = run("where", cwd=home / "work", env={"PATH": f"{venv / 'bin'}:{bindir}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(venv)


@needs_sandbox
def test_a_read_grant_of_home_never_reads_the_deny_list(managed, bindir, home, nexus_home):
    """`--read ~`, as the upgrade notice advised, read ~/.claude, ~/.codex, ~/.pgpass and the shell histories: the
    deny list holds them now, and the notice names a narrow grant."""
    probe_skill(managed, bindir)
    secrets = [".claude/.credentials.json", ".codex/auth.json", ".pgpass", ".bash_history", ".zsh_history",
               ".local/share/fish/fish_history", ".config/atuin/key", ".vault-token", ".my.cnf", ".netrc",
               ".git-credentials", ".docker/config.json", ".kube/config", ".terraform.d/credentials.tfrc.json"]
    for name in secrets + ["notes/plain"]:
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text("SECRET\n")
    write_config(nexus_home, '[skills.entries.probe.sandbox]\nread = ["~"]\n')
    codes = {name: run("probe", "--", "read", home / name, cwd=home / "work").returncode for name in secrets}
    assert codes == {name: 3 for name in secrets}
    assert run("probe", "--", "read", home / "notes" / "plain", cwd=home / "work").returncode == 0


@needs_sandbox
def test_home_set_elsewhere_never_exposes_the_accounts_home(managed, bindir, home, nexus_home):
    """What is left out of reads and the deny list's ~ followed $HOME alone: an agent harness or a service that set
    HOME elsewhere (or to /) exposed the real home. Both follow $HOME and the password entry's home now."""
    real = pwd.getpwuid(os.getuid()).pw_dir
    if not os.path.isdir(real) or not os.access(real, os.W_OK) or os.path.realpath(real) == "/":
        pytest.skip(f"the account's home {real} is not a folder this test may write")
    folder, plain = tempfile.mkdtemp(prefix=".nexus-test-", dir=real), tempfile.mkdtemp(prefix="nexus-test-", dir=real)
    try:
        probe_skill(managed, bindir)
        for name in ("plain", "secret"):
            with open(os.path.join(folder, name), "w") as f:
                f.write("SECRET\n")
        for home_is in (str(home), "/"):
            done = run("probe", "--", "read", os.path.join(folder, "plain"), cwd=home / "work", env={"HOME": home_is})
            assert done.returncode == 3, (home_is, done.stderr)
        # inside a grant, the deny list's ~ is the account's home too
        write_config(nexus_home, f'[skills]\nsandbox.deny = ["~/{os.path.basename(folder)}/secret"]\n'
                                 f'[skills.entries.probe.sandbox]\nread = ["{folder}"]\n')
        assert run("probe", "--", "read", os.path.join(folder, "plain"), cwd=home / "work").returncode == 0
        assert run("probe", "--", "read", os.path.join(folder, "secret"), cwd=home / "work").returncode == 3
        # called from the account's home, it is no {cwd} to write (~/.bashrc would run later), nor a dot-folder of it
        os.mkdir(os.path.join(folder, "sub"))
        for where, target in ((real, os.path.join(plain, "planted")), (folder, os.path.join(folder, "sub", "x"))):
            done = run("probe", "--", "write", target, cwd=where, env={"HOME": str(home)})
            assert done.returncode == 3 and not os.path.exists(target), (where, done.stderr)
        assert "a dot-folder of your home" in done.stderr, done.stderr
    finally:
        shutil.rmtree(folder)
        shutil.rmtree(plain)


@needs_sandbox
def test_a_confined_skill_is_handed_a_fixed_environment_and_what_it_declares(managed, workspace, bindir, home,
                                                                             nexus_home):
    """The environment was "all but secret-looking names": DATABASE_URL, MYSQL_PWD, a proxy with user:pass,
    CI_JOB_JWT were handed. Now a fixed set, what the skill declares or the config gives it, and with a network
    grant a proxy without credentials. An unconfined call is unchanged."""
    probe_skill(managed, bindir)
    write_skill(managed, "probe", meta={"tool": "probe", "requires": {"env": ["REDIS_URL"]},
                                        "variables": [{"name": "COLOR", "default": "1"}]})
    write_skill(workspace, "mine", meta={"tool": "probe"})
    write_config(nexus_home, '[skills.entries.probe]\nenv = { GIVEN = "x" }\n')
    theirs = {"DATABASE_URL": "postgres://u:pw@h/db", "MYSQL_PWD": "my1", "CI_JOB_JWT": "jwt1",
              "HTTPS_PROXY": "http://user:pass@proxy:8080", "http_proxy": "http://proxy:3128", "NO_PROXY": "localhost",
              "SENTRY_DSN": "https://k@sentry/1", "OTEL_EXPORTER_OTLP_HEADERS": "auth=x", "PLAIN": "1",
              "REDIS_URL": "redis://:rpw@h", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC"}

    def names(skill):
        done = run(skill, "--", "env", "-", cwd=home / "work", env=theirs)
        assert done.returncode == 0, done.stderr
        return set(done.stdout.split())

    handed = names("probe")
    assert {"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "REDIS_URL", "COLOR", "GIVEN", "NEXUS_SKILL",
            "NEXUS_CALLER_CWD"} <= handed, handed
    assert not handed & {"DATABASE_URL", "MYSQL_PWD", "CI_JOB_JWT", "HTTPS_PROXY", "http_proxy", "NO_PROXY",
                         "SENTRY_DSN", "OTEL_EXPORTER_OTLP_HEADERS", "PLAIN", "NEXUS_HOME"}, handed
    write_config(nexus_home, '[skills.entries.probe.sandbox]\nnetwork = true\n')
    handed = names("probe")
    assert {"http_proxy", "NO_PROXY"} <= handed and "HTTPS_PROXY" not in handed, handed
    assert {"DATABASE_URL", "MYSQL_PWD", "CI_JOB_JWT", "HTTPS_PROXY", "PLAIN"} <= names("mine")


def test_an_added_skill_named_like_another_skills_key_gets_nothing_of_its_config(managed, workspace, bindir, tmp_path,
                                                                                 nexus_home):
    """The user's skill `mymail` keeps its config under skillKey mailer; an added skill named `mailer` (no
    skillKey at all) got its apiKey, its env and its network. It gets nothing of it now, `skills check` calls it
    an error and `skills add` says so; the user's own skills still share a key."""
    make_tool(bindir, "showenv", "#!/bin/sh\nenv\n")
    write_skill(workspace, "mymail", meta={"tool": "showenv", "primaryEnv": "MAILER_KEY", "skillKey": "mailer"})
    write_skill(workspace, "mine", meta={"tool": "showenv", "primaryEnv": "MAILER_KEY", "skillKey": "mailer"})
    write_config(nexus_home, '[skills.entries.mailer]\napiKey = "mailer-secret-key"\nenv = { MAILER_FROM = "me" }\n'
                             '[skills.entries.mailer.sandbox]\nnetwork = true\n')
    source = tmp_path / "source"
    write_skill(source, "mailer", meta={"tool": "showenv", "primaryEnv": "MAILER_KEY"})
    added = subprocess.run(["nexus", "skills", "add", str(source / "mailer"), "--copy", "--yes"], capture_output=True,
                           text=True)
    assert added.returncode == 0, added.stderr
    assert "mailer: another skill takes its name as its skillKey: mailer gets nothing of [skills.entries.mailer]" \
        in added.stderr, added.stderr
    assert "mailer: runs confined: network no" in added.stdout, added.stdout
    for name in ("mymail", "mine"):
        own = subprocess.run(["nexus", "skill", "run", name], capture_output=True, text=True)
        assert own.returncode == 0 and "MAILER_FROM=me" in own.stdout, (name, own.stderr)
    stolen = subprocess.run(["nexus", "skill", "run", "mailer"], capture_output=True, text=True)
    assert "mailer-secret-key" not in stolen.stdout + stolen.stderr and "MAILER_FROM" not in stolen.stdout
    shown = json.loads(subprocess.run(["nexus", "skill", "show", "mailer", "--json"], capture_output=True, text=True,
                                      check=True).stdout)
    assert shown["permissions"]["network"] is False and shown["fromConfig"] == {
        "env": [], "apiKey": False, "apiKeyEnv": "MAILER_KEY"}
    check = subprocess.run(["nexus", "skills", "check", str(managed / "mailer")], capture_output=True, text=True)
    assert check.returncode == 1
    assert "its name is the skillKey of mine, mymail: an added skill named so gets nothing of " \
           "[skills.entries.mailer]" in check.stdout, check.stdout
    allow = subprocess.run(["nexus", "skill", "allow", "mailer", "network"], capture_output=True, text=True)
    assert allow.returncode == 1 and "[skills.entries.mailer] is that skill's config" in allow.stderr, allow.stderr
    mine = subprocess.run(["nexus", "skills", "check", str(workspace / "mine")], capture_output=True, text=True)
    assert "skillKey" not in mine.stdout


@needs_sandbox
def test_the_bundled_skills_run_confined_with_their_declarations(home, nexus_home):
    """skills.sandbox.mode = "all" confines the bundled skills too: disk-report reads the folder it is called from
    (python3 as the PATH finds it, a venv's here), tmux reaches its socket folder through the known tools' table."""
    write_config(nexus_home, '[skills.sandbox]\nmode = "all"\n')
    (home / "work" / "big").write_bytes(b"x" * 50_000)
    report = run("disk-report", "--", ".", "--json", cwd=home / "work")
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["files"][0]["path"].endswith("big"), report.stdout
    denied = run("disk-report", "--", str(home / ".ssh"), cwd=home / "work")
    assert str(home / ".ssh" / "id_rsa") not in denied.stdout
    if shutil.which("tmux"):
        version = run("tmux", "--", "-V", cwd=home / "work")
        assert version.returncode == 0 and version.stdout.startswith("tmux "), version.stderr
