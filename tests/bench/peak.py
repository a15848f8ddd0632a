"""Run the command in argv and print its peak resident memory in KB, as wait4 reports it.

Run it with `python -I -S`: a child reports at least the memory of the parent it was started from,
so the parent that reads the figure must be small.
"""

import os
import sys

argv = sys.argv[1:]
quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=quiet)
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
