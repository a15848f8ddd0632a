"""A skill's confinement is resolved once and cached (gateway.sandbox: state/sandbox/NAME.json), and never
grants from a stale cache: a link retargeted, a grant taken out of the config, a SKILL.md edited, a secret
that appears after the cache was built, each changes the next call's ruleset; a torn, foreign or loose cache
file is ignored and rewritten.

The tool is test_sandbox's probe; nothing is mocked: the kernel's Landlock does the refusing.
"""

import json
import os
import sys

import pytest

from helpers import make_tool, write_config, write_skill
from test_sandbox import PROBE, home, managed, needs_sandbox, probe_skill, run  # noqa: F401 - fixtures

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="confinement is Linux's here"),
              pytest.mark.once, needs_sandbox]


def cache(nexus_home, name="probe"):
    return nexus_home / "state" / "nexus" / "sandbox" / f"{name}.json"


def reads(path, home):
    return run("probe", "--", "read", path, cwd=home / "work").returncode


def test_a_link_retargeted_between_calls_never_grants_its_old_target(managed, bindir, home, tmp_path, nexus_home):
    """A read grant through a link: the cache holds the link's real path; retargeted, the next call reads the new
    target and no longer the old one (an attacker who edits a symlink between two calls gets nothing of it)."""
    public, other = tmp_path / "public", tmp_path / "other"
    for folder in (public, other):
        folder.mkdir()
        (folder / "file").write_text(f"{folder.name}\n")
    (home / "data").symlink_to(public)
    probe_skill(managed, bindir, sandbox={"read": ["~/data"]})
    assert reads(public / "file", home) == 0
    assert cache(nexus_home).exists() and reads(public / "file", home) == 0  # the second call from the cache
    assert reads(other / "file", home) == 3
    (home / "data").unlink()
    (home / "data").symlink_to(other)
    assert reads(other / "file", home) == 0
    assert reads(public / "file", home) == 3


def test_a_grant_removed_from_the_config_is_gone_at_the_next_call(managed, bindir, home, nexus_home):
    probe_skill(managed, bindir)
    (home / "notes" / "plain").write_text("x\n")
    write_config(nexus_home, '[skills.entries.probe.sandbox]\nread = ["~/notes"]\n')
    assert reads(home / "notes" / "plain", home) == 0
    assert cache(nexus_home).exists() and reads(home / "notes" / "plain", home) == 0
    write_config(nexus_home, "")
    assert reads(home / "notes" / "plain", home) == 3


def test_an_edited_skill_md_is_confined_as_it_now_says(managed, bindir, home, nexus_home):
    probe_skill(managed, bindir, sandbox={"read": ["~/notes"]})
    (home / "notes" / "plain").write_text("x\n")
    assert reads(home / "notes" / "plain", home) == 0
    assert cache(nexus_home).exists() and reads(home / "notes" / "plain", home) == 0
    write_skill(managed, "probe", meta={"tool": "probe"})
    assert reads(home / "notes" / "plain", home) == 3


def test_a_secret_that_appears_after_the_cache_was_built_is_denied(managed, bindir, home, nexus_home):
    """The deny list holds the secrets that exist (~/.netrc): one made after the cache was built is denied at the
    next call, under a grant of the whole home."""
    probe_skill(managed, bindir, sandbox={"read": ["~"]})
    (home / "notes" / "plain").write_text("x\n")
    assert reads(home / "notes" / "plain", home) == 0
    assert cache(nexus_home).exists() and reads(home / "notes" / "plain", home) == 0
    (home / ".netrc").write_text("machine example.com password SECRET\n")
    assert reads(home / ".netrc", home) == 3
    assert reads(home / "notes" / "plain", home) == 0


def test_a_program_installed_earlier_on_path_after_the_cache_was_built_runs_with_its_prefix(managed, bindir, home,
                                                                                          tmp_path, nexus_home):
    """Where the program lies is read (installed()): one that appears earlier on PATH is the one that runs next,
    and its prefix is read, not the old one's."""
    early = tmp_path / "early"
    (early / "bin").mkdir(parents=True)
    (early / "lib").mkdir()
    (early / "lib" / "data").write_text("x\n")
    probe_skill(managed, bindir)
    env = {"PATH": f"{early / 'bin'}:{os.environ['PATH']}"}
    done = run("probe", "--", "read", early / "lib" / "data", cwd=home / "work", env=env)
    assert done.returncode == 3 and cache(nexus_home).exists()
    make_tool(early / "bin", "probe", PROBE)
    done = run("probe", "--", "read", early / "lib" / "data", cwd=home / "work", env=env)
    assert done.returncode == 0, done.stderr


def test_a_torn_foreign_or_loose_cache_file_is_ignored_and_rewritten(managed, bindir, home, nexus_home):
    """The cache holds grants: one that is not JSON, or not written by nexus (another owner, readable by others)
    is never trusted, even when it says to read ~/.ssh; the call rebuilds it."""
    probe_skill(managed, bindir)
    secret = home / ".ssh" / "id_rsa"
    assert reads(home / "work", home) == 3  # a folder: read() fails, but the call runs and builds the cache
    path = cache(nexus_home)
    kept = json.loads(path.read_text())
    forged = [dict(kept[0], found=dict(kept[0]["found"], read=[*kept[0]["found"]["read"], str(home)],
                                       deny=[]))]
    path.write_text("{not json")
    assert reads(home / "notes", home) == 3 and isinstance(json.loads(path.read_text()), list)
    path.write_text(json.dumps(forged))
    path.chmod(0o644)
    assert reads(secret, home) == 3
    assert path.stat().st_mode & 0o077 == 0
    if os.geteuid() == 0:  # root alone can give a file away
        path.write_text(json.dumps(forged))
        path.chmod(0o600)
        os.chown(path, 65534, 65534)
        assert reads(secret, home) == 3
        assert path.stat().st_uid == 0
    path.write_text(json.dumps(forged))  # ours, 0600: the cache nexus wrote, trusted (a confined skill never reaches it)
    path.chmod(0o600)
    assert reads(secret, home) == 0
