"""What nexus tells is true and said where it is read: a confined skill's denial at a terminal as in a pipe,
README's claims, one number format."""

import json
import os
import subprocess

import pytest
from helpers import make_tool, read_log, write_config, write_skill
from test_sandbox import SH_PROBE, at_a_terminal, home, managed, needs_sandbox, probe_skill  # noqa: F401 (fixtures)


@needs_sandbox
def test_a_confined_skills_denial_says_what_was_denied_at_a_terminal_too(managed, bindir, home):
    """At a terminal, the tool's stderr used to go to it unread: the hint then named every grant 'if it was
    denied one of them'. It names the path denied, at a terminal as in a pipe."""
    probe_skill(managed, bindir, program=SH_PROBE)
    key = home / ".ssh" / "id_rsa"
    code, said = at_a_terminal(["nexus", "skill", "run", "probe", "--", "read", str(key)])
    assert code == 3 and "Permission denied" in said, said
    assert f"was denied reading {key}: to grant it, nexus skill allow probe --read {key}" in said, said
    assert "if it was denied one of them" not in said
    piped = subprocess.run(["nexus", "skill", "run", "probe", "--", "read", str(key)], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL)
    assert piped.returncode == 3 and f"to grant it, nexus skill allow probe --read {key}" in piped.stderr
