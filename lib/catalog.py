"""Every skill with its status: the fresh manifest, each entry's state, and the static checks."""

from . import config as configlib, manifest as manifestlib, state as statelib, status


def current_manifest(config, warn):
    return manifestlib.current(configlib.sources(config), on_diagnostic=warn)


def entry(config, name, warn):
    """The manifest entry of one skill; rescans only when a source or that skill changed."""
    manifest = manifestlib.current(configlib.sources(config), on_diagnostic=warn, name=name)
    return manifestlib.find(manifest, name)


def evaluate_all(manifest, config, warn):
    """Manifest entries merged with {'status', 'verified', 'missing'}, then the invalid skills."""
    checker = status.Checker(config)
    records = []
    for entry in manifest["skills"].values():
        records.append({**entry, **checker.evaluate(entry, statelib.of(entry, warn))})
    records.extend(manifest.get("invalid", []))
    return records


def load(warn):
    """(config, records) for the commands that show every skill."""
    config = configlib.load()
    return config, evaluate_all(current_manifest(config, warn), config, warn)
