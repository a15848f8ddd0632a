"""nexus skills check: the corpus through both policies, the YAML traps, OpenClaw skills, symlinks, scale."""

import json
import os
import pathlib
import re
import sys

import pytest
from helpers import by_name, jsonl, write_config, write_mixed_skills, write_raw, write_skill

CORPUS = pathlib.Path(__file__).parent / "corpus"
VARIANTS = sorted(p.name for p in CORPUS.iterdir() if p.is_dir() and not p.name.startswith("audit"))  # tests/test_audit.py
_RUNS = {}  # launch mode -> Corpus: each tool reads the whole corpus once, every variant's test reads its part


class Corpus:
    def __init__(self, script_runner):
        discover = script_runner.run(["nexus-discover", "--invalid", str(CORPUS)])
        assert discover.returncode == 0, discover.stderr
        self.entries = {e["filePath"]: e for e in jsonl(discover.stdout)}
        self.load_stderr = discover.stderr.splitlines()
        self.check = self._check(script_runner)
        self.strict = self._check(script_runner, "--strict")

    @staticmethod
    def _check(script_runner, *flags):
        result = script_runner.run(["nexus", "skills", "check", "--json", *flags, str(CORPUS)])
        assert result.returncode == 1, result.stderr
        findings = {}
        for finding in json.loads(result.stdout):
            findings.setdefault(finding["path"], []).append(finding)
        return findings


@pytest.fixture
def corpus(script_runner):
    if script_runner.launch_mode not in _RUNS:
        _RUNS[script_runner.launch_mode] = Corpus(script_runner)
    return _RUNS[script_runner.launch_mode]


def codes(findings):
    return sorted(f"{f['severity']}:{f['code']}" for f in findings)


def test_corpus_is_large_enough():
    assert len(VARIANTS) >= 60
    assert {json.loads((CORPUS / v / "expect.json").read_text())["load"] for v in VARIANTS} == {"ok", "warn", "invalid"}


@pytest.mark.parametrize("variant", VARIANTS)
def test_corpus_variant(corpus, variant):
    expect = json.loads((CORPUS / variant / "expect.json").read_text())
    path = str(CORPUS / variant / "SKILL.md")
    entry = corpus.entries.get(path)
    load_lines = [line for line in corpus.load_stderr if line.startswith(path + ":")]
    if expect["load"] == "invalid":
        assert entry is not None and entry["status"] == "invalid", load_lines
        errors = [line for line in load_lines if ": warning: " not in line]
        assert len(errors) == 1 and entry["error"] in errors[0]
    else:
        assert entry is not None and entry.get("status") != "invalid", load_lines
        assert bool(load_lines) == (expect["load"] == "warn"), load_lines
        assert all(": warning: " in line for line in load_lines)
    for key, value in expect.get("entry", {}).items():
        assert entry[key] == value, key

    found = corpus.check.get(path, [])
    assert codes(found) == expect["check"], found
    assert codes(corpus.strict.get(path, [])) == sorted(expect["check"] + expect.get("strict", []))
    if "message" in expect:
        assert any(expect["message"] in f["message"] for f in corpus.strict.get(path, [])), found
        if expect["load"] != "ok":  # loading words it its own way where it reads past the problem
            assert any(expect.get("loadMessage", expect["message"]) in line for line in load_lines), load_lines


def test_body_rules_stay_in_the_body():
    from nexus.skill import skillmd

    skill = skillmd.read(str(CORPUS / "body-rules" / "SKILL.md"))
    assert skill.frontmatter == {"name": "body-rules", "description": "A test skill."}
    assert "name: not-frontmatter" in skill.body and skill.body.count("---") == 2


# Lines that may or may not take the simple reading of frontmatter; each must read the same either way.
TRICKY_LINES = [
    "description: plain words", "description: a  b", "description: x #c", "description: x#c", 'description: "q"',
    "description: 'q'", "description:", "description: ~", "yes: 1", "Yes: 1", "y: 1", "1: 1", "description: x:",
    "description: -x", "description: - x", "description: @x", "description: %x", "description: x,y",
    "description: [x]", "description: x]", "description: x}", "description: x\u0085y", "description: x\u2028y",
    "description: é ünïcode 🔧", "description: \ufeffx", "description: !x", "description: x !y", "description: ?x",
    "description: x ?", "description: :x", "description: x|y", "description: |x", "description: &x",
    "description: *x", "description: x'y", 'description: x"y', 'description: "a\\"b"', "description: 'a''b'",
    "description: a\tb", "description:\tx", "description: x\t", "description: x ", "description: ...",
    "description: --- x", "description: 1.10", "description: off", "description: null", "m-x_y: 1", "_m: 1",
    "M: 1", "m.x: 1", "key:x", "key :x", " description: x", "# a comment", "", "description: x: y",
    'metadata: {"nexus": {"tool": "t", "requires": {"bins": ["t"]}, "always": true, "n": 3, "x": null}}',
    'metadata: {"nexus": {"n": 1e5}}', 'metadata: {"nexus": {"n": 1.5}}', 'metadata: {"nexus": {"e": "\\u00e9"}}',
    'metadata: {"nexus": {"e": "🔧"}}', 'metadata: {"nexus": {}},', 'metadata: {"nexus": {"a": "b",}}',
    'metadata: {"a": true, "a": false}', 'metadata: {"nexus": {"x": "y"}} #c', 'metadata: {"nexus": {"x": "y"}}  ',
    'metadata: {"nexus": {"x": "a: b #c"}}', "metadata: {'nexus': {}}", 'metadata: {"nexus": NaN}',
    'metadata: {"nexus": {"x": "\t"}}', 'metadata: [1, 2]', "metadata: '{\"nexus\": {}}'",
]


def read_both_ways(path, monkeypatch):
    """A SKILL.md read as nexus reads it, and read by YAML alone, each as plain data."""
    from nexus.skill import entry, lint, skillmd

    def plain(skill):
        data = {k: v for k, v in vars(skill).items() if k != "problems"}
        data["problems"] = [p.as_dict(path) for p in skill.problems]
        data["lint"] = [p.as_dict(path) for p in lint.check(skill, os.path.dirname(path), strict=True)]
        if skill.ok and skill.name:
            data["entry"] = entry.build(skill, "nexus-workspace", os.path.dirname(path), 1, 2)
        return data

    simple = plain(skillmd.read(path))
    with monkeypatch.context() as patched:
        patched.setattr(skillmd, "simple_frontmatter", lambda text: None)
        return simple, plain(skillmd.read(path))


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_simple_reading_of_frontmatter_gives_what_yaml_gives(variant, monkeypatch):
    fast, slow = read_both_ways(str(CORPUS / variant / "SKILL.md"), monkeypatch)
    assert fast == slow


@pytest.mark.parametrize("line", TRICKY_LINES)
def test_tricky_lines_read_the_same_both_ways(line, tmp_path, monkeypatch):
    for text in (f"---\nname: tricky\n{line}\ndescription: d\n---\nbody\n",
                 f"---\nname: tricky\ndescription: d\n{line}\n---\nbody\n"):
        path = write_raw(tmp_path, "tricky", text)
        fast, slow = read_both_ways(str(path), monkeypatch)
        assert fast == slow, text


TAB_LINES = ["description:\tx", "metadata:\t{\"nexus\": {}}", "description: a\tb", "description: a \tb",
             "description: x\t# c", "description: x\t", "description:\t\"q\"", "m:\n  k:\tv", "m:\n\tk: v",
             "m:\n  - \tx", "m: [a,\tb]", "m: {a:\tb}", "m:\t|\n  x", "m: &a\tv", "\tm: v", "m: >\n\tx",
             "m:\n  a\tb\n  c", "description: |\n  a:\tb", "description: Reads the weather\t\n  for a city.",
             "m: b \t\n  c", "m:\n  - a\t\n    b", "m: b\t\n\n  c", "m: v\t\nn: w"]


def read_with_and_without_c(path, monkeypatch):
    """A SKILL.md read as nexus reads it with PyYAML's C loader, and as it would without it: what was read
    and each problem's severity and kind (the two loaders word a YAML error each its own way)."""
    import yaml
    from nexus.skill import skillmd

    def plain(skill):
        return {**{k: v for k, v in vars(skill).items() if k != "problems"},
                "problems": [(p.severity, p.code) + (() if p.code == "yaml" else (p.line, p.message))
                             for p in skill.problems]}

    with monkeypatch.context() as patched:
        patched.setattr(skillmd, "simple_frontmatter", lambda text: None)  # both through YAML
        with_c = plain(skillmd.read(path))
        patched.delattr(yaml, "CSafeLoader", raising=False)
        return with_c, plain(skillmd.read(path))


@pytest.mark.skipif(not hasattr(__import__("yaml"), "CSafeLoader"), reason="PyYAML has no C extension here")
@pytest.mark.parametrize("variant", VARIANTS)
def test_a_verdict_does_not_depend_on_pyyamls_c_extension(variant, monkeypatch):
    with_c, without = read_with_and_without_c(str(CORPUS / variant / "SKILL.md"), monkeypatch)
    assert with_c == without


@pytest.mark.skipif(not hasattr(__import__("yaml"), "CSafeLoader"), reason="PyYAML has no C extension here")
@pytest.mark.parametrize("line", TAB_LINES + TRICKY_LINES)
def test_tabs_and_tricky_lines_read_the_same_with_either_loader(line, tmp_path, monkeypatch):
    path = write_raw(tmp_path, "tabbed", f"---\nname: tabbed\ndescription: d\n{line}\n---\nbody\n")
    with_c, without = read_with_and_without_c(str(path), monkeypatch)
    assert with_c == without, line


@pytest.mark.skipif(not hasattr(__import__("yaml"), "CSafeLoader"), reason="PyYAML has no C extension here")
@pytest.mark.parametrize("line", TAB_LINES)
def test_the_tab_loader_reads_what_libyaml_reads(line):
    """Text with a tab goes to skillmd's own loader in every install: it must read it as libyaml does."""
    import yaml
    from nexus.skill import skillmd

    def read(loader):
        try:
            return yaml.load(f"name: x\n{line}\n", Loader=loader)
        except yaml.YAMLError:
            return "rejected"

    assert read(skillmd._tab_loader()) == read(yaml.CSafeLoader)


def test_a_tab_after_a_colon_is_read_as_other_loaders_read_it(script_runner, tmp_path):
    """libyaml, OpenClaw's YAML and the YAML 1.2 spec accept a tab between `key:` and its value; nexus does
    too, with or without PyYAML's C extension. A tab as indentation stays an error."""
    write_raw(tmp_path, "tabbed", "---\nname: tabbed\ndescription:\tTabbed in\nmetadata:\t{\"nexus\": {}}\n---\nb\n")
    write_raw(tmp_path, "indented", "---\nname: indented\ndescription: d\nmetadata:\n\tnexus: {}\n---\nb\n")
    entries = {e["name"]: e for e in jsonl(script_runner.run(["nexus-discover", "--invalid", str(tmp_path)]).stdout)}
    assert entries["tabbed"].get("status") != "invalid" and entries["tabbed"]["description"] == "Tabbed in"
    assert entries["indented"]["status"] == "invalid" and "tabs" in entries["indented"]["error"]


def test_most_skills_take_the_simple_reading():
    from nexus.skill import skillmd

    parts = {v: (CORPUS / v / "SKILL.md").read_text(errors="replace").replace("\r\n", "\n").split("---\n")
             for v in VARIANTS if (CORPUS / v / "SKILL.md").is_file()}
    simple = [v for v, p in parts.items() if len(p) > 2 and skillmd.simple_frontmatter(p[1].rstrip("\n"))]
    assert len(simple) >= 50, simple
    taken = [line for line in TRICKY_LINES if skillmd.simple_frontmatter(f"name: x\n{line}")]
    assert len(taken) >= 20 and "description: x #c" not in taken and "yes: 1" not in taken


def check(script_runner, *args):
    return script_runner.run(["nexus", "skills", "check", *args])


def test_clean_skill_exits_0_with_no_findings(script_runner, tmp_path):
    skill_dir = write_skill(tmp_path, "clean", meta={"tool": "jq", "requires": {"bins": ["jq"]}})
    for target in (skill_dir, skill_dir / "SKILL.md", tmp_path):
        result = check(script_runner, str(target))
        assert (result.returncode, result.stdout) == (0, ""), result.stderr
        assert "nexus: 1 skill checked: 0 errors, 0 warnings" in result.stderr


def test_findings_are_path_line_severity_message(script_runner, tmp_path):
    path = write_raw(tmp_path, "two", "---\nname: two\ndescription: Use it: now\nversion: 2\n---\nbody\n")
    result = check(script_runner, "--strict", str(path))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"{path}:3: error: the value of 'description' has an unquoted ': ', which other loaders reject; "
        "it was read as text: quote the value",
        f"{path}:4: warning: unexpected field 'version': neither Agent Skills nor nexus defines it",
    ]
    assert "1 skill checked: 1 error, 1 warning" in result.stderr


def test_warnings_alone_exit_0(script_runner, tmp_path):
    write_raw(tmp_path, "cut", "---\nname: cut\ndescription: Counts words #fast\n---\nbody\n")
    result = check(script_runner, "--json", str(tmp_path))
    assert result.returncode == 0
    assert [f["code"] for f in json.loads(result.stdout)] == ["comment"]
    assert result.stderr == ""


def test_usage_errors_exit_2(script_runner, tmp_path):
    missing = check(script_runner, str(tmp_path / "nope"))
    assert missing.returncode == 2 and f"nexus: {tmp_path / 'nope'}: no such file or folder" in missing.stderr
    assert check(script_runner, "--bogus").returncode == 2
    helped = check(script_runner, "--help")
    assert helped.returncode == 0 and "nexus skills check [--strict] [--json] [--] [PATH...]" in helped.stdout


def emitted_codes():
    """Every code the source gives a finding, read from the calls that make one: `code=...`, the third
    argument of _error, _warning and a SkillFile's error/warn, the fourth of Problem."""
    import ast

    root, found = pathlib.Path(__file__).parent.parent, {}
    for path in [*root.glob("lib/**/*.py"), *root.glob("tools/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            called = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            where = {"_error": 2, "_warning": 2, "error": 2, "warn": 2, "Problem": 3}.get(called)
            given = [k.value for k in node.keywords if k.arg == "code"]
            given += [node.args[where]] if where is not None and len(node.args) > where else []
            for value in given:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found.setdefault(value.value, f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_help_lists_every_code_check_emits(script_runner):
    from nexus.skill import lint

    emitted = emitted_codes()
    assert {"spelling", "audit", "no-skill", "yaml", "filename"} <= set(emitted)  # the scan finds each kind of call
    assert {code: where for code, where in emitted.items() if code not in lint.CODES} == {}
    helped = " ".join(check(script_runner, "--help").stdout.split())
    listed = helped.partition("Codes: ")[2].partition(". Exit status")[0]
    assert [word.partition(" ")[0] for word in re.split(r",\s(?![^(]*\))", listed)] == list(lint.CODES)


def test_folder_without_skills_is_an_error(script_runner, tmp_path):
    (tmp_path / "empty" / "notes").mkdir(parents=True)
    result = check(script_runner, "--json", str(tmp_path / "empty"))
    assert result.returncode == 1
    assert [(f["path"], f["code"]) for f in json.loads(result.stdout)] == [(str(tmp_path / "empty"), "no-skill")]


@pytest.mark.may_skip_in_ci("root reads every folder: test_unreadable_skill_folder_is_an_error_as_nobody checks it")
@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder")
def test_unreadable_skill_folder_is_an_error(script_runner, tmp_path):
    locked = write_skill(tmp_path, "locked")
    locked.chmod(0)
    try:
        result = check(script_runner, str(tmp_path))
    finally:
        locked.chmod(0o755)
    assert result.returncode == 1
    assert f"{locked}/SKILL.md: error: cannot read: Permission denied" in result.stdout


@pytest.mark.once
def test_unreadable_skill_folder_is_an_error_as_nobody(nobody):
    """As root every folder is readable, so nobody checks a world-readable tree with one folder root's own."""
    import shutil
    import tempfile

    root = pathlib.Path(tempfile.mkdtemp(prefix="nexus-check-nobody-"))
    try:
        root.chmod(0o755)
        locked = write_skill(root, "locked")
        locked.chmod(0o700)
        env = {**os.environ, "NEXUS_HOME": str(root / "nexus"), "HOME": str(root), "MANAGED_SKILLS_DIR": str(root / "m")}
        result = nobody.run(["nexus", "skills", "check", str(root)], env)
        assert result.returncode == 1, result.stderr
        assert f"{locked}/SKILL.md: error: cannot read: Permission denied" in result.stdout
    finally:
        shutil.rmtree(root)


def test_default_checks_every_source(script_runner, tmp_path, workspace, nexus_home):
    extra = tmp_path / "extra"
    write_config(nexus_home, f'[skills.load]\nextraDirs = ["{extra}"]\n')
    write_skill(workspace, "ws-skill", folder="ws-folder")
    write_raw(extra, "extra-skill", "---\nname: extra-skill\ndescription: d\ndescription: e\n---\nb\n")
    result = check(script_runner, "--json")
    assert result.returncode == 1
    found = {(pathlib.Path(f["path"]).parent.name, f["code"]) for f in json.loads(result.stdout)}
    assert found == {("ws-folder", "name"), ("extra-skill", "duplicate-key")}


def test_a_copied_skill_edited_in_place_is_a_warning(script_runner, tmp_path, nexus_home):
    write_config(nexus_home, "[skills]\nallowBundled = []\n")
    team = tmp_path / "team"
    write_skill(team, "copied"), write_skill(team, "linked"), write_skill(team, "kept")
    for name, how in (("copied", "--copy"), ("linked", None), ("kept", "--copy")):
        added = script_runner.run(["nexus", "skills", "add", str(team), "--skill", name, *filter(None, [how])])
        assert added.returncode == 0, added.stderr
    managed = tmp_path / "managed"
    for name in ("copied", "linked"):
        (managed / name / "notes.md").write_text("edited in place\n")
    lockfile = managed / ".nexus-lock.json"
    for args in ([], [str(managed)], [str(managed / "copied")]):
        result = check(script_runner, "--json", *args)
        assert result.returncode == 0, result.stderr
        (finding,) = [f for f in json.loads(result.stdout) if f["code"] == "edited"]
        assert (finding["path"], finding["severity"]) == (str(managed / "copied" / "SKILL.md"), "warning")
        assert str(lockfile) in finding["message"]
    human = check(script_runner, str(managed))
    assert f"{managed / 'copied' / 'SKILL.md'}: warning: edited in place" in human.stdout
    assert "3 skills checked: 0 errors, 1 warning" in human.stderr


def test_unquoted_colon_loads_with_a_warning_and_fails_check(script_runner, workspace):
    path = write_raw(workspace, "colon", "---\nname: colon\ndescription: Use it: now\n---\nbody\n")
    loaded = script_runner.run(["nexus-discover"])
    assert jsonl(loaded.stdout)[0]["description"] == "Use it: now"
    assert f"{path}:3: warning: the value of 'description' has an unquoted ': '" in loaded.stderr
    checked = check(script_runner, str(path))
    assert checked.returncode == 1 and f"{path}:3: error: the value of 'description'" in checked.stdout


def test_skills_list_shows_the_invalid_group(script_runner, workspace):
    path = write_raw(workspace, "broken", "---\nname: broken\ndescription: Use it\n  when: now\n---\nbody\n")
    write_skill(workspace, "fine")
    result = script_runner.run(["nexus", "skills", "list"])
    assert "INVALID (broken SKILL.md) - 1 skill" in result.stdout
    assert f"{path}: invalid YAML in frontmatter: mapping values are not allowed" in result.stdout


OPENCLAW_SKILL = """---
name: gh-helper
description: "Interact with GitHub using the `gh` CLI."
homepage: https://cli.github.com
metadata:
  {
    "openclaw":
      {
        "emoji": "🐙",
        "os": ["macos", "linux"],
        "requires": { "bins": ["gh"], "env": "GH_TOKEN, GH_HOST" },
        "install":
          [
            { "id": "brew", "kind": "brew", "formula": "gh", "bins": ["gh"], },
            { "id": "dl", "kind": "download", "url": "https://example.com/gh.tgz", "sha256": "%s", },
          ],
      },
  }
---
# GitHub

Use `gh` for issues and pull requests.
""" % ("ab" * 32)


@pytest.mark.parametrize("key", ["nexus", "clawdbot"])
def test_openclaw_skill_and_its_renamed_twin_give_identical_entries(script_runner, tmp_path, key):
    write_raw(tmp_path / "openclaw", "gh-helper", OPENCLAW_SKILL)
    write_raw(tmp_path / "renamed", "gh-helper", OPENCLAW_SKILL.replace('"openclaw"', f'"{key}"'))
    entries = []
    for folder in ("openclaw", "renamed"):
        result = script_runner.run(["nexus-discover", str(tmp_path / folder)])
        assert result.returncode == 0 and result.stderr == ""
        (entry,) = jsonl(result.stdout)
        entries.append({k: v for k, v in entry.items()
                        if k not in ("filePath", "dir", "sha256", "dirMtimeNs", "fileMtimeNs")})
    assert entries[0] == entries[1]
    assert entries[0]["requires"]["env"] == ["GH_TOKEN", "GH_HOST"]
    assert [s["kind"] for s in entries[0]["install"]] == ["brew", "download"]
    checked = check(script_runner, str(tmp_path / "openclaw"), str(tmp_path / "renamed"))
    assert (checked.returncode, checked.stdout) == (0, "")


@pytest.mark.skipif(sys.platform != "linux", reason="install hints depend on the platform")
def test_install_hints_fit_linux(script_runner, workspace, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    download = {"kind": "download", "url": "https://example.com/tool.tgz", "sha256": "ab" * 32}
    write_skill(workspace, "brew-only", meta={"requires": {"bins": ["nexus-absent-a"]},
                                              "install": [{"kind": "brew", "formula": "tool-a"}]})
    write_skill(workspace, "mixed", meta={"requires": {"bins": ["nexus-absent-b"]}, "install": [
        {"kind": "brew", "formula": "tool-b"}, {**download, "url": "https://example.com/mac.tgz", "os": ["macos"]},
        download]})
    result = script_runner.run(["nexus", "skills", "list"])
    lines = {line.split()[0]: line for line in result.stdout.splitlines() if line.startswith("   ")}
    assert "install: brew install tool-a (needs Homebrew)   A test skill." in lines["brew-only"]
    assert "install: download https://example.com/tool.tgz  A test skill." in lines["mixed"]


def test_symlinked_skill_folders_are_followed(script_runner, tmp_path, workspace):
    real = write_skill(tmp_path / "elsewhere", "linked")
    (workspace / "linked").symlink_to(real, target_is_directory=True)
    (workspace / "up").symlink_to(workspace, target_is_directory=True)  # a cycle: never walked into
    result = script_runner.run(["nexus-discover"])
    assert [e["name"] for e in jsonl(result.stdout) if e["source"] == "nexus-workspace"] == ["linked"]
    assert by_name(jsonl(result.stdout))["linked"]["dir"] == str(workspace / "linked")
    assert result.stderr == ""
    assert check(script_runner, str(workspace)).returncode == 0


def test_symlink_loop_is_reported_once(script_runner, workspace):
    (workspace / "loop-a").symlink_to(workspace / "loop-b")
    (workspace / "loop-b").symlink_to(workspace / "loop-a")
    write_skill(workspace, "healthy")
    result = script_runner.run(["nexus-discover", "--valid"])
    assert [e["name"] for e in jsonl(result.stdout) if e["source"] == "nexus-workspace"] == ["healthy"]
    assert result.stderr.splitlines() == [f"{workspace / 'loop-a'}: symlink loop", f"{workspace / 'loop-b'}: symlink loop"]
    checked = check(script_runner, "--json", str(workspace), str(workspace / "loop-a"))
    assert checked.returncode == 1
    found = [(f["path"], f["code"], f["message"]) for f in json.loads(checked.stdout)]
    assert found == [(str(workspace / "loop-a"), "symlink", "symlink loop"),
                     (str(workspace / "loop-b"), "symlink", "symlink loop"),
                     (str(workspace / "loop-a"), "unreadable", "symlink loop")]


def test_too_large_skill_is_reported_not_read(script_runner, tmp_path):
    path = write_raw(tmp_path, "huge", "---\nname: huge\ndescription: d\n---\n" + "x" * (256 * 1024))
    result = check(script_runner, "--json", str(path))
    (finding,) = json.loads(result.stdout)
    assert result.returncode == 1 and finding["code"] == "too-large"
    assert finding["message"] == f"too large: {path.stat().st_size} bytes (the limit is 256 KB)"


def test_thousands_of_mixed_skills_load_every_valid_one(script_runner, tmp_path):
    root = tmp_path / "many"
    root.mkdir()
    valid, invalid = set(), set()
    for name, loads in write_mixed_skills(root, 3000).items():  # how fast: make bench (bench_discover)
        (valid if loads else invalid).add(name)
    result = script_runner.run(["nexus-discover", "--invalid", str(root)])
    records = jsonl(result.stdout)
    assert {r["name"] for r in records if r.get("status") != "invalid"} == valid
    assert {r["name"] for r in records if r.get("status") == "invalid"} == invalid
    # read in a process per CPU (nexus.shares), and taken in the order of the folders
    assert [r["name"] for r in records if r.get("status") == "invalid"] == sorted(invalid)


def test_the_audits_high_findings_are_listed_never_failed(script_runner, tmp_path):
    """check judges conformance: an audit finding is a warning there; `skills audit` has its own exit."""
    import shutil

    corpus = pathlib.Path(__file__).parent / "corpus" / "audit"
    for kind in ("hostile", "benign"):
        shutil.copytree(corpus / "reverse-shell" / kind, tmp_path / kind)
    result = script_runner.run(["nexus", "skills", "check", "--json", str(tmp_path)])
    assert result.returncode == 0, result.stderr
    found = [f for f in json.loads(result.stdout) if f["code"] == "audit"]
    assert [(f["path"], f["line"], f["severity"]) for f in found] == [
        (str(tmp_path / "hostile" / "scripts" / "connect.sh"), 2, "warning")]
    assert found[0]["message"].startswith("reverse-shell: 'bash -i >& /dev/tcp/")
    assert script_runner.run(["nexus", "skills", "audit", str(tmp_path)]).returncode == 1


def test_check_and_audit_find_skills_where_add_does(script_runner, tmp_path):
    """Dot-folders such as openai/skills' .curated, four levels down; .git and node_modules never."""
    root = tmp_path / "collection"
    for folder in (".curated/one", "skills/.system/two", "a/b/c/three", "a/.git/hooks-skill", "node_modules/x", "a/b/c/d/deep"):
        write_skill(root / folder.rsplit("/", 1)[0], folder.rsplit("/", 1)[1])
    listed = script_runner.run(["nexus", "skills", "add", "--list", "--json", str(root)])
    added = sorted(c["path"] for c in json.loads(listed.stdout)["skills"])
    assert added == [".curated/one", "a/b/c/three", "skills/.system/two"], listed.stderr
    checked = script_runner.run(["nexus", "skills", "check", str(root)])
    assert "3 skills checked" in checked.stderr, checked.stderr
    audited = script_runner.run(["nexus", "skills", "audit", "--json", str(root)])
    assert sorted(os.path.relpath(a["dir"], root) for a in json.loads(audited.stdout)["audited"]) == added
    assert "3 skills audited" in script_runner.run(["nexus", "skills", "audit", str(root)]).stderr
