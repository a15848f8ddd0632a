"""completions/: the bash function offers commands, flags, option values and skill names (zsh, fish when present)."""

import os
import pathlib
import re
import subprocess
import sys

import pytest
from helpers import bundled_names, needs, write_skill

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMPLETIONS = ROOT / "completions"


@pytest.fixture
def shell_env(script_runner, workspace, tmp_path):
    """Two skills in the manifest, the nexus console script first on PATH, a scratch folder to complete in."""
    for name in ("alpha", "beta-tool"):
        write_skill(workspace, name)
    assert script_runner.run(["nexus", "skills", "refresh"]).returncode == 0
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    (tmp_path / "notes.md").write_text("")
    (tmp_path / "notes-dir").mkdir()
    return env


def bash_complete(env, *words):
    """COMPREPLY of _nexus for the command line `words`, the last word being the one under the cursor."""
    script = f'source "{COMPLETIONS / "nexus.bash"}"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _nexus; ' \
             'printf "%s\\n" "${COMPREPLY[@]}"'
    result = subprocess.run(["bash", "-c", script, "bash", *words], env=env, capture_output=True, text=True)
    assert result.stderr == ""
    return [line for line in result.stdout.splitlines() if line]


def words_after(*group):
    """The words the command table has after `group`, in its order, once each: what completion must offer."""
    from nexus.tools.commands import COMMANDS

    found = [c.words.split() for c in COMMANDS]
    return list(dict.fromkeys(w[len(group)] for w in found if len(w) > len(group) and w[:len(group)] == list(group)))


@pytest.mark.parametrize("words, expected", [
    (["nexus", ""], words_after()),
    (["nexus", "mcp", ""], ["config", "token"]),
    (["nexus", "mcp", "config", "--client", "c"],
     ["claude-code", "claude-desktop", "cursor", "codex", "cline", "copilot-cli", "continue"]),
    (["nexus", "mcp", "config", "--scope", ""], ["project", "user"]),
    (["nexus", "--"], ["--help", "--version"]),
    (["nexus", "skill", ""], words_after("skill")),
    (["nexus", "config", "set", "--type", ""], ["bool", "int", "string", "list", "table"]),
    (["nexus", "skills", "c"], ["check", "cursor-rules"]),
    (["nexus", "skills", "list", "--"], ["--ready", "--locked", "--all", "--json", "--summary", "--help"]),
    (["nexus", "skill", "run", "alpha", "--t"], ["--timeout"]),
    (["nexus", "skills", "prompt", "--format", ""], ["xml", "markdown"]),
    (["nexus", "skills", "verify", "--stale", ""], []),  # a number: nothing to offer
    (["nexus-manifest", ""], ["write", "read", "check"]),
    (["nexus-manifest", "read", "--"], ["--invalid", "--help"]),
])
def test_bash_commands_flags_and_values(shell_env, words, expected):
    assert bash_complete(shell_env, *words) == expected


@pytest.mark.parametrize("words", [["nexus", "skill", "run", ""], ["nexus", "skill", "show", ""],
                                   ["nexus", "skill", "stats", "--days", "7", ""]])
def test_bash_skill_names_come_from_the_manifest(shell_env, words):
    assert bash_complete(shell_env, *words) == sorted(["alpha", "beta-tool"] + bundled_names())
    assert bash_complete(shell_env, *words[:-1], "be") == ["beta-tool"]


def test_bash_stops_offering_names_once_one_is_given(shell_env):
    assert bash_complete(shell_env, "nexus", "skill", "show", "alpha", "") == []


def test_bash_files_and_folders_where_the_usage_says_so(shell_env, tmp_path):
    prefix = str(tmp_path / "notes")
    both = [prefix + "-dir", prefix + ".md"]
    assert sorted(bash_complete(shell_env, "nexus", "skills", "agents-md", "--write", prefix)) == both
    assert bash_complete(shell_env, "nexus", "skills", "cursor-rules", "--write", prefix) == [prefix + "-dir"]
    assert sorted(bash_complete(shell_env, "nexus", "skill", "run", "alpha", "--", "x", prefix)) == both
    assert sorted(bash_complete(shell_env, "nexus", "skills", "check", "a", prefix)) == both


def test_bash_offers_every_command_of_the_dispatch_table(shell_env):
    from nexus.tools.commands import COMMANDS

    for command in COMMANDS:
        *group, last = command.words.split()
        assert last in bash_complete(shell_env, "nexus", *group, last[:2]), command.words


def test_list_skills_reads_only_the_manifest(shell_env):
    probe = ("import sys; from nexus.tools.nexus import main; main(['--list-skills']); "
             "print(sorted(m for m in ('yaml', 'docopt', 'jsonlines', 'tomllib') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], env=shell_env, capture_output=True, text=True)
    assert result.stdout.splitlines() == sorted(["alpha", "beta-tool"] + bundled_names()) + ["[]"]


@needs("zsh")
def test_zsh_offers_what_bash_does(shell_env):
    stubs = ('compadd() { while [[ $1 != -- ]]; do shift; done; shift; print -rl -- "$@"; }; '
             '_files() { print -r -- "FILES $*"; }; _call_program() { shift; "$@"; }; ')
    script = stubs + f'source "{COMPLETIONS / "_nexus"}" 2>/dev/null; words=("$@"); CURRENT=$#; _nexus'

    def complete(*words):
        result = subprocess.run(["zsh", "-f", "-c", script, "zsh", *words], env=shell_env, capture_output=True, text=True)
        return result.stdout.split()

    assert complete("nexus", "skill", "") == words_after("skill")
    assert complete("nexus", "skill", "run", "") == sorted(["alpha", "beta-tool"] + bundled_names())
    assert complete("nexus", "skills", "prompt", "--format", "") == ["xml", "markdown"]
    assert complete("nexus", "skills", "cursor-rules", "--write", "") == ["FILES", "-/"]


@needs("fish")
def test_fish_offers_what_bash_does(shell_env):
    def complete(line):
        script = f'source "{COMPLETIONS / "nexus.fish"}"; complete -C "{line}"'
        result = subprocess.run(["fish", "-c", script], env=shell_env, capture_output=True, text=True)
        return [candidate.split("\t")[0] for candidate in result.stdout.splitlines()]

    assert sorted(complete("nexus skill ")) == sorted(words_after("skill"))
    assert complete("nexus skill run ") == sorted(["alpha", "beta-tool"] + bundled_names())
    assert complete("nexus skill run alpha --ti") == ["--timeout"]
    assert sorted(complete("nexus skills prompt --format ")) == ["markdown", "xml"]


def test_zsh_and_fish_say_what_each_command_and_option_is():
    from nexus.tools.commands import COMMANDS, GROUPS

    zsh, fish = ((COMPLETIONS / name).read_text() for name in ("_nexus", "nexus.fish"))
    for command in COMMANDS:
        *group, last = command.words.split()
        about = GROUPS.get(command.words, command.summary)  # `mcp` is a group first
        first = about.split(". ")[0].split("; ")[0].rstrip(".").replace("'", "'\\''")
        assert f"    '{' '.join(['nexus', *group, last])}' '{first}'\n" in zsh, command.words
        assert re.search(rf"-a '{re.escape(last)}' -d '{re.escape(first.replace(chr(39) + chr(92) + chr(39) + chr(39), chr(92) + chr(39)))}'",
                         fish), command.words
    assert "    'nexus skill run --timeout' 'End the tool after SECONDS as timeout(1) does: SIGTERM to its" in zsh
    assert "-l timeout -x -d 'End the tool after SECONDS as timeout(1) does: SIGTERM to its" in fish


def test_completion_offers_sessions_jobs_and_capabilities_and_no_skill_for_var(shell_env, nexus_home, workspace,
                                                                                script_runner):
    from helpers import write_log

    write_log(nexus_home, "alpha", [{"ts": "2026-11-30T10:00:00.000Z", "skill": "alpha", "type": "tool", "ms": 1,
                                     "exit": 0, "session": "s-weekly"}])
    assert bash_complete(shell_env, "nexus", "session", "show", "s-") == ["s-weekly"]
    assert bash_complete(shell_env, "nexus", "skill", "stats", "--session", "") == ["s-weekly"]
    assert bash_complete(shell_env, "nexus", "session", "crystallize", "s-weekly", "--var", "") == []
    jobs = nexus_home / "state" / "nexus" / "jobs" / "20261130-100000-0a0b0c0d"
    jobs.mkdir(parents=True)
    (jobs / "job.json").write_text('{"id": "20261130-100000-0a0b0c0d", "skill": "alpha", "status": "finished"}')
    assert bash_complete(shell_env, "nexus", "job", "show", "") == ["20261130-100000-0a0b0c0d"]
    write_skill(workspace, "mailer", meta={"implements": ["email_sender"], "requires": {"capabilities": ["calendar"]}})
    assert script_runner.run(["nexus", "skills", "refresh"]).returncode == 0
    assert bash_complete(shell_env, "nexus", "capability", "resolve", "") == ["calendar", "email_sender"]
