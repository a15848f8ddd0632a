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


@pytest.mark.parametrize("argv, first", [
    (["nexus", "skills", "list", "--redy"], "nexus: skills list: unknown option --redy (did you mean --ready?)"),
    (["nexus", "skill", "run", "x", "--timout", "3"], "nexus: unknown option '--timout' (did you mean --timeout?)"),
    (["nexus", "--verison"], "nexus: unknown option --verison (did you mean --version?)"),
    (["nexus-verify", "--alll"], "nexus-verify: unknown option --alll (did you mean --all?)"),
    (["nexus", "skills", "verify"], "nexus: skills verify: missing --all"),
])
def test_a_mistyped_option_gets_the_one_meant_and_a_missing_one_is_named(script_runner, argv, first):
    result = script_runner.run(argv)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[0].startswith(first), result.stderr


def test_nexus_help_is_git_help(script_runner):
    assert script_runner.run(["nexus", "help"]).stdout == script_runner.run(["nexus", "--help"]).stdout
    for words in (["skill", "run"], ["skills"], ["mcp"], ["mcp", "config"]):
        helped = script_runner.run(["nexus", "help", *words])
        assert helped.returncode == 0 and helped.stdout == script_runner.run(["nexus", *words, "--help"]).stdout
    typo = script_runner.run(["nexus", "help", "skil", "run"])
    assert typo.returncode == 2 and "'skil run' is not a nexus command: did you mean 'skill run'?" in typo.stderr


def every_help():
    from nexus.tools.commands import COMMANDS, PLUMBING_TOOLS

    return [(command.prog, command.help()) for command in (*COMMANDS, *PLUMBING_TOOLS)]


def test_no_help_shows_a_placeholder_or_a_garbled_exit_status(script_runner):
    assert "nexus-run disk-report -- . --top 3" in script_runner.run(["nexus-run", "--help"]).stdout
    assert "  nexus skill run disk-report -- . --top 3" in script_runner.run(["nexus", "skill", "run", "--help"]).stdout
    for prog, text in every_help():
        assert "PROG" not in text, prog
        statuses = text.partition("\nExit status:\n")[2].partition("\n\n")[0].splitlines()
        for line in statuses:  # each status at the margin of its list, or its text going on under the text
            assert line.startswith("  ") and (line[2:3].isdigit() or line[2:3] == "N" or line.startswith("     ")), \
                (prog, line)


@pytest.mark.parametrize("argv, said", [
    (["nexus", "run", "x"], "Did you mean 'nexus skill run x'?"),
    (["nexus", "list"], "Did you mean 'nexus skills list'?"),
    (["nexus", "stats"], "Did you mean 'nexus skill stats'?"),
    (["nexus", "skill", "run", "disk_report"], "did you mean 'disk-report'?"),
    (["nexus", "mcp", "config", "--client", "claud-code"], "not 'claud-code' (did you mean claude-code?)"),
])
def test_a_likely_typo_gets_what_was_meant(script_runner, argv, said):
    result = script_runner.run(argv)
    assert result.returncode == 2 and said in result.stderr.splitlines()[0], result.stderr


def test_a_source_that_names_nothing_is_bad_input_as_every_other(script_runner, tmp_path):
    result = script_runner.run(["nexus", "skills", "add", str(tmp_path / "no-such-folder")])
    assert result.returncode == 2 and "is not a folder, a git URL or owner/repo" in result.stderr
