"""File I/O that survives crashes and concurrent writers: private dirs, atomic JSON, locks, appends.

Everything nexus writes for itself is private to the user: files 0600, folders 0700, and an existing
one with looser permissions is tightened when nexus writes it. An error names the path it concerns.
"""

import fcntl
import _thread
import os

from . import fastjson, paths
from .errors import BadInput, NexusError


def private_dirs(path, top):
    """Create `path` and every folder below `top` down to it with mode 0700; tighten those that exist."""
    chain = []
    while path != top and len(path) > len(top):
        chain.append(path)
        path = os.path.dirname(path)
    os.makedirs(top, mode=0o700, exist_ok=True)
    for folder in reversed(chain):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            _tighten(folder, os.stat)


def _tighten(target, stat, chmod=os.chmod):
    """Take group and other permissions away from a file or folder of ours (a stat and a chmod, or an
    fstat and an fchmod); quiet where that cannot be done, as on a read-only file system."""
    try:
        info = stat(target)
        if info.st_mode & 0o077 and info.st_uid == os.getuid():
            chmod(target, info.st_mode & 0o700)
    except OSError:
        pass


def inside(path, top):
    """`path`, all its symlinks followed, when that lies in `top`; NexusError naming where it leads otherwise:
    a project's files are written only inside the project, whatever a link in it points at."""
    real = os.path.realpath(path)
    if not paths.contains(top, real):
        raise NexusError(f"'{path}' leads outside {top} (to {real}): nexus does not write there")
    return real


def named(error, path):
    """`error` with the path it concerns: a failed write (a full disk) names none by itself."""
    if isinstance(error, OSError) and not error.filename:
        return OSError(error.errno, error.strerror, path)
    return error


def read_bytes(path):
    """The bytes of the file at `path`, None when there is none; BadInput when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise BadInput(f"cannot read '{path}': {e.strerror}") from None


def read_own(path):
    """The bytes of a file nexus wrote for itself (a cache), None when there is none, or when it is not what nexus
    writes: a link, not a regular file, another user's, or one that others may write. Such a file is input like
    any other: a command ignores it and writes its own again, never trusts it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)  # NONBLOCK: a FIFO never hangs
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if info.st_mode & 0o170000 != 0o100000 or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            return None
        try:
            return f.read()
        except OSError:
            return None


def read_json(path):
    """The parsed JSON document at `path`, None when there is no file."""
    data = read_bytes(path)
    if data is None:
        return None
    try:
        return fastjson.loads(data)
    except ValueError as e:  # UnicodeDecodeError is one too
        raise BadInput(f"'{path}' is not valid JSON: {e}") from None


def write_atomic(path, data, mode=0o600):
    """Replace `path` with `data` (bytes) so that readers only ever see the old or the new file.

    The rename is atomic against a crash or kill of this process; we do not fsync, so a
    power loss may lose the last update but never leaves a torn file on a journalling FS.
    """
    tmp = f"{path}.{os.getpid()}.{_thread.get_ident()}.tmp"  # threads of one process (nexus-mcp's) too
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        os.fchmod(fd, mode)  # the mode asked for, whatever the umask
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):  # named after the file asked for: the temporary one is ours, not the user's
            raise OSError(e.errno, e.strerror, path) from None
        raise


def encode(text):
    """UTF-8, with a byte that was not UTF-8 (a surrogate escape, as Python reads such a byte from
    argv) written as the JSON escape \\udcXX: the line stays valid JSON and reads back to the same
    string, from which os.fsencode() gives the original bytes."""
    return text.encode("utf-8", "backslashreplace")


def write_json(path, obj, indent=None):
    """Compact JSON, or indented for files people read (the json package's pure-Python encoder)."""
    if indent is None:
        text = fastjson.dumps(obj)
    else:
        import json  # the pure-Python encoder, and `re` with it: only for files people read

        text = json.dumps(obj, ensure_ascii=False, indent=indent)
    write_atomic(path, encode(text + "\n"))


class Lock:
    """An exclusive flock on a lock file, held for the `with` block."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def __enter__(self):
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            raise named(e, self.path) from None
        _tighten(self.fd, os.fstat, os.fchmod)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)  # closing releases the lock
        self.fd = None


class Locked:
    """`with Locked(path, read) as doc:` holds the lock of the JSON document at `path`, reads it with
    `read()`, and writes it back atomically when the block changed it. Missing folders from `top`
    (default: the document's own folder) down are made private."""

    def __init__(self, path, read, top=None):
        self.path, self.read = path, read
        self.top = top or os.path.dirname(path)

    def __enter__(self):
        folder = os.path.dirname(self.path)
        private_dirs(folder, self.top)
        self._flock = Lock(os.path.join(folder, "." + os.path.basename(self.path).lstrip(".") + ".lock"))
        self._flock.__enter__()
        try:
            self.doc = self.read()
        except BaseException:
            self._flock.__exit__(None, None, None)
            raise
        self._before = repr(self.doc)
        return self.doc

    def __exit__(self, exc_type, exc, tb):
        try:
            if repr(self.doc) != self._before:
                write_json(self.path, self.doc, indent=2)
        finally:
            self._flock.__exit__(None, None, None)


def append(path, data):
    """Append a line (bytes ending in a newline) with O_APPEND; returns the file's size afterwards.

    A file whose last line was torn (a crash or a full disk in the middle of a write) gets the newline
    it lacks first, so the torn line cannot swallow this one. Call it under the file's lock.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError as e:
        raise named(e, path) from None
    try:
        info = os.fstat(fd)
        if info.st_mode & 0o077:
            _tighten(fd, os.fstat, os.fchmod)
        if info.st_size and os.pread(fd, 1, info.st_size - 1) != b"\n":
            data = b"\n" + data
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        return os.fstat(fd).st_size
    except OSError as e:
        raise named(e, path) from None
    finally:
        os.close(fd)
