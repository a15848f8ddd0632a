"""The small things that decide whether people trust the tool: usage errors in the user's words, honest
status, messages that say why, terminal manners, and skills read as the ecosystem writes them."""

import json
import re
import os
import pty
import shutil
import subprocess

import pytest
from helpers import by_name, make_tool, write_config, write_raw, write_skill


# -- help and errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, first", [
    (["nexus", "skill", "show"], "nexus: skill show: missing NAME"),
    (["nexus", "skills", "list", "--bogus"], "nexus: skills list: unknown option --bogus"),
    (["nexus", "skill", "stats", "--days"], "nexus: skill stats: --days needs a value"),
    (["nexus-discover", "--bogus"], "nexus-discover: unknown option --bogus"),
    (["nexus", "skill", "run"], "nexus: which skill? a NAME is required"),
])
def test_usage_errors_are_said_in_the_users_words_then_the_usage(script_runner, argv, first):
    result = script_runner.run(argv)
    lines = result.stderr.splitlines()
    assert result.returncode == 2 and result.stdout == ""
    assert lines[0] == first and lines[1].startswith("usage: " + " ".join(argv[:3 if argv[0] == "nexus" else 1]))
    assert "Warning" not in result.stderr and "Argument(" not in result.stderr


def test_nexus_alone_lists_the_groups_and_a_typo_gets_a_suggestion(script_runner):
    alone = script_runner.run(["nexus"])
    assert alone.returncode == 2 and "  skills " in alone.stderr and "  skill " in alone.stderr
    group = script_runner.run(["nexus", "skill"])
    assert group.returncode == 2 and "  run " in group.stderr and "  show " in group.stderr
    typo = script_runner.run(["nexus", "skils", "list"])
    assert typo.returncode == 2 and "Did you mean 'nexus skills list'?" in typo.stderr


@pytest.mark.parametrize("command", [["skill", "run"], ["skill", "show"], ["skill", "verify"], ["skill", "install"],
                                     ["skill", "stats"]])
@pytest.mark.parametrize("name", ["Bad_Name", "../x", ""])
def test_an_invalid_skill_name_is_a_usage_error_everywhere(script_runner, command, name):
    result = script_runner.run(["nexus", *command, name])
    assert result.returncode == 2 and "invalid skill name" in result.stderr


@pytest.mark.parametrize("name, problem", [("Upper", "it must be lowercase"), ("my_skill", "it has '_'"),
                                           ("-lead", "cannot start or end with a hyphen"),
                                           ("a--b", "two hyphens in a row"), ("x" * 65, "the limit is 64")])
def test_a_rejected_name_says_what_is_wrong_with_it(script_runner, workspace, name, problem):
    write_raw(workspace, "odd", f"---\nname: {name}\ndescription: d\n---\nbody\n")
    result = script_runner.run(["nexus-discover"])
    assert problem in result.stderr


def test_unicode_names_load_as_the_reference_validator_reads_them(script_runner, workspace):
    write_raw(workspace, "café", "---\nname: café\ndescription: Coffee.\n---\nbody\n")
    assert "café" in by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    strict = json.loads(script_runner.run(["nexus", "skills", "check", "--strict", "--json", str(workspace)]).stdout)
    assert [f["code"] for f in strict] == ["name"] and "not ASCII" in strict[0]["message"]
    assert script_runner.run(["nexus", "skills", "check", str(workspace)]).returncode == 0


def test_paths_that_start_with_a_dash_go_after_double_dash(script_runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_skill(tmp_path, "-odd", extra="")
    checked = script_runner.run(["nexus", "skills", "check", "--json", "--", "-odd"])
    assert checked.returncode == 1 and json.loads(checked.stdout)[0]["code"] == "name"


def test_nexus_verify_answers_for_every_name(script_runner, workspace, bindir, tmp_path):
    make_tool(bindir, "good")
    runs = tmp_path / "runs"
    write_skill(workspace, "good", meta={"tool": "good", "verify": f"echo run >> {runs}"})
    result = script_runner.run(["nexus-verify", "good", "missing", "good"])
    outcomes = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 1 and [(o["skill"], o["ok"]) for o in outcomes] == [
        ("good", True), ("missing", False), ("good", True)]
    assert "not found" in outcomes[1]["error"]
    assert runs.read_text() == "run\n"  # a name given twice is verified once, and answered twice


def test_manifest_read_tells_missing_from_unreadable(script_runner, nexus_home):
    missing = script_runner.run(["nexus-manifest", "read"])
    assert missing.returncode == 1 and "no manifest" in missing.stderr
    path = nexus_home / "state" / "nexus" / "skills" / "manifest.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    unreadable = script_runner.run(["nexus-manifest", "read"])
    assert unreadable.returncode == 2 and "not valid JSON" in unreadable.stderr
    path.write_text('{"version": 99, "skills": {}}')
    newer = script_runner.run(["nexus-manifest", "read"])
    assert newer.returncode == 2 and "written by a newer nexus" in newer.stderr


def test_a_reader_closing_the_pipe_ends_a_command_quietly_with_0(workspace):
    for n in range(300):
        write_skill(workspace, f"skill-{n:03d}")
    assert subprocess.run(["nexus", "skills", "refresh"], capture_output=True).returncode == 0
    done = subprocess.run(["bash", "-c", "nexus-manifest read | head -c 10 >/dev/null; echo ${PIPESTATUS[0]}"],
                          capture_output=True, text=True)
    assert done.stdout.strip() == "0" and done.stderr == ""


# -- messages that say why ------------------------------------------------------------------------------


def test_remove_says_why_it_cannot(script_runner):
    bundled = script_runner.run(["nexus", "skills", "remove", "tmux"])
    assert bundled.returncode == 1 and "tmux is bundled with nexus: disable it with `nexus skill disable tmux`" in bundled.stderr
    nothing = script_runner.run(["nexus", "skills", "remove", "no-such"])
    assert nothing.returncode == 1 and "no skill named no-such was added" in nothing.stderr


def test_verify_never_says_none_and_shows_times_one_way(script_runner, workspace, bindir):
    make_tool(bindir, "plain")
    write_skill(workspace, "plain", meta={"tool": "plain"})  # no verify command: its first run vouches for it
    assert script_runner.run(["nexus", "skill", "run", "plain"]).returncode == 0
    again = script_runner.run(["nexus", "skill", "verify", "plain"]).stdout
    assert "None" not in again and "by its first run" in again
    shown = script_runner.run(["nexus", "skill", "show", "plain"]).stdout
    assert "Ready (verified by its first run: " in shown and "(just now)" in shown


def test_verify_all_skips_what_cannot_pass_and_says_why(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "works")
    write_skill(workspace, "works", meta={"tool": "works", "verify": "true"})
    write_skill(workspace, "absent", meta={"tool": "not-installed-here"})
    write_config(nexus_home, "[skills.entries.off]\nenabled = false\n")
    write_skill(workspace, "off", meta={"tool": "works"})
    result = script_runner.run(["nexus", "skills", "verify", "--all", "--stale", "24", "--json"])
    assert result.returncode == 0, result.stdout
    outcomes = by_name([{**o, "name": o["skill"]} for o in json.loads(result.stdout)])
    assert outcomes["works"]["ok"] is True
    assert outcomes["absent"]["skipped"] is True and outcomes["absent"]["reason"] == "absent not installed"
    assert outcomes["off"]["skipped"] is True and outcomes["off"]["reason"] == "off disabled"


def test_a_prompt_skill_says_what_it_lacks_and_that_it_takes_no_arguments(script_runner, workspace):
    write_skill(workspace, "guide", meta={"requires": {"env": ["GUIDE_TOKEN"]}}, body="# Guide\n")
    result = script_runner.run(["nexus", "skill", "run", "guide", "--", "extra"])
    assert result.returncode == 0 and result.stdout == "# Guide\n"
    assert "needs GUIDE_TOKEN" in result.stderr and "ignored: extra" in result.stderr


def test_show_says_which_os_a_skill_needs(script_runner, workspace):
    other = "darwin" if os.uname().sysname == "Linux" else "linux"
    write_skill(workspace, "elsewhere", meta={"os": [other]})
    shown = json.loads(script_runner.run(["nexus", "skill", "show", "elsewhere", "--json"]).stdout)
    assert shown["status"] == "unsupported" and shown["reason"].startswith(f"needs {other}")
    assert f"needs {other}" in script_runner.run(["nexus", "skill", "show", "elsewhere"]).stdout


def test_the_list_marks_skills_never_verified(script_runner, workspace, bindir):
    make_tool(bindir, "fresh")
    write_skill(workspace, "fresh", meta={"tool": "fresh"})
    listing = script_runner.run(["nexus", "skills", "list"]).stdout
    (line,) = [line for line in listing.splitlines() if line.strip().startswith("fresh ")]
    assert "[tool: fresh] (not verified yet)" in line
    script_runner.run(["nexus", "skill", "run", "fresh"])
    listing = script_runner.run(["nexus", "skills", "list"]).stdout
    assert "(not verified yet)" not in [line for line in listing.splitlines() if "fresh" in line][0]


def test_link_unlink_removes_the_folder_it_made(script_runner, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    assert script_runner.run(["nexus", "skills", "link", "--agent", "cursor", "--dir", str(project)]).returncode == 0
    assert (project / ".cursor" / "skills").is_dir()
    assert script_runner.run(["nexus", "skills", "link", "--agent", "cursor", "--dir", str(project),
                              "--unlink"]).returncode == 0
    assert list(project.iterdir()) == []  # .cursor was nexus's too: gone once empty


def test_install_says_when_the_tool_is_already_there(script_runner, workspace, bindir):
    make_tool(bindir, "here")
    write_skill(workspace, "here", meta={"tool": "here", "install": [{"kind": "node", "package": "here-cli"}]})
    result = script_runner.run(["nexus", "skill", "install", "here", "--yes"])
    assert result.returncode == 0 and "already installed" in result.stderr


# -- terminal manners -----------------------------------------------------------------------------------


def on_terminal(argv, **env):
    leader, follower = pty.openpty()
    done = subprocess.run(argv, stdin=follower, stdout=follower, stderr=subprocess.PIPE,
                          env={**os.environ, **env}, timeout=60)
    os.close(follower)
    out = b""
    try:
        while chunk := os.read(leader, 65536):
            out += chunk
    except OSError:
        pass
    os.close(leader)
    return done.returncode, out.decode("utf-8", "replace")


@pytest.mark.once
def test_terminal_manners(workspace):
    write_skill(workspace, "long", description="word " * 60)
    nexus = shutil.which("nexus")
    code, colour = on_terminal([nexus, "skill", "show", "long"], LC_ALL="C.UTF-8", TERM="xterm")
    assert code == 0 and "\033[" in colour and "═" in colour
    assert "\033[" not in on_terminal([nexus, "skill", "show", "long"], LC_ALL="C.UTF-8", TERM="dumb")[1]
    assert "\033[" in on_terminal([nexus, "skill", "show", "long"], LC_ALL="C.UTF-8", TERM="xterm", NO_COLOR="")[1]
    ascii_only = on_terminal([nexus, "skill", "show", "long"], LC_ALL="C", TERM="xterm")[1]
    assert "═" not in ascii_only and "=" * 20 in ascii_only
    listed = on_terminal([nexus, "skills", "list"], LC_ALL="C.UTF-8", COLUMNS="80")[1]
    assert all(len(line) <= 80 for line in listed.splitlines())
    piped = subprocess.run([nexus, "skills", "list"], capture_output=True, text=True).stdout
    assert ("word " * 60).strip() in piped  # nothing cut in a pipe


# -- skills read as the ecosystem writes them -------------------------------------------------------------


def test_install_specs_as_openclaw_writes_them(script_runner, workspace):
    write_skill(workspace, "goer", meta={"requires": {"bins": ["nexus-absent-go"]},
                                         "install": [{"kind": "go", "module": "example.com/tool/cmd/goer@latest"}]})
    write_skill(workspace, "casker", meta={"requires": {"bins": ["nexus-absent-cask"]},
                                           "install": [{"kind": "brew", "cask": "casker-app"}]})
    assert script_runner.run(["nexus", "skills", "check", str(workspace)]).returncode == 0
    listed = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    assert listed["goer"]["status"] == "not-installed"
    dry = script_runner.run(["nexus", "skill", "install", "goer", "--dry-run"])
    assert dry.stdout == "go install example.com/tool/cmd/goer@latest\n"
    cask = script_runner.run(["nexus", "skill", "install", "casker", "--dry-run"])
    assert cask.stdout == "brew install --cask casker-app\n"


def test_disable_model_invocation_keeps_a_skill_from_agents_not_from_running(script_runner, workspace):
    write_skill(workspace, "hidden", extra="disable-model-invocation: true\n", body="# Hidden\n")
    write_skill(workspace, "shown")
    for command in (["skills", "prompt"], ["skills", "agents-md"], ["skills", "cursor-rules"],
                    ["skills", "link", "--agent", "claude-code", "--dir", str(workspace.parent), "--json"]):
        out = script_runner.run(["nexus", *command]).stdout
        assert "shown" in out and "hidden" not in out
    assert script_runner.run(["nexus", "skill", "run", "hidden"]).stdout == "# Hidden\n"


def test_the_prompt_budget_keeps_the_most_useful_and_says_what_it_cut(script_runner, workspace, nexus_home):
    for n in range(12):
        write_skill(workspace, f"tool-{n:02d}", description=f"Skill {n} " + "does a useful thing. " * 8)
    write_skill(workspace, "urgent", description="Comes first.", meta={"priority": "high"})
    for _ in range(3):
        script_runner.run(["nexus", "skill", "run", "tool-07"])
    full = script_runner.run(["nexus", "skills", "prompt"]).stdout
    cut = script_runner.run(["nexus", "skills", "prompt", "--max-chars", "1500"])
    assert cut.returncode == 0 and len(cut.stdout) <= 1500 < len(full)
    names = [line.strip()[6:-7] for line in cut.stdout.splitlines() if line.strip().startswith("<name>")]
    assert names[:3] == ["filesystem", "urgent", "tool-07"]  # priority (the bundled too), then use, then name
    assert "left out" in cut.stdout and "nexus skills list --ready" in cut.stdout and "cut" in cut.stderr
    few = script_runner.run(["nexus", "skills", "prompt", "--format", "markdown", "--max-skills", "2"]).stdout
    assert few.count("- **") == 2 and re.search(r"\d+ ready skills left out \(tool-07, ", few)


def test_a_lowercase_skill_md_loads_and_check_warns_the_same_for_file_and_folder(script_runner, workspace):
    folder = workspace / "lower"
    folder.mkdir()
    (folder / "skill.md").write_text("---\nname: lower\ndescription: Written as skill.md\n---\nbody\n")
    listed = by_name(json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout))
    assert listed["lower"]["status"] == "ready" and listed["lower"]["filePath"] == str(folder / "skill.md")
    verdicts = []
    for target in (folder / "skill.md", folder, workspace):
        result = script_runner.run(["nexus", "skills", "check", "--json", str(target)])
        found = [f for f in json.loads(result.stdout) if f["path"] == str(folder / "skill.md")]
        verdicts.append((result.returncode, [(f["severity"], f["code"]) for f in found]))
    assert verdicts == [(0, [("warning", "filename")])] * 3


@pytest.mark.parametrize("style, length, verdict", [("|", 1025, "error"), ("|-", 1024, None), (">", 1025, "error")])
def test_a_block_description_is_measured_as_yaml_gives_it(script_runner, workspace, style, length, verdict):
    """A `|` or `>` value ends with its line break, as YAML (and the reference validator) reads it: 1,024
    characters on the line make a 1,025-character description."""
    path = write_raw(workspace, "block", f"---\nname: block\ndescription: {style}\n  {'x' * 1024}\n---\nbody\n")
    listed = script_runner.run(["nexus", "skills", "list", "--json"])
    assert len(by_name(json.loads(listed.stdout))["block"]["description"].strip()) == 1024  # it loads either way
    assert (f"{path}:3: warning: description is {length} characters" in listed.stderr) == bool(verdict)
    check = json.loads(script_runner.run(["nexus", "skills", "check", "--json", str(path)]).stdout)
    assert [f["severity"] for f in check if f["code"] == "description"] == ([verdict] if verdict else [])
