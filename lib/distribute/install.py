"""Running an install spec: a package manager as an argument vector, a `shell` script with /bin/sh -c,
or a `download` fetched, checked against its sha256 and only then placed in $NEXUS_HOME/bin.
"""

import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request

from .. import fileio, paths
from ..errors import NexusError
from ..gateway import process
from ..skill.installspec import argv, command, describe, download_name, installer, ordered
from ..style import Progress

MAX_DOWNLOAD = 512 * 1024 * 1024


def choose(specs, spec_id=None, which=None, platform=None):
    """The spec to run: the one with `spec_id`, else the best fit whose package manager is installed."""
    if spec_id is not None:
        found = [s for s in specs if s.get("id") == spec_id]
        if not found or not command(found[0]):
            ids = ", ".join(str(s.get("id")) for s in specs if command(s)) or "none"
            raise NexusError(f"no install spec with id '{spec_id}' to run (ids: {ids})")
        return found[0]
    runnable = [s for s in ordered(specs, platform) if command(s)]
    if not runnable:
        raise NexusError("no install spec to run: the skill's metadata.nexus.install names none")
    which = which or shutil.which
    here = [s for s in runnable if not installer(s)[1] or which(installer(s)[1][0])]
    return (here or runnable)[0]


def run(spec):
    """Run a spec with its output going to stderr (stdout stays for data); the path a download was
    placed at, else None. NexusError with the exit code when it fails."""
    if spec.get("kind") == "download":
        return download(spec)
    vector = argv(spec)
    try:
        done = process.run(vector, stdout=2)
    except FileNotFoundError:
        raise NexusError(f"cannot run '{vector[0]}': not found on PATH") from None
    if done.exit != 0:
        how = f"was killed by signal {done.exit - 128}" if done.exit > 128 else f"exited with {done.exit}"
        raise NexusError(f"install failed: '{describe(spec)}' {how}")
    return None


def download(spec):
    """Fetch a download spec's url, check its sha256, and only then place it in the bin folder (mode 0755)."""
    url, expected, name = str(spec.get("url") or ""), str(spec.get("sha256") or "").lower(), download_name(spec)
    if not url.startswith(("https://", "http://", "file://")):
        raise NexusError(f"download url '{url}': only https, http and file URLs are fetched")
    if len(expected) != 64 or not all(c in "0123456789abcdef" for c in expected):
        raise NexusError(f"download of {url} has no valid sha256: nexus never installs an unchecked file")
    if name is None:
        bins = spec.get("bins")
        if isinstance(bins, list) and bins:
            raise NexusError(f"download of {url}: bins[0] {bins[0]!r} is not a file name")
        raise NexusError(f"download of {url}: cannot tell the file's name; give it in 'bins'")
    fileio.private_dirs(paths.cache_dir(), paths.home())
    part = tempfile.NamedTemporaryFile(dir=paths.cache_dir(), prefix="download.", delete=False)
    try:
        with part:
            actual = _fetch(url, part)
        if actual != expected:
            raise NexusError(f"checksum mismatch for {url}: expected {expected}, got {actual}; nothing was installed")
        fileio.private_dirs(paths.bin_dir(), paths.home())
        os.chmod(part.name, 0o755)
        target = os.path.join(paths.bin_dir(), name)
        shutil.move(part.name, target)
    except BaseException:
        if os.path.exists(part.name):
            os.unlink(part.name)
        raise
    return target


def _fetch(url, out):
    """Copy the url into `out`; its SHA-256."""
    digest, size = hashlib.sha256(), 0
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            length = response.headers.get("Content-Length", "")
            name = url.rstrip("/").rsplit("/", 1)[-1]
            progress = Progress(f"downloading {name}", int(length) if length.isdigit() else None, now=True, size=True)
            while chunk := response.read(1 << 16):
                progress.step(len(chunk))  # on a terminal: how much came, of how much
                size += len(chunk)
                if size > MAX_DOWNLOAD:
                    raise NexusError(f"download of {url} is over {MAX_DOWNLOAD >> 20} MB: stopped")
                digest.update(chunk)
                out.write(chunk)
            progress.close()
    except (urllib.error.URLError, OSError) as e:
        raise NexusError(f"cannot download {url}: {getattr(e, 'reason', None) or e}") from None
    return digest.hexdigest()
