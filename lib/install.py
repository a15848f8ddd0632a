"""Install specs (spec 2.3): the command each one stands for, best fit for this platform first, and
running one: package managers as an argument vector, `shell` scripts with /bin/sh -c, and `download`
fetched, checked against its sha256 and only then placed in the nexus bin folder.
"""

import os
import sys

KINDS = ("brew", "node", "go", "uv", "shell", "download")
PROGRAMS = {"brew": ["brew", "install"], "node": ["npm", "install", "-g"], "go": ["go", "install"],
            "uv": ["uv", "tool", "install"]}


def _package(spec):
    kind = spec.get("kind")
    value = spec.get("formula") if kind == "brew" else spec.get("package") or (kind == "uv" and spec.get("module"))
    # A value that starts with '-' would be read as an option of the package manager.
    return value if isinstance(value, str) and value and not value.startswith("-") else None


def argv(spec):
    """The argument vector an install spec runs, or None (a download, or nothing to run)."""
    kind = spec.get("kind")
    if kind in PROGRAMS and _package(spec):
        return PROGRAMS[kind] + [_package(spec)]
    if kind == "shell" and isinstance(spec.get("script"), str) and spec["script"]:
        return ["/bin/sh", "-c", spec["script"]]
    return None


def command(spec):
    """The shell command an install spec stands for, or None when it names nothing to run."""
    if spec.get("kind") == "download":
        return f"download {spec['url']}" if spec.get("url") else None
    vector = argv(spec)
    if vector is None:
        return None
    return vector[2] if spec.get("kind") == "shell" else " ".join(vector)


def ordered(specs, platform=None):
    """Specs that fit this platform first: on Linux, brew comes last."""
    platform = platform or sys.platform
    if platform == "darwin":
        return list(specs)
    return sorted(specs, key=lambda s: s.get("kind") == "brew")


def hints(entry, platform=None):
    """Human lines: 'label: command' for each install spec, best fit first."""
    platform = platform or sys.platform
    lines = []
    for spec in ordered(entry.get("install", []), platform):
        cmd = command(spec)
        if cmd is None:
            continue
        note = " (needs Homebrew)" if spec.get("kind") == "brew" and platform != "darwin" else ""
        lines.append(f"{cmd}{note}")
    return lines


def bin_dir():
    """Where `download` places executables: $NEXUS_HOME/bin (add it to skills.binPath)."""
    from . import paths

    return os.path.join(paths.home(), "bin")


def choose(specs, spec_id=None, which=None, platform=None):
    """The spec to run: the one with `spec_id`, else the best fit whose package manager is installed."""
    from .errors import NexusError

    if spec_id is not None:
        found = [s for s in specs if s.get("id") == spec_id]
        if not found or not command(found[0]):
            ids = ", ".join(str(s.get("id")) for s in specs if command(s)) or "none"
            raise NexusError(f"no install spec with id '{spec_id}' to run (ids: {ids})")
        return found[0]
    runnable = [s for s in ordered(specs, platform) if command(s)]
    if not runnable:
        raise NexusError("no install spec to run: the skill's metadata.nexus.install names none")
    if which is None:
        from shutil import which
    here = [s for s in runnable if s.get("kind") not in PROGRAMS or which(PROGRAMS[s["kind"]][0])]
    return (here or runnable)[0]


def describe(spec):
    """The exact command a spec runs, as the user should see it before saying yes."""
    if spec.get("kind") == "download":
        target = os.path.join(bin_dir(), download_name(spec) or "?")
        return f"download {spec.get('url')} to {target} (sha256 {spec.get('sha256') or 'missing'})"
    if spec.get("kind") == "shell":
        return spec["script"]
    import shlex

    return shlex.join(argv(spec))


def run(spec):
    """Run a spec with its output streaming to stderr; NexusError with the exit code when it fails."""
    if spec.get("kind") == "download":
        return download(spec)
    import subprocess

    from .errors import NexusError

    vector = argv(spec)
    try:
        code = subprocess.run(vector, stdout=sys.stderr.fileno()).returncode  # stdout stays for data
    except FileNotFoundError:
        raise NexusError(f"cannot run '{vector[0]}': not found on PATH") from None
    if code != 0:
        how = f"was killed by signal {-code}" if code < 0 else f"exited with {code}"
        raise NexusError(f"install failed: '{describe(spec)}' {how}")
    return None


MAX_DOWNLOAD = 512 * 1024 * 1024


def download_name(spec):
    """The file name a download is placed under: its first bin, else the URL's last part."""
    bins = spec.get("bins")
    name = bins[0] if isinstance(bins, list) and bins else str(spec.get("url") or "").rstrip("/").rsplit("/", 1)[-1]
    ok = isinstance(name, str) and name and "/" not in name and not name.startswith((".", "-"))
    return name if ok else None


def download(spec):
    """Fetch a download spec's url, check its sha256, and only then place it in bin_dir() (mode 0755)."""
    import shutil
    import tempfile

    from . import fileio, paths
    from .errors import NexusError

    url, expected, name = str(spec.get("url") or ""), str(spec.get("sha256") or "").lower(), download_name(spec)
    if not url.startswith(("https://", "http://", "file://")):
        raise NexusError(f"download url '{url}': only https, http and file URLs are fetched")
    if len(expected) != 64 or not all(c in "0123456789abcdef" for c in expected):
        raise NexusError(f"download of {url} has no valid sha256: nexus never installs an unchecked file")
    if name is None:
        raise NexusError(f"download of {url}: cannot tell the file's name; give it in 'bins'")
    scratch = os.path.join(paths.state_root(), "nexus", "cache")
    fileio.private_dirs(scratch, paths.home())
    part = tempfile.NamedTemporaryFile(dir=scratch, prefix="download.", delete=False)
    try:
        with part:
            actual = _fetch(url, part)
        if actual != expected:
            raise NexusError(f"checksum mismatch for {url}: expected {expected}, got {actual}; nothing was installed")
        fileio.private_dirs(bin_dir(), paths.home())
        os.chmod(part.name, 0o755)
        target = os.path.join(bin_dir(), name)
        shutil.move(part.name, target)
    except BaseException:
        if os.path.exists(part.name):
            os.unlink(part.name)
        raise
    return target


def _fetch(url, out):
    """Copy the url into `out`; its SHA-256."""
    import hashlib
    import urllib.error
    import urllib.request

    from .errors import NexusError

    digest, size = hashlib.sha256(), 0
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            while chunk := response.read(1 << 16):
                size += len(chunk)
                if size > MAX_DOWNLOAD:
                    raise NexusError(f"download of {url} is over {MAX_DOWNLOAD >> 20} MB: stopped")
                digest.update(chunk)
                out.write(chunk)
    except (urllib.error.URLError, OSError) as e:
        raise NexusError(f"cannot download {url}: {getattr(e, 'reason', None) or e}") from None
    return digest.hexdigest()
