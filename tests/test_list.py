"""nexus skills list and path: the status of every skill, by the static checks (nothing runs)."""

import io
import json
import os
import shutil
import stat
import sys
import time

import pytest
from helpers import by_name, make_tool, write_config, write_skill


def listed(script_runner, *flags):
    result = script_runner.run(["nexus", "skills", "list", "--json", *flags])
    assert result.returncode == 0, result.stderr
    return by_name(json.loads(result.stdout))


@pytest.fixture
def zoo(workspace, bindir, nexus_home):
    """One skill for each status."""
    make_tool(bindir, "have")
    write_skill(workspace, "prompt-only")
    write_skill(workspace, "has-tool", meta={"tool": "have"})
    write_skill(workspace, "no-tool", meta={"requires": {"bins": ["have", "missing-bin"]},
                                            "install": [{"kind": "node", "package": "missing-cli"}]})
    write_skill(workspace, "any-bin", meta={"requires": {"anyBins": ["nope1", "have"]}})
    write_skill(workspace, "no-any-bin", meta={"requires": {"anyBins": ["nope1", "nope2"]}})
    write_skill(workspace, "needs-env", meta={"requires": {"env": ["ZOO_TOKEN"]}})
    write_skill(workspace, "keyed", meta={"requires": {"env": ["KEYED_TOKEN"]}, "primaryEnv": "KEYED_TOKEN"})
    write_skill(workspace, "needs-config", meta={"requires": {"config": ["browser.enabled"]}})
    write_skill(workspace, "always-on", meta={"always": True, "requires": {"bins": ["missing-bin"]}})
    write_skill(workspace, "turned-off")
    other = "win32" if sys.platform != "win32" else "linux"
    write_skill(workspace, "elsewhere", meta={"os": [other]})
    write_skill(workspace, "mac-alias", meta={"os": ["macos", "linux"]})
    write_config(nexus_home, """
        [skills.entries.turned-off]
        enabled = false
        [skills.entries.keyed]
        apiKey = "k"
        [browser]
        enabled = false
    """)
    (workspace / "broken").mkdir()
    (workspace / "broken" / "SKILL.md").write_text("---\nname: broken\n")


def test_every_status(script_runner, zoo):
    skills = listed(script_runner)
    expected = {
        "prompt-only": "ready", "has-tool": "ready", "no-tool": "not-installed", "any-bin": "ready",
        "no-any-bin": "not-installed", "needs-env": "needs-setup", "keyed": "ready",
        "needs-config": "needs-setup", "always-on": "ready", "turned-off": "disabled", "broken": "invalid",
    }
    assert {name: skills[name]["status"] for name in expected} == expected
    assert skills["no-tool"]["missing"]["bins"] == ["missing-bin"]
    assert skills["no-any-bin"]["missing"]["anyBins"] == ["nope1", "nope2"]
    assert skills["needs-env"]["missing"]["env"] == ["ZOO_TOKEN"]
    assert skills["needs-config"]["missing"]["config"] == ["browser.enabled"]
    assert "elsewhere" not in skills
    assert ("mac-alias" in skills) == (sys.platform in ("linux", "darwin"))
    assert "error" in skills["broken"] and skills["broken"]["filePath"].endswith("broken/SKILL.md")
    for name in ("prompt-only", "has-tool"):
        assert {"name", "description", "source", "type", "status", "verified", "missing"} <= set(skills[name])


def test_env_set_and_config_truthy_make_ready(script_runner, zoo, nexus_home, monkeypatch):
    monkeypatch.setenv("ZOO_TOKEN", "t")
    write_config(nexus_home, "[browser]\nenabled = true\n")
    skills = listed(script_runner)
    assert skills["needs-env"]["status"] == "ready" and skills["needs-config"]["status"] == "ready"


def test_filters(script_runner, zoo):
    assert {s["status"] for s in listed(script_runner, "--ready").values()} == {"ready"}
    assert {s["status"] for s in listed(script_runner, "--locked").values()} == {"needs-setup", "not-installed"}
    assert listed(script_runner, "--all")["elsewhere"]["status"] == "unsupported"


def test_allow_bundled_disables_the_rest(script_runner, nexus_home):
    write_config(nexus_home, '[skills]\nallowBundled = ["filesystem"]\n')
    skills = listed(script_runner)
    bundled = {n: s["status"] for n, s in skills.items() if s.get("source") == "nexus-bundled"}
    assert bundled["filesystem"] == "ready" and len(bundled) >= 6
    assert {s for n, s in bundled.items() if n != "filesystem"} == {"disabled"}


def test_bin_path_from_config(script_runner, workspace, tmp_path, nexus_home):
    extra = tmp_path / "extra-bin"
    extra.mkdir()
    make_tool(extra, "hidden-tool")
    write_skill(workspace, "hidden", meta={"tool": "hidden-tool"})
    assert listed(script_runner)["hidden"]["status"] == "not-installed"
    write_config(nexus_home, f'[skills]\nbinPath = ["{extra}"]\n')
    assert listed(script_runner)["hidden"]["status"] == "ready"


def test_human_layout(script_runner, zoo):
    result = script_runner.run(["nexus", "skills", "list"])
    out = result.stdout
    assert result.returncode == 0
    for heading in ("READY (configured, working)", "NEEDS SETUP", "NOT INSTALLED", "DISABLED", "INVALID"):
        assert heading in out, heading
    assert "[tool: have]" in out and "[prompt]" in out
    assert "install: npm install -g missing-cli" in out
    assert "needs: ZOO_TOKEN" in out and "needs: config browser.enabled" in out
    assert "broken/SKILL.md" in out
    assert "✅" not in out and "\033[" not in out and "═" not in out  # not a terminal


def test_bundled_skills_ship(script_runner):
    skills = listed(script_runner, "--all")
    bundled = {n for n, s in skills.items() if s["source"] == "nexus-bundled"}
    assert {"filesystem", "weather", "github", "tmux", "video-frames", "disk-report"} <= bundled
    assert skills["disk-report"]["type"] == "script" and skills["tmux"]["type"] == "tool"


def test_broken_config_exits_2(script_runner, nexus_home):
    path = write_config(nexus_home, "[skills]\nallowBundled = [\n")
    result = script_runner.run(["nexus", "skills", "list"])
    assert result.returncode == 2
    assert str(path) in result.stderr and "line" in result.stderr and "Traceback" not in result.stderr


def test_skills_path_order(script_runner, tmp_path, nexus_home):
    write_config(nexus_home, f'[skills.load]\nextraDirs = ["{tmp_path / "x"}"]\n')
    paths = script_runner.run(["nexus", "skills", "path"]).stdout.splitlines()
    assert paths[0] == str(tmp_path / "x")
    assert paths[1].endswith("nexus/skills")  # bundled, inside the package
    assert paths[2:] == [str(tmp_path / "managed"), str(nexus_home / "skills")]


def statuses(script_runner):
    return {name: record["status"] for name, record in listed(script_runner, "--all").items()}


def test_cached_statuses_follow_every_change_they_depend_on(script_runner, zoo, nexus_home, bindir, tmp_path,
                                                            monkeypatch):
    first = statuses(script_runner)
    assert statuses(script_runner) == first  # the second listing reads the cache
    assert (nexus_home / "state/nexus/skills/status-cache.json").exists()

    make_tool(bindir, "missing-bin")  # a binary installed
    assert statuses(script_runner)["no-tool"] == "ready"
    (bindir / "missing-bin").unlink()
    assert statuses(script_runner)["no-tool"] == "not-installed"

    other = tmp_path / "other-bin"
    other.mkdir()
    make_tool(other, "nope2")
    monkeypatch.setenv("PATH", f"{other}:{bindir}:{os.path.dirname(sys.executable)}:/usr/bin:/bin")  # PATH itself
    assert statuses(script_runner)["no-any-bin"] == "ready"
    monkeypatch.setenv("ZOO_TOKEN", "t")  # an env var that matters
    assert statuses(script_runner)["needs-env"] == "ready"
    monkeypatch.setenv("ZOO_TOKEN", "")  # set but empty counts as unset
    assert statuses(script_runner)["needs-env"] == "needs-setup"

    write_config(nexus_home, "[skills.entries.has-tool]\nenabled = false\n")  # the config
    now = statuses(script_runner)
    assert now["has-tool"] == "disabled" and now["turned-off"] == "ready" and now["needs-config"] == "needs-setup"

    state = nexus_home / "state/nexus/skills/has-tool/state.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    write_config(nexus_home, "")
    state.write_text(json.dumps({"version": 1, "configured": False, "lastVerifyOk": False}))  # a failed verify
    assert statuses(script_runner)["has-tool"] == "needs-setup"
    state.write_text(json.dumps({"version": 1, "configured": True, "lastVerifyOk": True}))
    assert statuses(script_runner)["has-tool"] == "ready"

    # Each status as nexus-verify --static computes it, with no cache at all.
    discovered = script_runner.run(["nexus-discover", "--valid"]).stdout
    static = script_runner.run(["nexus-verify", "--static"], stdin=io.StringIO(discovered)).stdout
    uncached = {r["name"]: {k: r[k] for k in ("status", "missing", "verified")} for r in map(json.loads, static.splitlines())}
    cached = {name: {k: r[k] for k in ("status", "missing", "verified")} for name, r in listed(script_runner, "--all").items()
              if r["status"] != "invalid"}
    assert cached == uncached


def test_status_reads_no_state_its_count_does_not_need(script_runner, workspace, nexus_home):
    write_skill(workspace, "absent", meta={"tool": "not-on-path-anywhere"})
    state = nexus_home / "state/nexus/skills/absent/state.json"
    state.parent.mkdir(parents=True)
    state.write_text("{corrupt")
    status = script_runner.run(["nexus", "status"])
    assert status.returncode == 0 and "state.json" not in status.stderr  # not installed: its state is not read
    assert "state.json" in script_runner.run(["nexus", "skills", "list", "--json"]).stderr  # list shows verified


EVALUATED = ["status", "missing", "disabledReason", "verified", "verifiesAgain", "degraded", "degradedReason",
             "drifted", "driftedReason", "reason", "permissions"]


def test_list_json_is_the_entries_with_their_status(script_runner, zoo):
    merged = listed(script_runner, "--all")
    entries = {r["name"]: r for r in map(json.loads, script_runner.run(["nexus-manifest", "read"]).stdout.splitlines())}
    for name, entry in entries.items():
        assert list(merged[name])[:len(entry)] == list(entry) and all(merged[name][k] == v for k, v in entry.items())
        added = list(merged[name])[len(entry):]  # in the order evaluate() gives them, each at most once
        assert [key for key in EVALUATED if key in added] == added
        assert {"status", "missing", "verified", "degraded", "drifted"} <= set(added)


def test_an_entry_with_status_keys_of_its_own_gets_the_computed_ones(script_runner, workspace):
    write_skill(workspace, "odd")
    entries = [json.loads(line) for line in script_runner.run(["nexus-discover"]).stdout.splitlines()]
    odd_entry = next(entry for entry in entries if entry["name"] == "odd")
    odd_entry.update(status="bogus", verified="bogus")  # as a script might pipe them in
    piped = "".join(json.dumps(entry) + "\n" for entry in entries)
    assert script_runner.run(["nexus-manifest", "write"], stdin=io.StringIO(piped)).returncode == 0
    odd = listed(script_runner)["odd"]
    assert (odd["status"], odd["verified"]) == ("ready", True)
    assert list(odd) == [*odd_entry, "missing", "degraded", "drifted"]  # each key where the entry had it


@pytest.mark.skipif(os.geteuid() != 0, reason="what root is told: root runs a spec's sudo command itself")
def test_root_is_told_an_install_without_sudo_and_the_command_that_runs_it(script_runner, workspace):
    write_skill(workspace, "clip", meta={"tool": "no-such-clip", "install": [
        {"id": "apt", "kind": "shell", "script": "sudo apt-get install -y no-such-clip", "bins": ["no-such-clip"]}]})
    listed = script_runner.run(["nexus", "skills", "list"]).stdout
    assert "install: apt-get install -y no-such-clip" in listed and "sudo" not in listed
    shown = script_runner.run(["nexus", "skill", "show", "clip"]).stdout
    assert "Install no-such-clip: nexus skill install clip (it runs: apt-get install -y no-such-clip)" in shown
    planned = script_runner.run(["nexus", "skill", "install", "clip", "--dry-run"]).stdout
    assert "sudo" not in planned and "apt-get install -y no-such-clip" in planned


def test_listed_permissions_kept_in_the_status_cache_follow_the_config_the_entry_and_the_file_system(
        script_runner, workspace, bindir, nexus_home, tmp_path):
    home_dir = tmp_path / "home"
    make_tool(bindir, "have")
    write_skill(workspace, "writer", meta={"tool": "have", "sandbox": {"write": ["~/out"]}})
    write_skill(workspace, "plain", meta={"tool": "have"})
    (home_dir / "work").mkdir(parents=True)
    (home_dir / "out").symlink_to(home_dir / "work")

    def permissions():
        return {name: record.get("permissions") for name, record in listed(script_runner).items()}

    first = permissions()
    assert first["plain"]["network"] is False and "~/out" in first["writer"]["write"]
    assert permissions() == first  # the second listing splices what the rows keep
    cache = json.loads((nexus_home / "state/nexus/skills/status-cache.json").read_text())
    assert any(text and text.startswith(',"permissions":') for text in cache["texts"])

    write_config(nexus_home, "[skills.entries.plain.sandbox]\nnetwork = true\n")  # the config
    assert permissions()["plain"]["network"] is True
    write_skill(workspace, "plain", meta={"tool": "have", "sandbox": {"read": ["/srv/data"]}})  # the entry
    write_config(nexus_home, "")
    assert permissions()["plain"]["read"] == ["/srv/data"]
    (home_dir / ".ssh").mkdir()
    (home_dir / "out").unlink()
    (home_dir / "out").symlink_to(home_dir / ".ssh")  # a write grant now leads where nothing may be granted
    assert "~/out" not in permissions()["writer"]["write"]
    shutil.rmtree(workspace / "plain")  # a skill removed
    assert "plain" not in permissions()


def test_a_status_cache_that_is_not_nexuss_own_is_ignored_and_written_again(script_runner, workspace, bindir,
                                                                             nexus_home):
    make_tool(bindir, "have")
    write_skill(workspace, "tool-skill", meta={"tool": "have"})
    first = listed(script_runner)
    path = nexus_home / "state/nexus/skills/status-cache.json"
    written = json.loads(path.read_text())
    forged = json.dumps({**written, "texts": [',"permissions":{"forged":true}' if text and "permissions" in text
                                              else text for text in written["texts"]]})
    for how in ("loose", "link", "corrupt", "shape") + (("foreign",) if os.geteuid() == 0 else ()):
        path.unlink()
        if how == "link":
            (path.parent / "elsewhere.json").write_text(forged)
            os.chmod(path.parent / "elsewhere.json", 0o600)
            path.symlink_to(path.parent / "elsewhere.json")
        else:
            path.write_text({"corrupt": "{not json", "shape": json.dumps({**written, "skills": {
                "tool-skill": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}})}.get(how, forged))
            os.chmod(path, 0o664 if how == "loose" else 0o600)
            if how == "foreign":
                os.chown(path, 4321, 4321)
        assert listed(script_runner) == first, how
        assert not path.is_symlink() and path.stat().st_uid == os.geteuid(), how
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and json.loads(path.read_text())["skills"], how


def test_status_keeps_what_the_sandbox_probes_found_while_what_it_depends_on_holds(script_runner, nexus_home,
                                                                                  monkeypatch):
    def said():
        result = script_runner.run(["nexus", "status", "--json"])
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)["sandbox"]

    found = said()
    path = nexus_home / "state/nexus/probes.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    kept = json.loads(path.read_text())
    assert kept["found"] == {key: found[key] for key in ("landlock", "netns", "overlay")}

    def forge(how="", **changed):
        if path.exists() or path.is_symlink():
            path.unlink()
        document = json.dumps({**kept, "found": {**kept["found"], "landlock": 42}, **changed})
        if how == "link":
            (path.parent / "elsewhere.json").write_text(document)
            os.chmod(path.parent / "elsewhere.json", 0o600)
            path.symlink_to(path.parent / "elsewhere.json")
            return
        path.write_text(document if how != "corrupt" else "{not json")
        os.chmod(path, 0o644 if how == "loose" else 0o600)
        if how == "foreign":
            os.chown(path, 4321, 4321)

    forge()
    assert said()["landlock"] == 42  # kept: no child forked to ask again
    assert "landlock ABI 42" in script_runner.run(["nexus", "status"]).stdout
    monkeypatch.setenv("NEXUS_SANDBOX_UNAVAILABLE", "1")  # what it depends on, changed: asked again
    assert said()["landlock"] == 0
    monkeypatch.delenv("NEXUS_SANDBOX_UNAVAILABLE")
    assert said() == found
    for how, changed in [("", {"key": kept["key"].replace("[", "[1,", 1)}),  # another boot, user, sysctl...
                         ("", {"at": time.time() - 7200}), ("", {"at": time.time() + 600}),  # too old, or to come
                         ("", {"found": {"landlock": "42", "netns": True, "overlay": True}}),  # not its shape
                         ("loose", {}), ("link", {}), ("corrupt", {})] + ([("foreign", {})] if os.geteuid() == 0 else []):
        forge(how, **changed)
        assert said() == found, (how, changed)
        assert not path.is_symlink() and json.loads(path.read_text())["found"] == kept["found"], (how, changed)


def test_a_listing_kept_whole_is_used_only_while_nothing_it_was_made_from_changed(script_runner, workspace, bindir,
                                                                                 nexus_home, monkeypatch):
    make_tool(bindir, "have")
    write_skill(workspace, "alpha", meta={"tool": "have"})
    write_skill(workspace, "beta", meta={"tool": "later-bin"})
    write_skill(workspace, "gamma", meta={"tool": "have", "requires": {"env": ["GAMMA_TOKEN"]}})
    mine = {"alpha", "beta", "gamma"}

    def both():
        found = listed(script_runner)
        counts = json.loads(script_runner.run(["nexus", "status", "--json"]).stdout)
        return {name: (r["status"], r["description"], r.get("verified")) for name, r in found.items()
                if name in mine or name == "delta"}, counts

    first = both()
    assert {name: status_ for name, (status_, _, _) in first[0].items()} == {
        "alpha": "ready", "beta": "not-installed", "gamma": "needs-setup"}
    path = nexus_home / "state/nexus/skills/listing-cache"
    time.sleep(2.1)  # a state.json made by the first listing is trusted once it is two seconds old
    both()
    assert both() == first and path.exists()
    head, _, kept = path.read_bytes().partition(b"\n")
    assert json.loads(kept) == json.loads(script_runner.run(["nexus", "skills", "list", "--json"]).stdout)

    forged = json.loads(head)
    forged["summary"]["ready"] = 999
    path.write_bytes(json.dumps(forged).encode() + b"\n" + kept)
    os.chmod(path, 0o600)
    assert json.loads(script_runner.run(["nexus", "status", "--json"]).stdout)["ready"] == 999  # it is what is used
    os.chmod(path, 0o640)  # not as nexus writes it: not used, and written again
    assert both() == first and stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_bytes(head + b"\n" + kept.replace(b'"alpha"', b'"omega"'))  # not what was kept: its CRC differs
    os.chmod(path, 0o600)
    assert both() == first

    make_tool(bindir, "later-bin")  # a binary installed
    assert both()[0]["beta"][0] == "ready"
    monkeypatch.setenv("GAMMA_TOKEN", "t")  # an env var
    assert both()[0]["gamma"][0] == "ready"
    write_skill(workspace, "alpha", description="Edited.", meta={"tool": "have"})  # an edit
    assert both()[0]["alpha"][1] == "Edited."
    write_skill(workspace, "delta", meta={"tool": "have"})  # a new skill
    assert "delta" in both()[0]
    shutil.rmtree(workspace / "delta")  # a skill removed
    now = both()
    assert "delta" not in now[0] and now[1]["ready"] == first[1]["ready"] + 2
    write_config(nexus_home, "[skills.entries.alpha]\nenabled = false\n")  # the config
    assert both()[0]["alpha"][0] == "disabled"
    write_config(nexus_home, "")
    time.sleep(2.1)
    both()
    state = nexus_home / "state/nexus/skills/alpha/state.json"  # the state, as a run records it
    recorded = json.loads(state.read_text())
    assert script_runner.run(["nexus", "skill", "run", "alpha"]).returncode == 0
    assert json.loads(state.read_text()) != recorded and both()[0]["alpha"][2] is True


def test_a_few_skills_edited_put_their_records_in_place_in_the_listing_kept_whole(script_runner, workspace, bindir,
                                                                                    nexus_home):
    make_tool(bindir, "have")
    for name in ("alpha", "beta", "gamma", "delta", "omega"):
        write_skill(workspace, name, meta={"tool": "have"})
    write_skill(workspace, "writer", meta={"tool": "have", "sandbox": {"write": ["~/out"]}})  # made anew each time
    skills = nexus_home / "state/nexus/skills"
    other = "win32" if sys.platform != "win32" else "linux"

    def listing():
        found = script_runner.run(["nexus", "skills", "list", "--json"])
        counts = script_runner.run(["nexus", "status", "--json"])
        assert found.returncode == counts.returncode == 0, found.stderr + counts.stderr
        return found.stdout, {k: v for k, v in json.loads(counts.stdout).items() if k != "sandbox"}

    def truth():
        (skills / "listing-cache").unlink()
        (skills / "status-cache.json").unlink()
        return listing()

    listing()
    time.sleep(2.1)  # the state.json files the first listing made are trusted from now on
    listing()
    for edits in ([("alpha", {"description": "Longer than it was, by a good many words."})],
                  [("beta", {"meta": {"tool": "not-here"}}), ("delta", {"description": "Short."})],  # not installed
                  [("gamma", {"meta": {"tool": "have", "os": [other]}})],  # no longer shown: listed as a whole
                  [("writer", {"description": "Made anew."})]):  # a record made anew each time: as a whole
        for name, how in edits:
            write_skill(workspace, name, **{"meta": {"tool": "have"}, **how})
        (skills / "status-cache.json").write_text("kept as it is where the listing is updated in place")
        edited = listing()
        if "gamma" not in json.dumps(edits) and "writer" not in json.dumps(edits):
            assert (skills / "status-cache.json").read_text().startswith("kept as it is")  # in place
        assert edited == truth(), edits
        time.sleep(2.1)
        listing()
    assert json.loads(edited[0])[0]["name"] == "alpha" and "Longer than" in edited[0]
    assert edited[1]["notInstalled"] >= 1
