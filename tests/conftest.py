"""Every test runs the real console scripts against a temporary NEXUS_HOME; nothing touches the real home."""

import os

import pytest


@pytest.fixture(autouse=True)
def nexus_home(tmp_path, monkeypatch):
    home = tmp_path / "nexus"
    monkeypatch.setenv("NEXUS_HOME", str(home))
    monkeypatch.setenv("MANAGED_SKILLS_DIR", str(tmp_path / "managed"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("NEXUS_CONFIG", "NEXUS_SESSION_ID", "NEXUS_DEBUG", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def workspace(nexus_home):
    path = nexus_home / "skills"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def bindir(tmp_path, monkeypatch):
    """A folder of stand-in executables, first on PATH."""
    path = tmp_path / "bin"
    path.mkdir()
    monkeypatch.setenv("PATH", f"{path}{os.pathsep}{os.environ['PATH']}")
    return path


# `make test` runs the suite in-process and again in subprocess mode (-m 'not once'). The second run
# adds something only where script_runner launches a console script the default way: a test that starts
# its processes itself, or pins script_runner to one mode, runs the same both times, so it runs once.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        if "script_runner" not in item.fixturenames or item.get_closest_marker("script_launch_mode"):
            item.add_marker(pytest.mark.once)


# Skips are printed at the end (`make test` passes -rs). In CI (CI set) every test must run: .ci/run
# installs what the tests need, so a skip there is a failure unless the test carries
# `@pytest.mark.may_skip_in_ci("why it cannot run there")`.
def _skip_fails_in_ci(item, report):
    if not os.environ.get("CI") or not report.skipped or hasattr(report, "wasxfail"):
        return
    if item is not None and item.get_closest_marker("may_skip_in_ci"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped in CI, where every test must run (.ci/run installs what the tests need): {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _skip_fails_in_ci(item, outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _skip_fails_in_ci(None, outcome.get_result())  # a whole module skipped (importorskip)


@pytest.fixture(scope="session")
def nobody():
    """nexus's console scripts runnable as the user nobody, for what root cannot see: each a launcher in
    `nobody.bin`, run with `nobody.run(argv, env)`. The installed package and its dependencies are copied
    to a world-readable folder and started by a Python nobody may run, since the venv's interpreter may
    live where nobody cannot enter (pyenv under /root)."""
    import importlib.util
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from helpers import console_scripts

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("dropping to nobody needs root and setpriv (CI runs as root)")
    as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    version = "import sys; print(sys.version_info[:2])"
    candidates = [os.path.realpath(sys.executable), f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}"]
    python = next((p for p in candidates if os.path.exists(p) and subprocess.run(
        [*as_nobody, p, "-c", version], capture_output=True, text=True).stdout.strip() == str(sys.version_info[:2])),
        None)
    if python is None:
        pytest.skip(f"no Python {sys.version_info[0]}.{sys.version_info[1]} that nobody may run: {candidates}")
    root = Path(tempfile.mkdtemp(prefix="nexus-as-nobody-"))
    lib, bindir = root / "lib", root / "bin"
    for name in ("nexus", "docopt", "yaml", "_yaml", "jsonlines", "attr", "attrs", "tomli_w"):
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        origin = Path(spec.origin)
        if spec.submodule_search_locations:
            shutil.copytree(origin.parent, lib / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            lib.mkdir(exist_ok=True)
            shutil.copy2(origin, lib / origin.name)
    bindir.mkdir()
    checkout = Path(__file__).resolve().parent.parent
    for name in console_scripts(checkout):  # as `make install` writes them: its script, the copy's folder first
        script = (checkout / "tools" / "bin" / name).read_text().partition("\n")[2]
        (bindir / name).write_text(f"#!{python}\nimport sys\nsys.path.insert(0, {str(lib)!r})\n{script}")
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() or path.parent == bindir else 0o644)

    class Nobody:
        bin, prefix = bindir, as_nobody  # the launchers, and the argv that runs a program as nobody

        @staticmethod
        def run(argv, env, **how):
            """argv (a console script first) as nobody; `how`: subprocess.run's cwd, stdin, ..."""
            return subprocess.run([*as_nobody, str(bindir / argv[0]), *argv[1:]], env=env, capture_output=True,
                                  text=True, **how)

    yield Nobody
    shutil.rmtree(root)
