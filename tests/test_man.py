"""man/*.1: generated from the usage docs and current, clean under groff, naming every option and command;
`make install` puts them, the completions and the console scripts in place and `make uninstall` removes them."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from helpers import console_scripts

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPTS = console_scripts(ROOT)
PAGES = sorted((ROOT / "man").glob("*.1"))


def page_text(prog):
    """The page's roff source with the escapes that matter here undone."""
    source = (ROOT / "man" / f"{prog}.1").read_text()
    return re.sub(r"\\f[BIR]", "", source).replace("\\-", "-").replace("\\e", "\\")


def usage_options(help_text):
    """The options named in a help text's Usage and Options sections."""
    found, section = set(), None
    for line in help_text.splitlines():
        if line and not line[0].isspace():
            section = line  # a heading such as "Options:", or a paragraph
        elif section in ("Usage:", "Options:"):
            found |= set(re.findall(r"(?<![\w-])--?[a-z][\w-]*", line))
    return found


def mentions(text, option):
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def test_generated_man_pages_and_completions_are_current():
    result = subprocess.run([sys.executable, str(ROOT / "man" / "generate.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, f"stale, run `make man` and commit: {result.stdout}{result.stderr}"


def test_every_console_script_has_a_page():
    assert {f"{prog}.1" for prog in SCRIPTS} == {page.name for page in PAGES}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_page_renders_without_warnings(page):
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed: rendering is not checked (the other man page tests still run)")
    result = subprocess.run([groff, "-man", "-ww", "-Tutf8", str(page)], capture_output=True, text=True)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    shown = re.sub(".\b", "", result.stdout)  # undo grotty's overstriking (bold)
    assert "SYNOPSIS" in shown and "EXIT STATUS" in shown


@pytest.mark.parametrize("prog", sorted(SCRIPTS))
def test_page_names_every_option_of_the_script(script_runner, prog):
    result = script_runner.run([prog, "--help"])
    assert result.returncode == 0, result.stderr
    options = usage_options(result.stdout)
    assert "--help" in options
    missing = sorted(option for option in options if not mentions(page_text(prog), option))
    assert missing == [], f"man/{prog}.1 lacks {missing}: run `make man`"


def test_nexus_page_has_every_command_and_its_options(script_runner):
    from nexus.tools.commands import COMMANDS

    text = page_text("nexus")
    for command in COMMANDS:
        assert f'.SS "{command.words}"' in text
        help_text = script_runner.run(["nexus", *command.words.split(), "--help"]).stdout
        missing = sorted(option for option in usage_options(help_text) if not mentions(text, option))
        assert missing == [], f"man/nexus.1 lacks the options {missing} of 'nexus {command.words}'"


def test_nexus_page_has_files_environment_exit_status_and_a_cron_example():
    text = page_text("nexus")
    for heading in ("FILES", "ENVIRONMENT", "EXIT STATUS", "EXAMPLES"):
        assert f".SH {heading}" in text
    for name in ("manifest.json", "state.json", "usage.log", "nexus.toml", "NEXUS_HOME", "NO_COLOR", "NEXUS_DEBUG"):
        assert name in text
    assert re.search(r"^[0-9*/, ]+ +nexus skills verify --all --stale 24$", text, re.M)
    assert re.search(r"^[0-9*/, ]+ +nexus skills rotate$", text, re.M)


def test_make_install_and_uninstall_with_destdir(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    source, stage = tmp_path / "source", tmp_path / "stage"  # a copy, so the build leaves the checkout alone
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".venv", ".git", "tests", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".bench"))
    make = ["make", "--no-print-directory", "-C", str(source), f"DESTDIR={stage}", "PREFIX=/opt/nexus",
            f"PYTHON={sys.executable}", "PIPFLAGS=--no-deps --no-build-isolation"]  # offline: the venv has both
    result = subprocess.run([*make, "install"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    # a PREFIX where bash-completion and zsh do not look: where the completions went, and how to load them
    assert "add to ~/.bashrc:  source /opt/nexus/share/bash-completion/completions/nexus\n" in result.stdout
    assert "fpath=(/opt/nexus/share/zsh/site-functions $fpath)\n" in result.stdout
    root = stage / "opt" / "nexus"
    expected = {"share/zsh/site-functions/_nexus": "completions/_nexus"}
    for prog in SCRIPTS:
        expected[f"share/bash-completion/completions/{prog}"] = "completions/nexus.bash"
        expected[f"share/fish/vendor_completions.d/{prog}.fish"] = "completions/nexus.fish"
    expected.update({f"share/man/man1/{page.name}": f"man/{page.name}" for page in PAGES})
    for path, origin in expected.items():
        assert (root / path).read_bytes() == (ROOT / origin).read_bytes(), path
        assert (root / path).stat().st_mode & 0o777 == 0o644, path
    for prog, module in SCRIPTS.items():
        launcher = root / "bin" / prog
        assert launcher.stat().st_mode & 0o777 == 0o755
        text = launcher.read_text()
        assert text.startswith(f"#!{sys.executable}\nimport gc\nimport sys\nsys.path.insert(0, \"/opt/nexus/lib/nexus\")\n")
        assert f"from {module} import " in text
        assert str(stage) not in text  # the final paths, not the staging area
    assert (root / "lib" / "nexus" / "nexus" / "tools" / "porcelain" / "agents.py").is_file()

    env = {**os.environ, "PYTHONPATH": str(root / "lib" / "nexus")}  # stands in for the final /opt/nexus
    ran = subprocess.run([root / "bin" / "nexus", "skills", "prompt"], env=env, capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout.startswith("<available_skills>"), ran.stderr

    result = subprocess.run([*make, "uninstall"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert [p for p in stage.rglob("*") if not p.is_dir()] == []


def test_readme_man_page_and_help_give_the_same_exit_statuses(script_runner):
    helped = script_runner.run(["nexus", "--help"]).stdout.partition("Exit status:\n")[2].partition("\n\n")[0]
    helped = re.sub(r"\n {4,}", " ", helped)  # a status's meaning wrapped to fit 80 columns, joined again
    statuses = [re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in helped.splitlines()]
    assert [code for code, _ in statuses] == ["0", "1", "2", "N"]
    readme = (ROOT / "README.md").read_text()
    man = page_text("nexus").partition(".SH EXIT STATUS")[2].partition(".SH")[0]
    for code, meaning in statuses:
        assert f"| {code} | {meaning} |" in readme
        assert f".TP\n{code}\n{meaning}\n" in man


def test_no_sentence_is_set_as_a_term():
    """A definition's term is a name (an option, a variable, a status), never a sentence that a usage
    doc wrapped onto a line of its own."""
    for page in PAGES:
        terms = re.findall(r"^\.TP\n(.*)$", page_text(page.stem), re.M)
        long = [term for term in terms if len(term.split()) > 6 or term.rstrip().endswith((",", "."))]
        assert not long, (page.name, long)


@pytest.mark.skipif(not shutil.which("man"), reason="man is not installed")
def test_the_synopsis_breaks_between_options_never_inside_one():
    shown = subprocess.run(["man", "-l", str(ROOT / "man" / "nexus.1")], capture_output=True, text=True,
                           env={**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": "", "LC_ALL": "C.UTF-8"}).stdout
    synopsis = shown.partition("SYNOPSIS\n")[2].partition("\nDESCRIPTION")[0]
    assert all(len(line) <= 80 for line in synopsis.splitlines())
    lines = synopsis.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("nexus skill run "))
    run = " ".join(line.strip() for line in lines[start:start + 3])
    assert "[--timeout SECONDS]" in run and "[--var NAME=VALUE]..." in run  # each option in one piece
    assert lines[start + 1].startswith("           [")  # what goes on is indented under the command
