"""Install specs (spec 2.3): the command each one stands for, best fit for this platform first, and
running one: package managers as an argument vector, `shell` scripts with /bin/sh -c, and `download`
fetched, checked against its sha256 and only then placed in the nexus bin folder.
"""

import os
import sys

# kind -> the fields naming what to install (any one will do), and the program that installs it
NEEDS = {
    "brew": (("formula",), ["brew", "install"]),
    "node": (("package",), ["npm", "install", "-g"]),
    "go": (("package",), ["go", "install"]),
    "uv": (("package", "module"), ["uv", "tool", "install"]),
    "shell": (("script",), None),
    "download": (("url",), None),  # OpenClaw's kind; `sha256` says what the file must hash to
}
KINDS = tuple(NEEDS)


def _known(spec):
    kind = spec.get("kind")
    return NEEDS[kind] if isinstance(kind, str) and kind in NEEDS else ((), None)


def argv(spec):
    """The argument vector an install spec runs, or None (a download, or nothing to run)."""
    fields, program = _known(spec)
    target = next((spec[f] for f in fields if spec.get(f)), None)
    if not isinstance(target, str):
        return None
    if spec["kind"] == "shell":
        return ["/bin/sh", "-c", target]
    # A package that starts with '-' would be read as an option of the package manager.
    return program + [target] if program and not target.startswith("-") else None


def command(spec):
    """The shell command an install spec stands for, or None when it names nothing to run."""
    if spec.get("kind") == "download":
        return f"download {spec['url']}" if spec.get("url") else None
    vector = argv(spec)
    if vector is None:
        return None
    return vector[2] if spec.get("kind") == "shell" else " ".join(vector)


def fits(spec, platform):
    """False when the spec's own `os` (OpenClaw writes one on downloads) leaves this platform out."""
    from .status import os_fits

    return os_fits(spec.get("os"), platform)


def ordered(specs, platform=None):
    """The specs for this platform, best fit first: on Linux, brew comes last."""
    platform = platform or sys.platform
    specs = [s for s in specs if fits(s, platform)]
    if platform == "darwin":
        return specs
    return sorted(specs, key=lambda s: s.get("kind") == "brew")


def hints(entry, platform=None):
    """Human lines: the command of each install spec, best fit first."""
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
    here = [s for s in runnable if not _known(s)[1] or which(_known(s)[1][0])]
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
