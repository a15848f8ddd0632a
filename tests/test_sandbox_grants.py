"""A confined skill's grants hold to what they name (gateway.sandbox): a link it plants in a place it writes
never carries a grant out of that place, a deny is lifted only by a grant that names it, `..` never leads out
of a place, and the cache of a resolution keeps no secret and never outlives the code or the skill.

The tool is test_sandbox's probe; nothing is mocked: the kernel's Landlock does the refusing.
"""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from helpers import write_config, write_skill
from test_sandbox import home, managed, needs_sandbox, probe_skill, run  # noqa: F401 - fixtures

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="confinement is Linux's here"),
              pytest.mark.once]


def cache(nexus_home, name="probe"):
    return nexus_home / "state" / "nexus" / "sandbox" / f"{name}.json"


def own(nexus_home, name="probe"):
    """The skill's {state} and {tmp}, as the gateway makes them."""
    folder = nexus_home / "state" / "nexus" / "skills" / name
    return folder / "data", folder / "tmp"


def call(home, *args):
    return run("probe", "--", *map(str, args), cwd=home / "work")


@needs_sandbox
@pytest.mark.parametrize("cached", [True, False])
def test_a_link_the_skill_plants_in_its_own_folders_grants_nothing(managed, bindir, home, nexus_home, cached):
    """{state}/cache -> ~/.ssh and {tmp}/out -> ~/.gitconfig, made by the skill in one call: the next call, from
    its cache or built anew, reads no key and writes no git setting (a pager there runs unconfined), and says
    which grant it dropped and why; `skill show` says it too."""
    (home / ".gitconfig").write_text("[user]\n")
    probe_skill(managed, bindir, sandbox={"read": ["{state}/cache"], "write": ["{tmp}/out"]})
    assert call(home, "read", home / ".ssh" / "id_rsa").returncode == 3
    state, tmp = own(nexus_home)
    (state / "cache").symlink_to(home / ".ssh")  # what the skill may do: it writes its {state} and {tmp}
    (tmp / "out").symlink_to(home / ".gitconfig")
    if not cached:
        cache(nexus_home).unlink()
    read = call(home, "read", home / ".ssh" / "id_rsa")
    assert read.returncode == 3, read.stdout
    assert "its grant {state}/cache is dropped: it leads out of" in read.stderr, read.stderr
    assert call(home, "write", home / ".gitconfig").returncode == 3
    assert (home / ".gitconfig").read_text() == "[user]\n"
    shown = subprocess.run(["nexus", "skill", "show", "probe", "--json"], capture_output=True, text=True)
    dropped = json.loads(shown.stdout)["permissions"]["dropped"]
    assert set(dropped) == {"{state}/cache", "{tmp}/out"} and "through a link" in dropped["{tmp}/out"]


@needs_sandbox
def test_a_link_in_a_write_grant_leads_nowhere_else(managed, bindir, home, tmp_path, nexus_home):
    """A read grant inside a write grant: the skill can make it a link to any folder; it stays its own."""
    private = tmp_path / "private"
    private.mkdir()
    (private / "diary").write_text("secret\n")
    (home / "proj").mkdir()
    probe_skill(managed, bindir, sandbox={"write": ["~/proj"], "read": ["~/proj/data"]})
    (home / "proj" / "data").symlink_to(private)
    assert call(home, "read", private / "diary").returncode == 3
    assert call(home, "write", home / "proj" / "made").returncode == 0


@needs_sandbox
def test_a_grant_swapped_for_a_link_into_a_secret_never_lifts_its_deny(managed, bindir, home, nexus_home):
    """`~/data` granted, then made a link to ~/.aws: the deny list holds; a grant of ~/.ssh itself still reads it."""
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = X\n")
    (home / "data").symlink_to(home / ".aws")
    probe_skill(managed, bindir, sandbox={"read": ["~/data"]})
    assert call(home, "read", home / ".aws" / "credentials").returncode == 3
    write_config(nexus_home, '[skills.entries.probe.sandbox]\nread = ["~/.ssh"]\n')
    assert call(home, "read", home / ".ssh" / "id_rsa").returncode == 0


@needs_sandbox
def test_nexus_state_is_never_granted_but_the_skills_own(managed, bindir, home, nexus_home):
    """A grant that names nexus's state (every skill's {state}, the caches) is dropped; the config is never
    lifted from the deny list even when named."""
    other = nexus_home / "state" / "nexus" / "skills" / "gh" / "data"
    other.mkdir(parents=True)
    (other / "hosts.yml").write_text("oauth_token: gho_SECRET\n")
    config = write_config(nexus_home, "")
    probe_skill(managed, bindir, sandbox={"read": [str(nexus_home / "state" / "nexus"), str(config)]})
    assert call(home, "read", other / "hosts.yml").returncode == 3
    assert call(home, "read", config).returncode == 3


@needs_sandbox
def test_no_write_grant_reaches_git_settings(managed, bindir, home, nexus_home):
    (home / ".gitconfig").write_text("[user]\n")
    (home / ".config" / "git").mkdir(parents=True)
    probe_skill(managed, bindir, sandbox={"write": ["~"]})
    assert call(home, "write", home / ".gitconfig").returncode == 3
    assert call(home, "write", home / ".config" / "git" / "config").returncode == 3
    assert call(home, "write", home / "notes" / "mine").returncode == 0


def test_dot_dot_in_a_declared_or_configured_folder_is_refused(managed, bindir, home, tmp_path, nexus_home):
    source = tmp_path / "src"
    write_skill(source, "spy", meta={"tool": "probe", "sandbox": {"read": ["{state}/../../gh/data"]}})
    checked = subprocess.run(["nexus", "skills", "check", str(source / "spy")], capture_output=True, text=True)
    assert checked.returncode != 0
    assert "spy" in checked.stdout + checked.stderr and "'{state}/../../gh/data'" in checked.stdout + checked.stderr
    refused = subprocess.run(["nexus", "config", "set", "skills.entries.probe.sandbox.read", '["{state}/../x"]'],
                             capture_output=True, text=True)
    assert refused.returncode == 2, refused.stderr


@needs_sandbox
def test_dot_dot_in_a_configured_grant_refuses_the_call(managed, bindir, home, nexus_home):
    """Written into the config by hand (no `config set` to refuse it): the call is refused, naming the file."""
    other = nexus_home / "state" / "nexus" / "skills" / "gh" / "data"
    other.mkdir(parents=True)
    (other / "hosts.yml").write_text("oauth_token: gho_SECRET\n")
    probe_skill(managed, bindir)
    write_config(nexus_home, '[skills.entries.probe.sandbox]\nread = ["{state}/../../gh/data"]\n')
    done = call(home, "read", other / "hosts.yml")
    assert done.returncode == 2 and "nexus.toml" in done.stderr and "no . or .." in done.stderr, done.stderr
    assert "gho_SECRET" not in done.stdout


@needs_sandbox
def test_a_changed_module_of_nexus_rebuilds_the_cache(managed, bindir, home, nexus_home):
    """The default deny list lives in config/keys.py: a new version of it (here: its file touched) is a new key."""
    probe_skill(managed, bindir)
    assert call(home, "read", "/etc/hostname").returncode == 0
    assert len(json.loads(cache(nexus_home).read_bytes())) == 1
    keys = importlib.util.find_spec("nexus.config.keys").origin
    os.utime(keys)
    assert call(home, "read", "/etc/hostname").returncode == 0
    assert len(json.loads(cache(nexus_home).read_bytes())) == 2


@needs_sandbox
def test_the_cache_keeps_no_secret_and_goes_with_the_skill(tmp_path, bindir, home, nexus_home, monkeypatch):
    source = tmp_path / "source"
    probe_skill(source, bindir)
    assert subprocess.run(["nexus", "skills", "add", str(source / "probe"), "--yes"], capture_output=True).returncode == 0
    write_config(nexus_home, '[skills.entries.github]\napiKey = "ghp_SUPERSECRETTOKEN"\n'
                             '[skills.entries.other.env]\nDATABASE_URL = "postgres://u:hunter2@db/x"\n')
    monkeypatch.setenv("NEXUS_OTLP_TOKEN", "tok_abc")
    assert call(home, "read", "/etc/hostname").returncode == 0
    text = cache(nexus_home).read_text()
    assert not any(secret in text for secret in ("ghp_SUPER", "hunter2", "tok_abc"))
    removed = subprocess.run(["nexus", "skills", "remove", "probe"], capture_output=True, text=True)
    assert removed.returncode == 0, removed.stderr
    assert not cache(nexus_home).exists()


@needs_sandbox
def test_a_cached_field_of_the_wrong_type_is_never_trusted(managed, bindir, home, nexus_home):
    """"write": "/home/..." (a string) would be the rules "/", "h", ...: the entry is rebuilt instead."""
    probe_skill(managed, bindir)
    assert call(home, "read", "/etc/hostname").returncode == 0
    kept = json.loads(cache(nexus_home).read_bytes())
    kept[0]["found"]["write"] = str(home / "work")
    cache(nexus_home).write_text(json.dumps(kept))
    assert call(home, "write", home / "notes" / "planted").returncode == 3
    assert not (home / "notes" / "planted").exists()


def test_a_path_that_answers_twice_in_one_build_tears_it(tmp_path):
    """A link flipped while a resolution is built: the build is marked torn, and so never cached."""
    from nexus.gateway import sandbox

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "a")
    look = sandbox.Resolution()
    look.real(str(tmp_path / "link"))
    assert not look.torn
    (tmp_path / "link").unlink()
    (tmp_path / "link").symlink_to(tmp_path / "b")
    look.real(str(tmp_path / "link"))
    assert look.torn


@needs_sandbox
def test_a_program_where_the_skill_writes_never_widens_its_reads(managed, bindir, home, tmp_path, nexus_home):
    """Its program in a write grant (a project's bin/ on PATH): the skill can make it a link to a file in any
    folder, which installed() would grant whole; nothing of it is followed."""
    private = tmp_path / "private"
    private.mkdir()
    (private / "diary").write_text("secret\n")
    probe_skill(managed, bindir, sandbox={"write": ["~/proj"]})
    (private / "probe").write_bytes((bindir / "probe").read_bytes())
    (private / "probe").chmod(0o755)
    (home / "proj" / "bin").mkdir(parents=True)
    (home / "proj" / "bin" / "probe").symlink_to(private / "probe")
    path = f"{home / 'proj' / 'bin'}:{os.environ['PATH']}"
    done = run("probe", "--", "read", str(private / "diary"), cwd=home / "work", env={"PATH": path})
    assert done.returncode != 0 and "secret" not in done.stdout, done.stdout
