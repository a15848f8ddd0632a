"""Every console script answers --help, and usage errors exit 2."""

import pytest

SCRIPTS = ["nexus", "nexus-discover", "nexus-manifest", "nexus-verify", "nexus-run", "nexus-stats", "nexus-mcp"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_help(script_runner, script):
    result = script_runner.run([script, "--help"])
    assert result.returncode == 0
    assert "Usage:" in result.stdout and result.stderr == ""


@pytest.mark.parametrize("argv", [["nexus-discover", "--bogus"], ["nexus-manifest"], ["nexus-manifest", "frob"],
                                  ["nexus", "frob"], ["nexus"], ["nexus", "skills", "list", "--bogus"],
                                  ["nexus-verify"], ["nexus", "skills", "list", "--ready", "--locked"],
                                  ["nexus-mcp", "--max-output", "lots"], ["nexus", "mcp", "--watch", "-1"]])
def test_usage_errors_exit_2(script_runner, argv):
    result = script_runner.run(argv)
    assert result.returncode == 2
    assert result.stdout == "" and result.stderr


def test_version(script_runner):
    from nexus import __version__

    assert script_runner.run(["nexus", "--version"]).stdout == f"nexus {__version__}\n"
