"""The nexus console scripts: one module per tool, each with main(argv=None) -> int."""
