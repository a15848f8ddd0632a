"""Install specs (metadata.nexus.install): the command each one stands for, best fit for this platform first.

Nothing here runs anything: running a spec is nexus.distribute.install's job.
"""

import os
import sys

from .. import paths
from .entry import os_fits

# kind -> the fields naming what to install (any one will do, the first found is used), and the program
# that installs it; the fields OpenClaw writes are read too (go's module, brew's cask)
NEEDS = {
    "brew": (("formula", "cask"), ["brew", "install"]),
    "node": (("package",), ["npm", "install", "-g"]),
    "go": (("module", "package"), ["go", "install"]),
    "uv": (("package", "module"), ["uv", "tool", "install"]),
    "shell": (("script",), None),
    "download": (("url",), None),  # OpenClaw's kind; `sha256` says what the file must hash to
}
KINDS = tuple(NEEDS)


def installer(spec):
    """(the fields naming what to install, the installer's argument vector) of a spec's kind."""
    kind = spec.get("kind")
    return NEEDS[kind] if isinstance(kind, str) and kind in NEEDS else ((), None)


def argv(spec):
    """The argument vector an install spec runs, or None (a download, or nothing to run)."""
    fields, program = installer(spec)
    field = next((f for f in fields if spec.get(f)), None)
    target = spec.get(field) if field else None
    if not isinstance(target, str):
        return None
    if spec["kind"] == "shell":
        return ["/bin/sh", "-c", as_user(target)]
    if field == "cask":
        program = program + ["--cask"]
    # A package that starts with '-' would be read as an option of the package manager.
    return program + [target] if program and not target.startswith("-") else None


def as_user(script):
    """A shell spec's script as this user runs it: root runs `sudo CMD` as CMD (a root shell often has no
    sudo, and needs none)."""
    if os.geteuid() == 0 and script.startswith("sudo ") and not script.startswith("sudo -"):
        return script[5:].lstrip()
    return script


def command(spec):
    """The shell command an install spec stands for, or None when it names nothing to run."""
    if spec.get("kind") == "download":
        return f"download {spec['url']}" if spec.get("url") else None
    vector = argv(spec)
    if vector is None:
        return None
    return vector[2] if spec.get("kind") == "shell" else " ".join(vector)


def ordered(specs, platform=None):
    """The specs for this platform, best fit first: on Linux, brew comes last."""
    platform = platform or sys.platform
    specs = [s for s in specs if os_fits(s.get("os"), platform)]  # OpenClaw writes an `os` on downloads
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


def download_name(spec):
    """The file name a download is placed under: its first bin, else the URL's last part."""
    bins = spec.get("bins")
    name = bins[0] if isinstance(bins, list) and bins else str(spec.get("url") or "").rstrip("/").rsplit("/", 1)[-1]
    ok = isinstance(name, str) and name and name.isprintable() and "/" not in name and not name.startswith((".", "-"))
    return name if ok else None


def describe(spec):
    """The exact command a spec runs, as the user should see it before saying yes: its argument vector
    (a shell spec's is /bin/sh -c SCRIPT), each word quoted as a shell needs it, control characters visible."""
    from ..style import shell_line, shell_word  # shown before an install: the gateway's refusals need no style

    if spec.get("kind") == "download":
        target = os.path.join(paths.bin_dir(), download_name(spec) or "?")
        return (f"download {shell_word(str(spec.get('url')))} to {shell_word(target)} "
                f"(sha256 {shell_word(str(spec.get('sha256') or 'missing'))})")
    return shell_line(argv(spec))
