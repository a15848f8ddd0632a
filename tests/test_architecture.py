"""The shape ARCHITECTURE.md describes: one command table behind help, man pages and completions; one
table of paths; tools that build on the library only; one parse of `skill run` that agrees with docopt."""

import ast
import os
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_command_is_in_the_help_the_man_page_and_every_completion(script_runner):
    from nexus.tools.nexus import COMMANDS, GROUPS

    overview = script_runner.run(["nexus", "--help"]).stdout
    groups = {group: script_runner.run(["nexus", group, "--help"]) for group in GROUPS}
    man = (ROOT / "man" / "nexus.1").read_text()
    bash, zsh, fish = ((ROOT / "completions" / name).read_text() for name in ("nexus.bash", "_nexus", "nexus.fish"))
    for command in COMMANDS:
        *group, last = command.words.split()
        assert re.search(rf"^  {re.escape(command.words)} +{re.escape(command.summary)}$", overview, re.M), command.words
        if group:
            shown = groups[group[0]]
            assert shown.returncode == 0 and re.search(rf"^  {last} +{re.escape(command.summary)}$", shown.stdout, re.M)
        assert f'.SS "{command.words}"' in man
        parent = " ".join(["nexus", *group])
        for text in (bash, zsh):
            assert re.search(rf"'{parent}'\) subcommands='[^']*\b{last}\b", text), (command.words, "bash/zsh")
        at = " ".join(["__nexus_at", *group])
        assert re.search(rf"complete -c nexus(?: -n '{at}')? -a '[^']*\b{last}\b", fish), (command.words, "fish")


def test_every_command_has_a_known_output_kind_and_a_usage_of_its_own():
    from nexus.cli.output import KINDS
    from nexus.tools.nexus import COMMANDS

    assert len({c.words for c in COMMANDS}) == len(COMMANDS)
    for command in COMMANDS:
        assert command.output in KINDS, command.words
        usage = [line.strip() for line in command.usage().partition("Usage:\n")[2].split("\n\n")[0].splitlines()]
        assert usage and all(line.startswith(f"nexus {command.words}") for line in usage), command.words


def test_each_row_of_the_files_table_is_the_path_nexus_uses(monkeypatch, tmp_path):
    from nexus import paths

    monkeypatch.setenv("NEXUS_HOME", "/H")
    monkeypatch.setenv("MANAGED_SKILLS_DIR", "/M")
    used = {paths.home(), paths.config_file(), paths.workspace_skills(), paths.managed_skills(),
            paths.managed_lockfile(), paths.manifest_file(), paths.state_file("name"),
            paths.usage_log("name"), paths.skill_lock("name"), paths.config_cache(), paths.links_file(), paths.upgrades_file(),
            paths.cache_dir(), paths.bin_dir(), *paths.sandbox_folders("name")}
    table = {where.rstrip("/").replace("$NEXUS_HOME", "/H").replace("$MANAGED_SKILLS_DIR", "/M").replace("NAME", "name")
             for where, _ in paths.FILES}
    assert used <= table
    man = (ROOT / "man" / "nexus.1").read_text().replace("\\-", "-")
    for where, _ in paths.FILES:
        assert where in man, where


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield ("." * node.level) + node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def test_no_tool_imports_another_and_the_library_imports_no_tool():
    for path in (ROOT / "tools" / "plumbing").glob("*.py"):
        assert not [m for m in _imports(path) if m.startswith("nexus.tools")], path
    for path in (ROOT / "tools" / "porcelain").glob("*.py"):
        assert not [m for m in _imports(path) if m.startswith(("nexus.tools", "."))], path
    for path in (ROOT / "lib").rglob("*.py"):
        assert not [m for m in _imports(path) if "tools" in m.split(".")], path


@pytest.mark.parametrize("argv", [
    ["tmux"], ["tmux", "--", "ls", "-la"], ["tmux", "--json", "--", "a"], ["tmux", "--timeout", "5", "--", "x", "--y"],
    ["tmux", "--dry-run", "--no-verify", "--no-log"], ["tmux", "--timeout=2.5"], ["tmux", "--", "--"], ["tmux", "--"],
    ["tmux", "--var", "A=1", "--var=B=2", "--", "x"], ["tmux", "--var", "A=1"],
])
def test_the_gateways_own_parser_agrees_with_docopt(argv):
    from docopt import docopt

    from nexus.gateway import run

    doc = run.usage("nexus-run")
    expected = docopt(doc, argv=argv, default_help=False)
    assert run.parse(argv, doc) == dict(expected)


def usages():
    """(usage text, words before the arguments) of every command and tool."""
    from nexus.tools.nexus import COMMANDS

    found = [(command.usage(), command.words.split()) for command in COMMANDS]
    for name in ("discover", "manifest", "run", "stats", "verify"):
        module = __import__(f"nexus.tools.plumbing.{name}", fromlist=["main"])
        found.append((module.main.__doc__, []))
    return found


def argvs(doc, words):
    """Every argv made of a usage line's words and arguments (as "x") and up to two of the flags the
    usage names, and a few that no usage allows."""
    import itertools

    from nexus.cli.command import _tokens

    flags = sorted(set(re.findall(r"--[a-z][a-z-]*", doc)) - {"--help"}) + ["--nope"]
    usage = doc.partition("Usage:")[2].split("\n\n")[0].strip().splitlines()
    for line in usage:
        depth, base = 0, []
        for token in _tokens(line):
            depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(token, 0)
            if depth == 0 and token not in "[]()|..." and not token.startswith("-"):
                base.append("x" if token.isupper() else token)
        for n in range(3):
            for chosen in itertools.combinations(flags, n):
                yield [*base, *chosen] if not words else base[:len(words)] + [*base[len(words):], *chosen]


def test_quick_parse_agrees_with_docopt_on_every_form_it_answers():
    from docopt import DocoptExit, docopt

    from nexus.cli.command import quick_parse

    answered = 0
    for doc, words in usages():
        for argv in argvs(doc, words):
            quick = quick_parse(doc, argv)
            if quick is None:
                continue
            answered += 1
            try:
                expected = dict(docopt(doc, argv=argv, default_help=False))
            except (DocoptExit, SystemExit):
                expected = "a usage error"
            assert quick == expected, (argv, doc.partition("Usage:")[2][:200])
    assert answered > 100
    for argv in (["skills", "list"], ["skills", "list", "--json"], ["status"], ["status", "--json"],
                 ["skills", "list", "--ready", "--json"], ["skills", "verify", "--all"], ["skill", "show", "gog"]):
        doc = next(doc for doc, words in usages() if argv[:len(words)] == words)
        assert quick_parse(doc, argv) is not None, argv


def test_listing_and_status_import_no_docopt(tmp_path):
    import subprocess
    import sys

    env = {**os.environ, "NEXUS_HOME": str(tmp_path)}
    for argv in (["skills", "list", "--json"], ["status"]):
        probe = (f"import sys; from nexus.tools.nexus import main; main({argv!r}); "
                 "print('docopt' in sys.modules, file=sys.stderr)")
        done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
        assert done.stderr.strip().splitlines()[-1] == "False", argv


def test_the_gateway_imports_nothing_heavy(tmp_path):
    import subprocess
    import sys

    probe = ("import sys; from nexus.tools.nexus import main; code = main(['skill', 'run', 'filesystem']); "
             "print(sorted(m for m in ('yaml', 'docopt', 'jsonlines', 'tomllib', 're', 'subprocess', 'threading')"
             " if m in sys.modules), file=sys.stderr)")
    env = {**os.environ, "NEXUS_HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, check=True)  # the first run scans
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert done.stderr.strip().splitlines()[-1] == "[]"
