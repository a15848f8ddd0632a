"""Starting a program and waiting for it: the one way nexus runs anything (tools, verify commands,
installers, git).

No shell is involved unless the caller names one: a program gets its argument vector as given. It is
waited for without polling where the system allows (Linux's pidfd); a timeout ends it as timeout(1)
does: SIGTERM, then SIGKILL KILL_AFTER seconds later, sent to its process group when it has one of its own.

How a program is started (one path, `_spawn`): fork, then in the child the steps it needs (its process
group, its file descriptors, default signal dispositions, its working folder, a parent-death signal,
and `prepare`, where confinement goes), then exec. A failed step or exec is sent back over a
close-on-exec pipe and raised here as the OSError it was. Our own process never changes folder, so
threads (nexus-mcp's calls) may spawn at once. A child that needs none of the steps a fork allows is
started with posix_spawn instead, which glibc does without copying our address space: that is the
same thing, about 1 ms cheaper (tests/bench/bench_run.py), and it is what most tool skills need. In a
server (nexus-mcp), what is to die with it goes to its spawn helper instead (gateway.spawner), which takes
those steps once for all its tools, and posix_spawns each.

Each of stdin, stdout and stderr is inherited (None), DEVNULL or CAPTURE (read into memory); stderr may
also be TEE (copied to our stderr as it comes, its last bytes kept), stdout a file descriptor of ours,
and stdin bytes to feed the program. A confined program (Contained) is never handed our terminal: what
would be one is a pipe, copied from the terminal or shown on it (_Screen).
"""

import os
import select
import sys
import time

import _signal as signal  # the C module: `signal` wraps its constants in enums, at a cost of ~2 ms
import _thread  # its count of threads, without threading

DEVNULL, CAPTURE, TEE = "devnull", "capture", "tee"
KILL_AFTER = 5  # seconds between SIGTERM and SIGKILL after a timeout
TAIL = 800  # bytes kept of a TEE'd stderr
DRAIN = 1.0  # seconds spent reading what a program left in its pipes once it has exited
POLL = 0.05  # where there is no pidfd to wait on
LOOK = 0.25  # seconds between looks at whether we are back in our terminal's foreground, to read it again
_libc = None  # ctypes' handle on the C library, loaded for the first child that needs prctl
helper = None  # a server's spawn helper (gateway.spawner): it starts what is to die with the server


class Finished:
    """How a program ended. `exit` as a shell reports it: 128+N after signal N, 124 after a timeout;
    `signal` the signal that ended it, if one did."""

    def __init__(self, exit, timed_out, signal, stdout, stderr, truncated):
        self.exit, self.timed_out, self.signal, self.truncated = exit, timed_out, signal, truncated
        self.stdout, self.stderr = stdout, stderr


MASK = b"***"  # what a secret becomes in what is kept of a stream (schema.SECRET)


class _Sink:
    """A captured stream: its bytes (at most `limit`, or the last `tail`), copied to `tee_fd` if given.
    Each of `secrets` (bytes) is masked as the bytes come, before any cut: the last bytes that could begin
    one (the longest, less a byte) are held back until what follows shows whether they do, so that neither
    the limit nor the tail can cut a secret in two and keep a piece of it."""

    def __init__(self, limit=None, tail=None, tee_fd=None, secrets=(), screen=False):
        self.data, self.limit, self.tail, self.tee_fd, self.truncated = bytearray(), limit, tail, tee_fd, False
        self.secrets, self.held = [s for s in secrets if s], b""
        self.behind = max(map(len, self.secrets), default=1) - 1
        self.screen = _Screen() if screen else None  # the tee goes to a terminal, from a confined program

    def write(self, chunk):
        if self.tee_fd is not None:
            self._tee(self.screen.shown(chunk) if self.screen else chunk)
        if self.secrets:
            pending = self._masked(self.held + bytes(chunk))
            cut = max(0, len(pending) - self.behind)
            chunk, self.held = pending[:cut], pending[cut:]
        self._keep(chunk)

    def _tee(self, chunk):
        try:
            view = memoryview(chunk)
            while view:
                view = view[os.write(self.tee_fd, view):]
        except OSError:
            self.tee_fd = None  # our stderr is gone: keep draining, so the program is not blocked

    def flush(self):
        """What was held back, masked: the stream has ended."""
        if self.screen and self.tee_fd is not None:
            self._tee(self.screen.shown(b"", end=True))
        held, self.held = self.held, b""
        if held:
            self._keep(self._masked(held))

    def _masked(self, data):
        for secret in self.secrets:  # longest first
            data = data.replace(secret, MASK)
        return data

    def _keep(self, chunk):
        if self.limit is not None and len(self.data) + len(chunk) > self.limit:
            chunk, self.truncated = chunk[:max(0, self.limit - len(self.data))], True
        self.data += chunk
        if self.tail is not None and len(self.data) > self.tail:
            del self.data[:-self.tail]


class _Screen:
    """A confined program's output on its way to our terminal: shown, never obeyed. Colours (SGR) and erasing the
    line (EL: with \\r, a progress line) pass; every other escape (OSC: the clipboard, the title; DCS, APC, cursor
    moves, the queries a terminal answers on its input, as if typed) and control character is made visible, as
    style.visible shows them (\\e, \\x07, \\x9b). An escape cut between two reads waits for the next."""

    HELD = 64  # bytes: a sequence longer than this is not one that passes

    def __init__(self):
        self.held = b""

    def shown(self, chunk, end=False):
        data, self.held = self.held + chunk, b""
        if not end:
            start = data.rfind(b"\x1b", max(0, len(data) - self.HELD))
            if start >= 0 and _cut(data[start + 1:]):
                data, self.held = data[:start], data[start:]
            elif data.endswith(b"\xc2"):  # the first byte of a C1 control in UTF-8, maybe
                data, self.held = data[:-1], data[-1:]
        first, *rest = data.split(b"\x1b")
        shown = [_controls(first)]
        for piece in rest:
            kept = _kept(piece)
            shown += [b"\x1b" + piece[:kept] if kept else b"\\e", _controls(piece[kept:])]
        return b"".join(shown)


PARAMETERS = b"0123456789;:"
PRINTED = bytes(range(0x20, 0x7F)) + bytes(range(0x80, 0x100)) + b"\t\n\r\b"  # shown as they are


def _cut(sequence):
    """Whether what follows an ESC at the end of a read may be the beginning of a sequence still to come."""
    return not sequence or sequence[:1] == b"[" and not sequence[1:].lstrip(PARAMETERS)


def _kept(sequence):
    """How long the colour (SGR) or erase-in-line (EL) sequence that follows an ESC is; 0: not one of those."""
    if sequence[:1] != b"[":
        return 0
    rest = sequence[1:].lstrip(PARAMETERS)
    parameters = sequence[1:len(sequence) - len(rest)]
    if rest[:1] == b"m" or rest[:1] == b"K" and parameters in (b"", b"0", b"1", b"2"):
        return len(parameters) + 2
    return 0


def _controls(text):
    """`text` with its control characters made visible (C1 ones as UTF-8 encodes them)."""
    for byte in set(text.translate(None, PRINTED)):
        text = text.replace(bytes([byte]), b"\\x%02x" % byte)
    if b"\xc2" in text:
        for byte in range(0x80, 0xA0):
            text = text.replace(bytes([0xC2, byte]), b"\\x%02x" % byte)
    return text


class Child:
    """A started program. wait() feeds and reads its pipes and reaps it; kill() may come from another thread."""

    def __init__(self, argv, cwd=None, env=None, stdin=None, stdout=None, stderr=None, group=False, limit=None,
                 parent_death=False, prepare=None, secrets=()):
        # a program in a group of its own is one we may have to end (a timeout, a cancel): it is made the reaper
        # of what it starts, so that what leaves its group (setsid) stays where kill_escaped finds it
        self.group, self.status, self.timed_out = group, None, False
        # a program under its own init in a PID namespace (Contained) ends whole when that init ends: no hunt for
        # what left its group, which would SIGKILL the program itself before it could end on SIGTERM
        self.contained = isinstance(prepare, Contained) and prepare.namespace
        self.sinks, self.readers, self.shown = {}, {}, []  # 1 or 2 -> _Sink; our read end -> _Sink; not kept
        self.feed = memoryview(bytes(stdin)) if isinstance(stdin, (bytes, bytearray)) else None
        self.stdin_fd = self.source = None  # source: our terminal, copied to the program's stdin
        actions, theirs = [], []
        for fd, how in ((0, stdin), (1, stdout), (2, stderr)):
            # A confined program is never handed our terminal (it would read what is typed for another program
            # while in the background, change its settings, or drive it): it gets a pipe, filled from the terminal
            # while we are in its foreground, or read and shown, never obeyed. Nothing of the call holding it, its
            # settings are never changed by it (putting them back after would undo the shell's, from the background)
            ours = fd if how is None else how if isinstance(how, int) else 2 if how == TEE else None
            screen = ours is not None and isinstance(prepare, Contained) and os.isatty(ours)
            if how is None and not screen:
                continue
            if how == DEVNULL:
                actions.append((os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0))
            elif isinstance(how, int) and not screen:
                actions.append((os.POSIX_SPAWN_DUP2, how, fd))
            else:  # CAPTURE, TEE, bytes for stdin, or our terminal: a pipe
                read_end, write_end = os.pipe()
                mine, child_end = (write_end, read_end) if fd == 0 else (read_end, write_end)
                actions.append((os.POSIX_SPAWN_DUP2, child_end, fd))
                theirs.append(child_end)
                if fd == 0:
                    self.stdin_fd, self.source = mine, ours if screen else None
                elif how == TEE:
                    self.sinks[fd] = self.readers[mine] = _Sink(tail=TAIL, tee_fd=2, secrets=secrets, screen=screen)
                elif screen:  # shown, not kept
                    self.readers[mine] = _Sink(limit=0, tee_fd=ours, screen=True)
                    self.shown.append(self.readers[mine])
                else:
                    self.sinks[fd] = self.readers[mine] = _Sink(limit=limit, secrets=secrets)
        env = os.environ if env is None else env
        self.started = None  # a spawner.Started, when the server's spawn helper started it
        try:
            if parent_death and prepare is None and helper is not None:
                self.started = helper.spawn(argv, env, actions, cwd, group)  # None when the helper is gone
            if self.started is None:
                self.pid = _spawn(argv, env, actions, group, cwd, parent_death, prepare, reaper=group)
        except BaseException:
            self._close(list(self.readers) + [self.stdin_fd])
            raise
        finally:
            self._close(theirs)
        if self.started is not None:
            self.pid, self.pidfd = self.started.pid, self.started.fd  # that pipe says when it has ended
            return
        try:
            self.pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):  # not Linux, or an old kernel: wait() polls instead
            self.pidfd = None

    def kill(self, signum=signal.SIGKILL):
        """Signal the program, or its whole group when it has one; quiet when it is gone. Ending it (SIGTERM,
        SIGKILL) also kills at once what it started that left its group."""
        if self.status is not None and not self.group:
            return
        if self.started is not None:  # the helper's: it knows whether it has reaped the program yet
            self.started.kill(signum, self.group)
            return
        if self.group and signum in (signal.SIGTERM, signal.SIGKILL) and self.status is None and not self.contained:
            if signum == signal.SIGKILL:  # the group stopped first: nothing in it can leave it while we look
                try:
                    os.killpg(self.pid, signal.SIGSTOP)
                except (ProcessLookupError, PermissionError):
                    pass
            kill_escaped(self.pid)
        try:
            os.killpg(self.pid, signum) if self.group else os.kill(self.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def wait(self, timeout=None, kill_group=False):
        """Feed and read the pipes until the program exits, then what it left in them: a Finished.

        With `kill_group`, whatever the program left running in its process group is killed once it
        exits, so that nothing it started can hold the pipes (or a verification) open.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        drain_until = None
        try:
            while True:
                if self.status is None and self._reaped() and kill_group and self.group:
                    self.kill(signal.SIGKILL)
                if self.status is not None:
                    if not self.readers:
                        break
                    drain_until = drain_until or time.monotonic() + DRAIN
                if not self._step(deadline, drain_until):
                    if drain_until is not None:
                        break  # exited, and nothing more is waiting: a background process may hold the pipe
                    if deadline is not None and time.monotonic() >= deadline:
                        deadline = self._escalate()
        finally:
            self._close(list(self.readers) + [self.stdin_fd, self.pidfd])
            self.readers, self.stdin_fd, self.pidfd, self.source = {}, None, None, None
            for sink in [*self.sinks.values(), *self.shown]:
                sink.flush()
        code = os.waitstatus_to_exitcode(self.status)
        killed_by = -code if code < 0 else None
        code = 124 if self.timed_out else 128 + killed_by if killed_by else code
        out, err = self.sinks.get(1), self.sinks.get(2)
        return Finished(code, self.timed_out, killed_by, out and bytes(out.data), err and bytes(err.data),
                        any(s.truncated for s in self.sinks.values()))

    def _reaped(self):
        if self.started is not None:
            self.status = self.started.status(self.group)
            return self.status is not None
        done, status = os.waitpid(self.pid, os.WNOHANG)
        if done:
            self.status = status
        return bool(done)

    def _step(self, deadline, drain_until):
        """Wait once for the pipes or the program's exit; True when something was read or written."""
        now = time.monotonic()
        if drain_until is not None:
            if now >= drain_until:
                return False
            wait_for = 0  # what a program wrote before it exited is in the pipe already
        else:
            wait_for = None if deadline is None else max(0.0, deadline - now)
            if self.pidfd is None:
                wait_for = POLL if wait_for is None else min(wait_for, POLL)
        readers = list(self.readers) + ([self.pidfd] if self.pidfd is not None and self.status is None else [])
        # our terminal is read only while the program runs, once it has taken what was read before, and while we
        # are in the terminal's foreground: in the background the program waits for its input as a reader there
        # would, and we look again later (a read there would stop us, whether it wanted input or not)
        if self.source is not None and self.status is None and not self.feed:
            if in_terminal_foreground((self.source,), otherwise=True):  # not our terminal: no job control
                readers.append(self.source)
            else:
                wait_for = LOOK if wait_for is None else min(wait_for, LOOK)
        writers = [self.stdin_fd] if self.stdin_fd is not None and (self.feed or self.source is None) else []
        if not readers and not writers:
            time.sleep(wait_for)  # nothing to read and no pidfd: look again for the exit
            return False
        readable, writable, _ = select.select(readers, writers, [], wait_for)
        if writable:
            self._feed()
        for fd in readable:
            if fd == self.source:
                self._copy()
            elif fd in self.readers:
                chunk = os.read(fd, 65536)
                if chunk:
                    self.readers[fd].write(chunk)
                else:
                    del self.readers[fd]
                    os.close(fd)
        return bool(readable or writable)

    def _feed(self):
        try:
            self.feed = self.feed[os.write(self.stdin_fd, self.feed[:65536]):]
        except BrokenPipeError:
            self.feed, self.source = self.feed[:0], None  # it closed its stdin: our terminal is read no more
        if not self.feed and self.source is None:
            os.close(self.stdin_fd)
            self.stdin_fd = None

    def _copy(self):
        """What was typed at our terminal, for the program's stdin; at its end (or in the background, where
        SIGTTIN is ignored: EIO), the program's stdin ends."""
        try:
            self.feed = memoryview(os.read(self.source, 65536))
        except BlockingIOError:  # a terminal left non-blocking: nothing after all
            return
        except OSError:
            self.feed = memoryview(b"")
        if not self.feed:
            self.source = None
            self._feed()

    def _escalate(self):
        """The deadline passed: SIGTERM now, SIGKILL KILL_AFTER seconds later."""
        if not self.timed_out:
            self.timed_out = True
            self.kill(signal.SIGTERM)
            return time.monotonic() + KILL_AFTER
        self.kill(signal.SIGKILL)
        return None

    @staticmethod
    def _close(fds):
        for fd in fds:
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass


RESETS = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGQUIT)  # ignored here, default in a program


def _spawn(argv, env, actions, group, cwd=None, parent_death=False, prepare=None, reaper=False):
    """Start argv with the file `actions` (posix_spawn's) and the steps asked for; its pid.

    cwd: its working folder. parent_death: it gets SIGKILL when the thread that started it ends (Linux),
    so that a server killed outright takes its tools with it; the thread must wait for it (Child.wait).
    prepare: called in the child last before exec (confinement); it may only make system calls, and an
    OSError it raises is raised here. reaper: it becomes the reaper of its orphaned descendants (Linux).
    """
    reaper = reaper and linux()
    contained = prepare if isinstance(prepare, Contained) else None
    parent_death = parent_death or contained is not None  # a contained program dies with the gateway
    if not parent_death and prepare is None and not reaper:
        spawn = os.posix_spawn if "/" in argv[0] else os.posix_spawnp  # a bare name is looked up on PATH

        def start():
            return spawn(argv[0], argv, env, file_actions=actions, setsigdef=RESETS, **({"setpgroup": 0} if group else {}))
        if cwd is None:
            return start()
        if _thread._count() == 0:  # one thread: our folder is ours to lend for the spawn (a script skill's)
            return _in_folder(cwd, start)
    # posix_spawnp looks a bare name up on our PATH, not the program's: so does this
    where = [argv[0]] if "/" in argv[0] else [os.path.join(d, argv[0]) for d in os.get_exec_path()]
    prctl = _prctl() if parent_death or reaper else None
    parent = os.getpid()
    report, report_w = os.pipe()  # both ends close on exec: EOF here means the exec happened
    try:
        pid = os.fork()
        if pid == 0:  # the child: nothing here may return to the caller's code
            try:
                os.close(report)
                _steps(actions, group, cwd, prctl if parent_death else None, parent, prepare, prctl if reaper else None)
                if contained is not None:
                    _contain(report_w, prctl, where, argv, env)  # never returns
                _exec(where, argv, env)
            except BaseException as e:  # noqa: B036 (whatever happened must reach the parent)
                failed = e if isinstance(e, OSError) else OSError(0, f"{type(e).__name__}: {e}")
                os.write(report_w, b"%d\0%s\0%s" % (failed.errno or 0, (failed.strerror or "").encode(),
                                                    os.fsencode(failed.filename or "")))
            finally:
                os._exit(127)
        os.close(report_w)
        report_w = None
        if group:
            try:
                os.setpgid(pid, pid)  # as a shell does, so that no signal to the group comes too early
            except OSError:
                pass  # it has exec'd and set it itself, or it is gone
        failure = b""
        while chunk := os.read(report, 4096):
            failure += chunk
    finally:
        os.close(report)
        if report_w is not None:
            os.close(report_w)
    if failure:
        os.waitpid(pid, 0)
        number, text, filename = failure.split(b"\0", 2)
        raise OSError(int(number), text.decode(errors="replace") or os.strerror(int(number)),
                      os.fsdecode(filename) or None)
    return pid


def _in_folder(cwd, start):
    """start() with `cwd` as our working folder, then ours again: posix_spawn has no step to change the
    child's, and a fork to do it costs a copy of our memory's map and Python in the child. Ours is
    kept by descriptor, so that it comes back even if renamed meanwhile."""
    ours = os.open(".", os.O_PATH | os.O_CLOEXEC)
    try:
        os.chdir(cwd)
        try:
            return start()
        finally:
            os.fchdir(ours)
    finally:
        os.close(ours)


def _steps(actions, group, cwd, prctl, parent, prepare, reaper=None):
    """In the child: what posix_spawn would do, then what it cannot."""
    if group:
        os.setpgid(0, 0)
    if reaper is not None:
        reaper(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # kept across exec: the orphans of its tree come to it
    for action in actions:
        if action[0] == os.POSIX_SPAWN_OPEN:
            _, fd, path, flags, mode = action
            opened = os.open(path, flags, mode)
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
        elif action[1] == action[2]:
            os.set_inheritable(action[1], True)
        else:
            os.dup2(action[1], action[2])
    for signum in RESETS:
        signal.signal(signum, signal.SIG_DFL)
    if cwd is not None:
        os.chdir(cwd)  # the child's own folder: the parent's never changes
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(128 + signal.SIGKILL)  # the parent died before the prctl: as if the signal had come
    if prepare is not None:
        prepare()


class Contained:
    """A child's `prepare` (confinement: gateway.sandbox) after which the program runs under a minimal init of
    ours (_contain): in a new session, without a controlling terminal, with file descriptors 0, 1 and 2 only.
    `namespace`: whether `steps` makes a new PID namespace, in which that init is process 1, so that when
    it ends (with the program, or killed with the child) the kernel ends every process of the call."""

    def __init__(self, steps, namespace):
        self.steps, self.namespace = steps, namespace

    def __call__(self):
        self.steps()


# Ctrl-Z at the terminal stops the gateway's group, not the program in its own session: SIGTSTP and SIGCONT too
FORWARDED = (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGTSTP, signal.SIGCONT)
CLOSE_RANGE = 436  # close_range(2): the same number on every architecture


def _contain(report_w, prctl, where, argv, env):
    """In the child, once confined: fork the init, which starts the program (posix_spawn: no copy of our memory
    to fault in, nothing of Python between its start and its exec), and exit as it does.

    The child (the pid the gateway holds) stays in the gateway's process group, passes the signals it gets
    on to the init and exits as the program did; the init leaves the session (no terminal to type into),
    passes those signals on to every process of the namespace, reaps, and exits when the program does, which
    in a PID namespace ends all that is left. A program killed by a signal: its wait status comes through a
    pipe, since process 1 of a namespace cannot die of a signal it sends itself.
    """
    said, say = os.pipe()
    alive, holds = os.pipe()  # the init sees the child gone when this reads end of file
    # The child and the init never exec, so close-on-exec closes nothing in them: every descriptor of the gateway
    # (the caller's, other calls' pipes in nexus-mcp) is closed here, and neither may be read through /proc/PID/fd
    # or ptrace'd by the program, even one of root's (not dumpable: only a capability outside the namespace reaches)
    _close_all_but((0, 1, 2, report_w, said, say, alive, holds))
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    init = os.fork()
    if init:
        os.close(report_w)
        os.close(say)
        os.close(alive)
        for signum in FORWARDED:
            signal.signal(signum, lambda signum, _frame: _send(init, signum))
        status = os.waitpid(init, 0)[1]
        raw = os.read(said, 8)
        if raw:
            status = int(raw)
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
        os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
    os.close(said)
    os.close(holds)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if select.select([alive], [], [], 0)[0]:
        os._exit(128 + signal.SIGKILL)  # the child died before the prctl: as if the signal had come
    os.setsid()
    me = os.getpid()
    # process 1 sends to every process of its namespace; without a namespace, to the program's group
    everyone = -1 if me == 1 else None
    tool = None

    def forward(signum, _frame):
        if os.getpid() == me and tool:
            _send(everyone if everyone else -tool, signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    tool = _spawn_first(where, argv, env)  # in a group of its own, our signals' handlers its defaults
    os.close(report_w)
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(0)
        if done == tool:
            os.write(say, b"%d" % status)
            os._exit(0)


def _close_all_but(kept):
    """Close every descriptor but `kept` (which holds 0). Python's objects that held the others are never
    finalized here: this process only exits or execs, and no descriptor is made after this."""
    kept = sorted(set(kept))
    for low, high in zip(kept, kept[1:] + [0x7FFFFFFF]):
        if high > low + 1 and libc().syscall(CLOSE_RANGE, low + 1, high - 1, 0) != 0:
            for fd in os.listdir("/proc/self/fd"):  # an older kernel: the same, one by one
                if low < int(fd) < high:
                    try:
                        os.close(int(fd))
                    except OSError:
                        pass  # the listing's own descriptor, closed


def _send(pid, signum):
    try:
        os.kill(pid, signum)
    except OSError:
        pass


def _exec(where, argv, env):
    """execve the first of `where` that runs, as posix_spawnp tries PATH; the error that best says why not."""
    _first(where, argv, lambda path: os.execve(path, argv, env))


def _spawn_first(where, argv, env):
    """_exec's program posix_spawned, in a process group of its own with the default action for FORWARDED: its
    pid. Only where the child's signals' handlers are Python's, which posix_spawn's child never runs."""
    return _first(where, argv, lambda path: os.posix_spawn(path, argv, env, setpgroup=0, setsigdef=FORWARDED))


def _first(where, argv, start):
    """start(path) for the first of `where` that runs; the error that best says why none did."""
    error = FileNotFoundError(2, os.strerror(2), argv[0])
    for path in where:
        try:
            return start(path)
        except (FileNotFoundError, NotADirectoryError):
            pass
        except PermissionError as e:
            error = e  # a program there we may not run says more than one missing elsewhere
    raise OSError(error.errno, error.strerror, argv[0])


PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36
ROUNDS = 100  # of kill_escaped: each kills a generation; a tree deeper than this that keeps forking is let be


def kill_escaped(pid):
    """SIGKILL every living descendant of `pid` (a reaper: see _spawn) that left its process group, as a
    daemon does with setsid, until none is left: what each killed one started comes to `pid` and is found
    next round. Linux (/proc); elsewhere nothing is found."""
    kill_found(lambda children, groups: [m for m in descendants(children, pid) if groups[m] != pid])


def kill_found(find):
    """SIGKILL what find(children, groups) finds among the living processes (processes()), round after round
    until it finds none: what a killed one started is found next round."""
    for _ in range(ROUNDS):
        found = find(*processes())
        if not found:
            return
        for member in found:
            try:
                os.kill(member, signal.SIGKILL)
            except OSError:
                pass


def processes():
    """({parent: [its children]}, {pid: its group}) of every living process (a zombie is dead already, waiting
    for its parent): Linux's /proc, else nothing."""
    children, groups = {}, {}
    try:
        found = os.listdir("/proc")
    except OSError:
        return children, groups
    for name in found:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state, parent, group = f.read().rpartition(b")")[2].split()[:3]
        except (OSError, ValueError):
            continue  # gone meanwhile (its stat unreadable, or empty)
        if state != b"Z":
            children.setdefault(int(parent), []).append(int(name))
            groups[int(name)] = int(group)
    return children, groups


def descendants(children, pid):
    """Every descendant of `pid` in `children` (processes())."""
    todo = list(children.get(pid, ()))
    while todo:
        member = todo.pop()
        todo += children.get(member, ())
        yield member


def linux():
    return sys.platform.startswith("linux")


def libc():
    """The C library, for the system calls Python has no binding of (prctl, unshare, Landlock): what
    ctypes.CDLL(None, use_errno=True) is, a function an attribute (AttributeError when there is none), taking
    ints, bytes and None and returning an int; errno() its last errno."""
    global _libc
    if _libc is None:
        _libc = _Libc()
    return _libc


class _Libc:
    """ctypes' foreign functions straight from its C module (_ctypes), as CDLL makes them: the ctypes package
    defines its many types on import, about 2 ms on every confined call, for the one type used here."""

    def __init__(self):
        import _ctypes  # only for a parent-death signal or confinement, never a plain run

        class Int(_ctypes._SimpleCData):
            _type_ = "i"

        class Function(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
            _restype_ = Int

        class Char(_ctypes._SimpleCData):
            _type_ = "c"

        self._function, self._handle = Function, _ctypes.dlopen(None, 0)  # 0: RTLD_LOCAL, as CDLL's default
        self._char, self._address = Char, _ctypes.addressof

    def buffer(self, data):
        """(a C buffer holding `data`, its address): for a struct that points to it; keep the buffer alive."""
        held = (self._char * len(data)).from_buffer_copy(data)
        return held, self._address(held)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        function = self._function((name, self))
        setattr(self, name, function)
        return function


def errno():
    """The errno of the last call through libc() in this thread."""
    import _ctypes  # loaded by libc() already

    return _ctypes.get_errno()


def _prctl():
    """prctl(2), or None where there is none (not Linux): the parent-death signal is Linux's."""
    return getattr(libc(), "prctl", None)


def run(argv, timeout=None, kill_group=False, **how):
    """Start `argv` (see Child for `how`) and wait for it: a Finished. OSError when it cannot be started."""
    return Child(argv, **how).wait(timeout, kill_group)


def in_terminal_foreground(fds=(0, 1, 2), otherwise=False):
    """True when our process group is the foreground group of the terminal we run on (the first of `fds` that is
    our controlling terminal); `otherwise` when none is."""
    for fd in fds:
        try:
            return os.tcgetpgrp(fd) == os.getpgrp()
        except OSError:
            continue
    return otherwise


class Forwarding:
    """`with Forwarding(group) as f:` passes SIGINT, SIGQUIT, SIGTERM and SIGHUP on to the child f.attach(child) names
    (main thread only); one that comes before is passed on when it is attached.

    Ctrl-C at our terminal reaches a child in our process group by itself: then we only outlive it, to
    record the call. Sent any other way (an agent's kill -INT), or to a child with a group of its own,
    we pass it on.
    """

    SIGNALS = (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, group):
        self.child = self.pending = None  # a signal before the child is attached waits for it (pending)
        by_terminal = not group and in_terminal_foreground()
        self.handlers = {signal.SIGINT: signal.SIG_IGN if by_terminal else self.forward,
                         signal.SIGQUIT: signal.SIG_IGN if by_terminal else self.forward,
                         signal.SIGTERM: self.forward, signal.SIGHUP: self.forward}

    def forward(self, signum, _frame):
        if self.child is None:
            self.pending = signum  # an agent may cancel the moment the program starts, before we hold it
        else:
            self.child.kill(signum)

    def attach(self, child):
        self.child = child
        if self.pending is not None:
            child.kill(self.pending)

    def __enter__(self):
        self.previous = {s: signal.signal(s, h) for s, h in self.handlers.items()}
        return self

    def __exit__(self, *exc):
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
