"""The nexus console scripts: one module per tool, each with main(argv=None) -> int. Their scripts
(tools/bin/) turn the garbage collector off while a command loads: see nexus.cli.command.call."""
