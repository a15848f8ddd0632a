"""Install specs (spec 2.3): the command each one stands for, best fit for this platform first."""

import sys

# kind -> the fields naming what to install (any one will do), and the command it stands for
NEEDS = {
    "brew": (("formula",), "brew install {}"),
    "node": (("package",), "npm install -g {}"),
    "go": (("package",), "go install {}"),
    "uv": (("package", "module"), "uv tool install {}"),
    "shell": (("script",), "{}"),
    "download": (("url",), "download {}"),  # OpenClaw's kind; `sha256` says what the file must hash to
}
KINDS = tuple(NEEDS)


def command(spec):
    """The shell command an install spec stands for, or None when it names nothing to run."""
    kind = spec.get("kind")
    fields, template = NEEDS.get(kind, ((), "")) if isinstance(kind, str) else ((), "")
    target = next((spec[f] for f in fields if spec.get(f)), None)
    return template.format(target) if target else None


def fits(spec, platform):
    """False when the spec's own `os` (OpenClaw writes one on downloads) leaves this platform out."""
    from .schema import string_list
    from .status import OS_ALIASES

    wanted = [OS_ALIASES.get(o.lower(), o.lower()) for o in string_list(spec.get("os"))]
    return not wanted or platform in wanted


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
