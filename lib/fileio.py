"""File I/O that survives crashes and concurrent writers: private dirs, atomic JSON, locks, appends."""

import fcntl
import os

from . import fastjson
from .errors import BadInput


def private_dirs(path, top):
    """Create `path` and every folder between `top` and it with mode 0700."""
    missing = []
    while path != top and not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    os.makedirs(top, mode=0o700, exist_ok=True)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass


def read_json(path):
    """The parsed JSON document at `path`, None when there is no file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise BadInput(f"cannot read '{path}': {e.strerror}") from None
    try:
        return fastjson.loads(data)
    except ValueError as e:  # UnicodeDecodeError is one too
        raise BadInput(f"'{path}' is not valid JSON: {e}") from None


def write_atomic(path, data, mode=0o600):
    """Replace `path` with `data` (bytes) so that readers only ever see the old or the new file.

    The rename is atomic against a crash or kill of this process; we do not fsync, so a
    power loss may lose the last update but never leaves a torn file on a journalling FS.
    """
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_json(path, obj, indent=None):
    """Compact JSON, or indented for files people read (the json package's pure-Python encoder)."""
    if indent is None:
        text = fastjson.dumps(obj)
    else:
        import json

        text = json.dumps(obj, ensure_ascii=False, indent=indent)
    write_atomic(path, (text + "\n").encode())


class Lock:
    """An exclusive flock on a lock file, held for the `with` block."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
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
    """Append bytes with O_APPEND in one write; returns the file's size afterwards."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        return os.fstat(fd).st_size
    finally:
        os.close(fd)
