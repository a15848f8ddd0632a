"""Issue 26, every line of the specs: each item through the real scripts."""

import json

import pytest
from helpers import by_name, make_tool, read_log, read_state, write_config, write_skill

pytestmark = pytest.mark.script_launch_mode("subprocess")


def run(script_runner, *argv, **kwargs):
    return script_runner.run(["nexus", *argv], **kwargs)


# -- 1. every refusal is logged, with its reason code ------------------------------------------------


def test_a_refusal_for_policy_is_logged_and_counted_but_never_a_failure(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "feed")
    write_skill(workspace, "feed", meta={"tool": "feed"})
    write_skill(workspace, "notes")  # a prompt skill is refused and logged the same way
    assert run(script_runner, "skill", "run", "feed").returncode == 0
    write_config(nexus_home, "[skills.entries.feed]\nenabled = false\n[skills.entries.notes]\nenabled = false\n")
    for _ in range(6):
        refused = run(script_runner, "skill", "run", "feed", "--", "x")
        assert refused.returncode == 1 and "is disabled" in refused.stderr
    assert run(script_runner, "skill", "run", "notes").returncode == 1
    log = read_log(nexus_home, "feed")
    assert len(log) == 7 and {(e["exit"], e["refused"], e["args"][0]) for e in log[1:]} == {(1, "disabled", "x")}
    assert [(e["type"], e["refused"]) for e in read_log(nexus_home, "notes")] == [("prompt", "disabled")]
    state = read_state(nexus_home, "feed")
    assert (state["totalInvocations"], state["successRate"], state["policyRefusals"]) == (7, 1, 6)
    assert "lastError" not in state
    stats = json.loads(run(script_runner, "skill", "stats", "--json").stdout)
    feed = by_name(stats["skills"])["feed"]
    assert (feed["totalInvocations"], feed["successRate"], feed["refusedForPolicy"]) == (7, 1, 6)
    assert stats["recentFailures"] == []
    write_config(nexus_home, "")
    listed = by_name(json.loads(run(script_runner, "skills", "list", "--json").stdout))
    assert listed["feed"]["degraded"] is False
    assert run(script_runner, "status", "--check").returncode == 0


def test_every_refusal_says_why_in_the_log(script_runner, workspace, bindir, nexus_home, tmp_path):
    write_skill(workspace, "absent", meta={"tool": "nosuchtool"})
    make_tool(bindir, "api")
    write_skill(workspace, "api", meta={"tool": "api", "requires": {"env": ["SPEC_TEST_TOKEN"]}})
    make_tool(bindir, "acct")
    write_skill(workspace, "acct", meta={"tool": "acct", "verify": "exit 1"})
    make_tool(bindir, "child")
    write_skill(workspace, "child", meta={"tool": "child", "requires": {"skills": ["absent"]}})
    expected = {"absent": "not-installed", "api": "needs-setup", "acct": "needs-setup", "child": "dependency"}
    for name, code in expected.items():
        result = run(script_runner, "skill", "run", name)
        assert result.returncode == 1, (name, result.stderr)
        (entry,) = read_log(nexus_home, name)
        assert (entry["exit"], entry["refused"]) == (1, code), name
        assert read_state(nexus_home, name)["successRate"] == 0  # not policy: the skill cannot do its job


# -- 15. an apiKey stands for the declared primaryEnv only; blanks are unset -----------------------------


def test_an_api_key_without_primary_env_covers_nothing(script_runner, workspace, bindir, nexus_home, monkeypatch):
    make_tool(bindir, "api")
    write_skill(workspace, "api", meta={"tool": "api", "requires": {"env": ["SPEC_API_TOKEN"]}})
    write_skill(workspace, "keyed", meta={"tool": "api", "requires": {"env": ["SPEC_API_TOKEN"]},
                                          "primaryEnv": "SPEC_API_TOKEN"})
    write_config(nexus_home, '[skills.entries.api]\napiKey = "k-123456"\n[skills.entries.keyed]\napiKey = "k-123456"\n')
    listed = by_name(json.loads(run(script_runner, "skills", "list", "--json").stdout))
    assert (listed["api"]["status"], listed["api"]["missing"]["env"]) == ("needs-setup", ["SPEC_API_TOKEN"])
    assert listed["keyed"]["status"] == "ready"
    check = run(script_runner, "skills", "check")
    assert "skills.entries.api.apiKey: the skill names no env var for a key (primaryEnv)" in check.stdout
    assert "keyed" not in check.stdout
    monkeypatch.setenv("SPEC_API_TOKEN", "  \t")  # blanks are not a value
    listed = by_name(json.loads(run(script_runner, "skills", "list", "--json").stdout))
    assert listed["api"]["status"] == "needs-setup"
    monkeypatch.setenv("SPEC_API_TOKEN", "set")
    listed = by_name(json.loads(run(script_runner, "skills", "list", "--json").stdout))
    assert listed["api"]["status"] == "ready"


# -- 17. what an upgrade changes is said once ----------------------------------------------------------


def test_an_upgrade_says_what_changed_once(script_runner, workspace, nexus_home):
    write_skill(workspace, "api", meta={"requires": {"env": ["SPEC_API_TOKEN"]}})
    write_config(nexus_home, '[skills.entries.api]\napiKey = "k-123456"\n')
    first = run(script_runner, "skills", "list")  # a new user: nothing to upgrade from
    assert first.returncode == 0 and "this version changes" not in first.stderr
    upgrades = nexus_home / "state" / "nexus" / "upgrades.json"
    assert "api-key-primary-env" in json.loads(upgrades.read_text())["done"]
    upgrades.unlink()  # as an earlier nexus left it: a manifest, and no record of upgrades
    said = run(script_runner, "skills", "list")
    assert said.returncode == 0
    assert "nexus: this version changes what works for you" in said.stderr
    assert "primaryEnv only" in said.stderr and "(skills with a key: api)" in said.stderr
    assert "nexus skill env NAME VAR=VALUE" in said.stderr
    again = run(script_runner, "skills", "list")
    assert "this version changes" not in again.stderr
    assert oct(upgrades.stat().st_mode & 0o777) == "0o600"


def test_the_upgrade_check_trusts_its_stamp_only_for_the_steps_it_names(script_runner, workspace, nexus_home):
    """Once every step is done, upgrades.json keeps a stamp of the steps' module (paths.upgrade_steps_stamp),
    which every command compares instead of loading the module: a stamp that no longer fits is taken anew,
    quietly, and a step missing from "done" runs whatever the stamp says."""
    write_skill(workspace, "api", meta={"requires": {"env": ["SPEC_API_TOKEN"]}})
    write_config(nexus_home, '[skills.entries.api]\napiKey = "k-123456"\n')
    run(script_runner, "skills", "list")
    upgrades = nexus_home / "state" / "nexus" / "upgrades.json"
    kept = json.loads(upgrades.read_text())
    stamp = kept["through"]
    assert stamp[2] == len(kept["done"]) and stamp[0] > 0
    upgrades.write_text(json.dumps({**kept, "through": [0, 0, 0]}))  # as a nexus installed anew finds it
    quiet = run(script_runner, "skills", "list")
    assert quiet.returncode == 0 and "this version changes" not in quiet.stderr
    assert json.loads(upgrades.read_text())["through"] == stamp
    del kept["done"]["api-key-primary-env"]  # a step not done, under a stamp of when all were
    upgrades.write_text(json.dumps(kept))
    said = run(script_runner, "skills", "list")
    assert "primaryEnv only" in said.stderr and said.stderr.count("this version changes") == 1
    assert json.loads(upgrades.read_text())["through"] == stamp
    assert "this version changes" not in run(script_runner, "skills", "list").stderr


def test_an_upgrade_that_does_not_concern_the_user_says_nothing(script_runner, workspace, nexus_home):
    write_skill(workspace, "plain")
    run(script_runner, "skills", "list")
    (nexus_home / "state" / "nexus" / "upgrades.json").unlink()
    assert "this version changes" not in run(script_runner, "skills", "list").stderr


# -- 2. a type nexus cannot run: the prompt, with a warning, logged as unknown -----------------------------


def test_a_skill_of_a_type_nexus_cannot_run_warns_and_is_logged_as_unknown(script_runner, workspace, nexus_home):
    write_skill(workspace, "lam", meta={"type": "lambda"}, body="Do it.\n")
    write_skill(workspace, "plain", body="Plain.\n")  # no execution metadata: a prompt skill, no warning
    ran = run(script_runner, "skill", "run", "lam")
    assert ran.returncode == 0 and "Do it." in ran.stdout
    assert "'lam' has type 'lambda', which nexus cannot run" in ran.stderr
    plain = run(script_runner, "skill", "run", "plain")
    assert plain.returncode == 0 and "cannot run" not in plain.stderr
    assert [e["type"] for e in read_log(nexus_home, "lam")] == ["unknown"]
    assert [e["type"] for e in read_log(nexus_home, "plain")] == ["prompt"]
    stats = json.loads(run(script_runner, "skill", "stats", "--json").stdout)
    lam = by_name(stats["skills"])["lam"]
    assert (lam["type"], lam["category"], stats["skippedLines"]) == ("unknown", "prompts", 0)
    assert json.loads(run(script_runner, "skill", "run", "lam", "--json").stdout)["type"] == "unknown"
    # and in what people read: the listing, the skill's page and the stats
    assert "[unknown: lambda, read as a prompt]" in run(script_runner, "skills", "list").stdout
    assert "Type:       unknown (lambda): nexus cannot run it" in run(script_runner, "skill", "show", "lam").stdout
    row = next(line for line in run(script_runner, "skill", "stats").stdout.splitlines() if " lam " in line)
    assert "(unknown)" in row


# -- 3. the skills spec's own dependency keys ------------------------------------------------------------


def test_requires_tools_and_connectors_are_read_and_check_suggests_nexus_spelling(script_runner, workspace):
    write_skill(workspace, "base", meta={"tool": "spec-absent-tool"})  # not installed
    mailer = write_skill(workspace, "mailer", meta={"requires": {"tools": ["base"], "connectors": ["google"]}})
    shown = json.loads(run(script_runner, "skill", "show", "mailer", "--json").stdout)
    assert shown["requires"]["skills"] == ["base"] and shown["connectors"] == ["google"]
    assert shown["status"] != "ready" and "base" in shown["missing"]["skills"]
    plain = run(script_runner, "skills", "check", str(mailer))
    assert plain.returncode == 0 and "unknown key" not in plain.stdout and "spelling" not in plain.stdout
    strict = run(script_runner, "skills", "check", "--strict", str(mailer))
    assert "requires.tools: the skills spec's spelling; nexus's is requires.skills" in strict.stdout
    assert "requires.connectors: the skills spec's spelling; nexus's is metadata.nexus.connectors" in strict.stdout


# -- 4. configEnv is a required env var ------------------------------------------------------------------


def test_config_env_is_required_and_shown(script_runner, workspace, bindir, monkeypatch):
    make_tool(bindir, "cfg")
    write_skill(workspace, "cfg", meta={"tool": "cfg", "configEnv": ["SPEC_CFG_HOME"]})
    shown = json.loads(run(script_runner, "skill", "show", "cfg", "--json").stdout)
    assert (shown["status"], shown["missing"]["env"]) == ("needs-setup", ["SPEC_CFG_HOME"])
    assert "Env: SPEC_CFG_HOME MISSING (configEnv)" in run(script_runner, "skill", "show", "cfg").stdout
    assert run(script_runner, "skill", "run", "cfg").returncode == 1
    monkeypatch.setenv("SPEC_CFG_HOME", "/somewhere")
    assert json.loads(run(script_runner, "skill", "show", "cfg", "--json").stdout)["status"] == "ready"


# -- 5. the known-tools table is the gateway design's ----------------------------------------------------

# The gateway design's "Known Skill Tools" table, row by row: (tool binary, verify command); None for
# "(env check)" (no binary of its own to check) and for "(none)" / "-".
DESIGN_TABLE = {
    "gog": ("gog", "gog gmail labels list --account default"),
    "eve": ("eve", "eve messages --limit 1"),
    "1password": ("op", "op whoami"),
    "tmux": ("tmux", "tmux -V"),
    "peekaboo": ("peekaboo", "peekaboo --version"),
    "qmd": ("qmd", "qmd status"),
    "aix": ("aix", "aix --version"),
    "video-frames": ("ffmpeg", "ffmpeg -version"),
    "camsnap": ("camsnap", "camsnap --help"),
    "brave-search": (None, 'test -n "$BRAVE_API_KEY"'),
    # The design's "(env check)" of SUMMARIZE_API_KEY is a key the summarize CLI never reads: nexus checks the
    # tool itself, as OpenClaw does (eligibility 368/368 again), and needs no key of it.
    "summarize": ("summarize", "summarize --version"),
    "nano-pdf": ("nano-pdf", "nano-pdf --version"),
    "filesystem": (None, None),
    "computer-use": (None, None),
    "weather": (None, None),
}


def test_the_known_tools_table_is_the_designs(script_runner, workspace):
    for name in DESIGN_TABLE:
        write_skill(workspace, name)
    listed = by_name(json.loads(run(script_runner, "skills", "list", "--json").stdout))
    for name, (binary, verify) in DESIGN_TABLE.items():
        entry = listed[name]
        assert entry.get("verify") == verify, name
        if binary:
            assert (entry["type"], entry["tool"]) == ("tool", binary), name
        elif verify:  # an env check: the skill is set up once its key is there
            variable = verify.split("$")[1].rstrip('"')
            assert (entry["requiredEnv"], entry["missing"]["env"]) == ([variable], [variable]), name
        else:
            assert entry["type"] == "prompt", name


# -- 16. as OpenClaw reads skills --------------------------------------------------------------------------


def test_openclaw_metadata_that_is_no_mapping_falls_back_to_clawdbot(script_runner, workspace):
    (workspace / "claw").mkdir()
    (workspace / "claw" / "SKILL.md").write_text(
        '---\nname: claw\ndescription: x\nmetadata: {"openclaw": "oops", "clawdbot": {"requires": {"env": ["SPEC_CLAW"]}}}\n'
        "---\nbody\n")
    shown = json.loads(run(script_runner, "skill", "show", "claw", "--json").stdout)
    assert shown["missing"]["env"] == ["SPEC_CLAW"]


def test_check_keeps_spaces_in_quoted_names_and_knows_user_invocable(script_runner, workspace):
    skill = write_skill(workspace, "spaced", meta={"requires": {"skills": ["a  b"]}}, extra="user-invocable: true\n")
    strict = run(script_runner, "skills", "check", "--strict", str(skill))
    assert "'a  b' is not a valid skill name" in strict.stdout
    assert "user-invocable" not in strict.stdout


# -- 7. the class of a skill; when verification configured it ---------------------------------------------


def test_show_says_the_class_and_verify_when_it_was_configured(script_runner, workspace, bindir):
    for tool in ("gog", "plaincli", "keyed"):
        make_tool(bindir, tool)
    write_skill(workspace, "gog")  # the known table: it signs in to a Google account
    write_skill(workspace, "plaincli", meta={"tool": "plaincli", "verify": "true"})
    write_skill(workspace, "keyed", meta={"tool": "keyed", "primaryEnv": "SPEC_KEY"})
    write_skill(workspace, "words")
    classes = {name: json.loads(run(script_runner, "skill", "show", name, "--json").stdout)["class"]
               for name in ("gog", "plaincli", "keyed", "words")}
    assert classes == {"gog": "oauth", "plaincli": "cli", "keyed": "api-key", "words": "prompt"}
    assert "Class:      OAuth/Complex" in run(script_runner, "skill", "show", "gog").stdout
    verified = run(script_runner, "skill", "verify", "plaincli")
    assert verified.returncode == 0 and "verified successfully.\n   Configured at: 20" in verified.stdout
    outcome = json.loads(run(script_runner, "skill", "verify", "plaincli", "--force", "--json").stdout)
    assert outcome["configuredAt"] == read_state_of(script_runner, "plaincli")["configuredAt"]


def read_state_of(script_runner, name):
    return json.loads(run(script_runner, "skill", "show", name, "--json").stdout)["state"]


# -- 14. skills check DIR looks as deep as skills add --------------------------------------------------


def test_check_finds_skills_as_add_does_and_says_where(script_runner, tmp_path):
    root = tmp_path / "repo"
    for name in ("alpha", "beta", "gamma"):
        write_skill(root / "skills", name)
    write_skill(root, "template")
    write_skill(root / "a" / "b" / "c", "deep")  # four levels below the root: found, as skills add finds it
    write_skill(root / "a" / "b" / "c" / "d", "deeper")  # five: not
    checked = run(script_runner, "skills", "check", str(root))
    assert checked.returncode == 0, checked.stdout
    assert f"{root}: 5 skills found: 1 in ./, 1 in a/b/c/, 3 in skills/" in checked.stderr
    assert "5 skills checked: 0 errors" in checked.stderr
    empty = tmp_path / "empty"
    (empty / "x").mkdir(parents=True)
    nothing = run(script_runner, "skills", "check", str(empty))
    assert nothing.returncode == 1 and "no SKILL.md here or in folders up to 4 levels below it" in nothing.stdout


# -- 6. the single-file state of the earlier implementation is imported once ---------------------------------


def test_the_single_file_state_is_imported_once_and_kept(script_runner, workspace, nexus_home):
    write_skill(workspace, "gog")
    legacy = nexus_home / "state"
    legacy.mkdir(parents=True)
    old_state = {"version": 1, "skills": {
        "gog": {"version": 1, "configured": True, "configuredAt": "2026-01-14T10:30:00Z", "totalInvocations": 312,
                "successCount": 308, "totalDurationMs": 312000, "successRate": 0.9872},
        "../evil": {"configured": True}}}
    (legacy / "skill-state.json").write_text(json.dumps(old_state))
    calls = [{"ts": "2026-01-14T10:31:00.000Z", "skill": "gog", "type": "tool", "ms": 900, "exit": 0, "args": ["x"]},
             {"ts": "2026-01-14T10:32:00.000Z", "skill": "weather", "type": "prompt", "ms": 3},
             "not json", {"ts": "2026-01-14T10:33:00.000Z", "skill": "gog", "type": "tool", "ms": 800, "exit": 1},
             {"ts": "2026-01-14T10:34:00.000Z", "skill": "gog", "type": "tool", "durationMs": 700, "exitCode": 2}]
    (legacy / "skill-usage.log").write_text("".join((c if isinstance(c, str) else json.dumps(c)) + "\n" for c in calls))
    before = {p.name: p.read_bytes() for p in legacy.iterdir() if p.is_file()}
    first = run(script_runner, "skills", "list")
    assert first.returncode == 0
    assert "imported into the per-skill files: the state of 1 skill(s)" in first.stderr
    assert "4 call(s)" in first.stderr
    state = read_state(nexus_home, "gog")
    assert (state["totalInvocations"], state["configuredAt"], state["logEntries"]) == (312, "2026-01-14T10:30:00Z", 3)
    assert [(e["ms"], e["exit"]) for e in read_log(nexus_home, "gog")] == [(900, 0), (800, 1), (700, 2)]  # spec keys
    stats = json.loads(run(script_runner, "skill", "stats", "gog", "--days", "36500", "--json").stdout)
    assert stats["totalInvocations"] == 3 and stats["skippedLines"] == 0  # the design's spelling is read too
    assert [e["skill"] for e in read_log(nexus_home, "weather")] == ["weather"]
    assert not (nexus_home / "evil").exists() and not (legacy / "nexus" / "evil").exists()
    assert {p.name: p.read_bytes() for p in legacy.iterdir() if p.is_file()} == before  # the originals are kept
    again = run(script_runner, "skills", "list")
    assert "imported" not in again.stderr and len(read_log(nexus_home, "gog")) == 3


# -- 8. a manifest of the spec's version 1 is read by rebuilding it ----------------------------------------


def test_a_version_1_manifest_is_rebuilt(script_runner, workspace, nexus_home):
    write_skill(workspace, "notes")
    manifest = nexus_home / "state" / "nexus" / "skills" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"version": 1, "generatedAt": "2026-01-14T10:30:00Z", "skills": {
        "ghost": {"name": "ghost", "description": "gone", "source": "nexus-workspace", "filePath": "/nowhere/SKILL.md"}}},
        indent=2))
    listed = run(script_runner, "skills", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    names = {r["name"] for r in json.loads(listed.stdout)}
    assert "notes" in names and "ghost" not in names
    assert json.loads(manifest.read_text())["version"] == 2
    assert run(script_runner, "skill", "run", "notes").returncode == 0


# -- 11. variables ------------------------------------------------------------------------------------------

VARIABLES = [{"name": "CONTACT_EMAIL", "description": "Email address of your contact", "type": "string"},
             {"name": "SPEC_LIMIT", "description": "How many", "type": "number", "default": "5"}]


def test_variables_fill_a_prompt_and_reach_a_tools_environment(script_runner, workspace, bindir, nexus_home):
    write_skill(workspace, "mailto", meta={"variables": VARIABLES},
                body='Run: gog gmail search "from:${CONTACT_EMAIL}" --max ${SPEC_LIMIT} (not ${OTHER})\n')
    make_tool(bindir, "envy", '#!/bin/sh\necho "$CONTACT_EMAIL $SPEC_LIMIT"\n')
    write_skill(workspace, "envy", meta={"tool": "envy", "variables": VARIABLES})
    shown = run(script_runner, "skill", "show", "mailto").stdout
    assert "CONTACT_EMAIL (string): Email address of your contact" in shown and "[default: 5]" in shown
    missing = run(script_runner, "skill", "run", "mailto")
    assert missing.returncode == 1 and "needs CONTACT_EMAIL (Email address of your contact)" in missing.stderr
    assert read_log(nexus_home, "mailto")[-1]["refused"] == "variables"
    filled = run(script_runner, "skill", "run", "mailto", "--var", "CONTACT_EMAIL=mom@example.com")
    assert filled.returncode == 0
    assert 'search "from:mom@example.com" --max 5 (not ${OTHER})' in filled.stdout
    ran = run(script_runner, "skill", "run", "envy", "--var=CONTACT_EMAIL=a@b", "--var", "SPEC_LIMIT=9", "--", "x")
    assert ran.returncode == 0 and ran.stdout == "a@b 9\n"
    refused = run(script_runner, "skill", "run", "envy")
    assert refused.returncode == 1 and "--var CONTACT_EMAIL=..." in refused.stderr
    assert read_log(nexus_home, "envy")[-1]["refused"] == "variables"
    assert read_state(nexus_home, "envy")["successRate"] == 1  # the caller's omission: no failure of the skill
    unknown = run(script_runner, "skill", "run", "envy", "--var", "NOPE=1")
    assert unknown.returncode == 2 and "has no variable NOPE (it declares: CONTACT_EMAIL, SPEC_LIMIT)" in unknown.stderr
    assert run(script_runner, "skill", "run", "envy", "--var", "no-equals").returncode == 2


# -- 13. aliases -------------------------------------------------------------------------------------------------


def test_an_alias_runs_its_skill_and_never_hides_another(script_runner, workspace, bindir, nexus_home):
    make_tool(bindir, "gog", '#!/bin/sh\necho "gog $*"\n')
    write_skill(workspace, "gog", meta={"tool": "gog", "aliases": ["gmail", "google-mail", "tmuxy"]})
    write_skill(workspace, "tmuxy", body="I am tmuxy.\n")  # a skill of that name wins over the alias
    write_skill(workspace, "other", meta={"aliases": ["google-mail"]})  # claimed twice: stands for neither
    ran = run(script_runner, "skill", "run", "gmail", "--", "inbox")
    assert ran.returncode == 0 and ran.stdout == "gog inbox\n"
    assert [e["skill"] for e in read_log(nexus_home, "gog")] == ["gog"] and read_log(nexus_home, "gmail") == []
    assert "I am tmuxy." in run(script_runner, "skill", "run", "tmuxy").stdout
    assert run(script_runner, "skill", "run", "google-mail").returncode == 1
    assert "Aliases:    gmail, google-mail, tmuxy" in run(script_runner, "skill", "show", "gog").stdout
    check = run(script_runner, "skills", "check")
    assert "alias 'tmuxy' is the name of a skill, which it never hides" in check.stdout
    assert "alias 'google-mail' is claimed by gog, other" in check.stdout


# -- 12. the model, its tokens, and the call that made a call --------------------------------------------------


def test_calls_carry_the_model_and_their_parent_and_stats_group_by_model(script_runner, workspace, bindir, nexus_home,
                                                                         monkeypatch):
    make_tool(bindir, "inner")
    make_tool(bindir, "outer", "#!/bin/sh\nexec nexus-run inner -- from-outer\n")
    write_skill(workspace, "inner", meta={"tool": "inner"})
    write_skill(workspace, "outer", meta={"tool": "outer"})
    for model, prompt, completion in (("model-a", "100", "20"), ("model-a", "50", "x"), ("model-b", "7", "3")):
        monkeypatch.setenv("NEXUS_MODEL", model)
        monkeypatch.setenv("NEXUS_PROMPT_TOKENS", prompt)
        monkeypatch.setenv("NEXUS_COMPLETION_TOKENS", completion)
        monkeypatch.setenv("NEXUS_MODEL_VERSION", "2026-01")
        assert run(script_runner, "skill", "run", "outer").returncode == 0
    outer, inner = read_log(nexus_home, "outer"), read_log(nexus_home, "inner")
    assert [(e["model"], e["modelVersion"], e["promptTokens"]) for e in outer] == [
        ("model-a", "2026-01", 100), ("model-a", "2026-01", 50), ("model-b", "2026-01", 7)]
    assert "completionTokens" not in outer[1]  # not a count: left out
    assert [e["parentCall"] for e in inner] == [e["call"] for e in outer] and len({e["call"] for e in outer}) == 3
    assert "parentCall" not in outer[0]
    stats = json.loads(run(script_runner, "skill", "stats", "--json").stdout)
    models = {m["name"]: m for m in stats["models"]}
    # each outer call made an inner one, which logged the same model
    assert (models["model-a"]["totalInvocations"], models["model-a"]["promptTokens"]) == (4, 300)
    assert (models["model-b"]["completionTokens"], models["model-b"]["successRate"]) == (6, 1)
    assert "By Model:" in run(script_runner, "skill", "stats").stdout
    monkeypatch.delenv("NEXUS_MODEL")
    report = json.loads(run(script_runner, "report", "--json").stdout)
    assert [m["name"] for m in report["stats"]["models"]] == ["model-a", "model-b"]


# -- 10. what crystallization saw: fingerprints of the output nexus held ------------------------------------


def test_captured_output_is_fingerprinted_and_crystallization_keeps_it(script_runner, workspace, bindir, nexus_home,
                                                                      monkeypatch):
    import hashlib

    make_tool(bindir, "say", '#!/bin/sh\necho "said $*"\n')
    write_skill(workspace, "say", meta={"tool": "say"})
    monkeypatch.setenv("NEXUS_SESSION_ID", "spec-session-1")
    assert run(script_runner, "skill", "run", "say", "--json", "--", "hi").returncode == 0
    assert run(script_runner, "skill", "run", "say", "--", "streamed").returncode == 0
    captured, streamed = read_log(nexus_home, "say")[:2]
    assert captured["output"] == {"sha256": hashlib.sha256(b"said hi\n").hexdigest(), "bytes": 8}
    assert "output" not in streamed  # a streamed call's output is the tool's own: never read
    job = run(script_runner, "skill", "run", "say", "--background", "--", "later").stdout.strip()
    assert run(script_runner, "job", "wait", job, "--timeout", "60").returncode == 0
    in_file = read_log(nexus_home, "say")[-1]  # a background job's output is in a file nexus keeps
    assert in_file["output"] == {"sha256": hashlib.sha256(b"said later\n").hexdigest(), "bytes": 11}
    made = run(script_runner, "session", "crystallize", "spec-session-1", "--name", "say-again", "--var", "WORD=hi")
    assert made.returncode == 0, made.stderr
    crystallized = read_state(nexus_home, "say-again")["crystallized"]
    assert crystallized["scriptPath"].endswith("say-again/replay.sh") and crystallized["variables"] == ["WORD"]
    assert crystallized["fingerprint"] == [{"n": 1, "skill": "say", "output": captured["output"]},
                                           {"n": 3, "skill": "say", "output": in_file["output"]}]
    assert crystallized["crystallizedAt"].endswith("Z")


# -- 9. adaptive forgetting: a degraded replay is set aside ---------------------------------------------------


def test_a_degraded_crystallized_skill_is_set_aside_from_agents(script_runner, workspace, bindir, nexus_home,
                                                                monkeypatch):
    import datetime

    make_tool(bindir, "step")
    write_skill(workspace, "step", meta={"tool": "step"}, description="One step.")
    monkeypatch.setenv("NEXUS_SESSION_ID", "spec-s9")
    assert run(script_runner, "skill", "run", "step", "--", "go").returncode == 0
    monkeypatch.delenv("NEXUS_SESSION_ID")
    assert run(script_runner, "session", "crystallize", "spec-s9", "--name", "replay").returncode == 0
    assert run(script_runner, "skill", "run", "replay").returncode == 0
    assert "replay" in run(script_runner, "skills", "prompt").stdout
    state_path = nexus_home / "state" / "nexus" / "skills" / "replay" / "state.json"
    state = json.loads(state_path.read_text())  # it used to work: twenty days of successful calls
    today = datetime.date.today()
    state["days"] = {(today - datetime.timedelta(days=d)).isoformat(): [3, 0] for d in range(1, 21)}
    state["recent"] = [0] * 10
    state_path.write_text(json.dumps(state))
    (bindir / "step").write_text("#!/bin/sh\nexit 1\n")
    for _ in range(5):
        run(script_runner, "skill", "run", "replay", "--no-verify")
    ran = run(script_runner, "skill", "run", "replay", "--no-verify")
    assert "'replay' is degraded (" in ran.stderr and "it replays step; if it fails, run those directly" in ran.stderr
    for argv in (["skills", "prompt"], ["skills", "prompt", "--format", "markdown"], ["skills", "agents-md"],
                 ["skills", "cursor-rules"]):
        text = run(script_runner, *argv).stdout
        assert "replay is set aside while it is degraded: use step directly." in text, argv
        assert "<name>replay</name>" not in text and "**replay**" not in text, argv
    write_config(nexus_home, "[skills]\nofferDegradedReplays = true\n")
    kept = run(script_runner, "skills", "prompt").stdout
    assert "<name>replay</name>" in kept and "set aside" not in kept
