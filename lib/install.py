"""Install specs (spec 2.3): the command each one stands for, best fit for this platform first."""

import sys

KINDS = ("brew", "node", "go", "uv", "shell", "download")


def command(spec):
    """The shell command an install spec stands for, or None when it names nothing to run."""
    kind = spec.get("kind")
    if kind == "brew" and spec.get("formula"):
        return f"brew install {spec['formula']}"
    if kind == "node" and spec.get("package"):
        return f"npm install -g {spec['package']}"
    if kind == "go" and spec.get("package"):
        return f"go install {spec['package']}"
    if kind == "uv" and (spec.get("package") or spec.get("module")):
        return f"uv tool install {spec.get('package') or spec['module']}"
    if kind == "shell" and spec.get("script"):
        return spec["script"]
    if kind == "download" and spec.get("url"):
        return f"download {spec['url']}"
    return None


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
