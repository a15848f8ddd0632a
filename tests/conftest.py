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
