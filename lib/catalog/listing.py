"""Every skill with its status, or one skill's entry: the manifest kept fresh, read with state and config."""

from .. import config as configlib
from ..state import skill_state
from . import capabilities, manifest as manifestlib, status


def current_manifest(config, warn):
    return manifestlib.current(configlib.sources(config), on_diagnostic=warn)


def entry(config, name, warn):
    """The manifest entry of one skill; rescans only when a source or that skill changed."""
    return manifestlib.entry(configlib.sources(config), name, warn)


def evaluate_all(manifest, config, warn):
    """Manifest entries merged with {'status', 'verified', 'missing'}, then the invalid skills; the
    requirements of each (capabilities, other skills) settled over the whole catalogue."""
    checker = status.Checker(config)
    records = []
    for skill in manifest["skills"].values():
        records.append({**skill, **checker.evaluate(skill, skill_state.of(skill, warn))})
    records.extend(manifest.get("invalid", []))
    return capabilities.resolve(records)


def records(config, warn):
    """Every skill with its status, for the commands that show them all."""
    return evaluate_all(current_manifest(config, warn), config, warn)


def ready(config, warn):
    """The ready skills, `priority: high` first, then by name: what agents are shown."""
    found = [r for r in records(config, warn) if r["status"] == "ready"]
    return sorted(found, key=lambda r: (r.get("priority") != "high", r["name"]))


STATUS_KEYS = {"ready": "ready", "needs-setup": "needsSetup", "not-installed": "notInstalled",
               "disabled": "disabled", "invalid": "invalid", "unsupported": "unsupported"}


def summary(found):
    """How many skills have each status: {"ready": N, "needsSetup": N, ...}."""
    counts = dict.fromkeys(STATUS_KEYS.values(), 0)
    for record in found:
        counts[STATUS_KEYS[record["status"]]] += 1
    return counts
