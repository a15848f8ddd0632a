"""Work shared out between processes: a function over many items, each share in a forked process, for
work that is Python's own (parsing) and so uses one core per process, never more.

The parent does the first share itself; each other share is counted in a forked child, which sends its
results back pickled through a pipe and exits without running any of the parent's code again. A child
that fails leaves its share to the parent. Forking is only for a process with a single thread: a
thread holding a lock at the fork would leave the child stuck.
"""

import os
import sys

SHARE_BYTES = 16 * 1024 * 1024  # of files read in one process: below it, a second process costs more than it saves


def mapped(function, items, least=1):
    """[function(item) for item in items], in their order: in as many processes as there are CPUs, when
    there are at least `least` items for each and no other thread runs; else here, one after another."""
    items = list(items)
    workers = min(os.cpu_count() or 1, len(items) // max(least, 1))
    threading = sys.modules.get("threading")
    if workers <= 1 or (threading is not None and threading.active_count() > 1):
        return [function(item) for item in items]
    size = -(-len(items) // workers)
    shares = [items[n:n + size] for n in range(0, len(items), size)]
    children = []
    for share in shares[1:]:
        try:
            children.append((_fork(function, share), share))
        except OSError:  # no process to spare: this one does that share too
            children.append((None, share))
    results = [function(item) for item in shares[0]]
    for child, share in children:
        results += _gathered(child) or [function(item) for item in share]
    return results


def _fork(function, share):
    """(pid, the read end of its pipe) of a child that sends [function(item) for item in share] back."""
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        raise
    if pid == 0:  # the child: never back into the caller's code, never flushing the parent's buffers
        try:
            import pickle  # only in a forked child, to send its results back

            os.close(read)
            results = [function(item) for item in share]
            with os.fdopen(write, "wb") as out:
                pickle.dump(results, out, pickle.HIGHEST_PROTOCOL)
        finally:
            os._exit(0)
    os.close(write)
    return pid, read


def _gathered(child):
    """What a child sent, or None when it failed (or never ran)."""
    if child is None:
        return None
    import pickle  # only when children were forked

    pid, pipe = child
    try:
        with os.fdopen(pipe, "rb") as found:
            return pickle.load(found)
    except Exception:  # noqa: BLE001 - whatever the child left unsaid, its share is done again here
        return None
    finally:
        os.waitpid(pid, 0)


def dealt(paths):
    """Files dealt out into a share per process their size is worth (one per SHARE_BYTES, one per CPU at
    most), the largest first and in turn, each share in the order given: the items of mapped()."""
    sizes = [size(path) for path in paths]
    workers = min(os.cpu_count() or 1, len(paths), 1 + sum(sizes) // SHARE_BYTES)
    if workers <= 1:
        return [list(paths)] if paths else []
    shares = [[] for _ in range(workers)]
    for turn, n in enumerate(sorted(range(len(paths)), key=lambda n: -sizes[n])):
        shares[turn % workers].append(n)
    return [[paths[n] for n in sorted(share)] for share in shares]


def size(path):
    """The size of a file, 0 when it cannot be read."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
