"""The nexus console scripts: one module per tool, each with main(argv=None) -> int.

Every console script imports this package first, so it is where the cyclic garbage collector is turned
off while a command's modules load: they are thousands of objects that live until exit, which it would
traverse again and again for nothing. nexus.cli.command.call turns it back on once the command's
function is loaded, after gc.freeze() has set those objects aside, so that it never traverses them
again, not even at exit. Together that is about a sixth of what `nexus skill run` itself costs
(tests/bench/bench_run.py).
"""

import gc

gc.disable()
