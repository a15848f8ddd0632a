"""The spawn helper of a server (nexus-mcp): one small process, forked once as the server starts (before the
MCP SDK loads), that starts each tool of a call for it with posix_spawn.

Why: a tool call must not outlive the server, and a cancel must end all the call started. The server used to
fork itself for each tool, for the steps only a fork allows (a parent-death signal; the tool the reaper of its
orphans), and a fork of the server (the SDK loaded, its threads) cost more than all the rest of a call. Here
those steps are the helper's, taken once: it is the reaper of every orphan its tools leave, it gets a signal
when the server dies, and then it kills every process it started and all that came from them, and exits.
Each tool is posix_spawn'd (no copy of any Python process): in a process group of its own, in its folder,
with its descriptors, the signals the server ignores at their defaults, and NEXUS_MCP_CALL in its
environment, the call it belongs to.

A call's cleanup is keyed by the call: a cancel (or a timeout) of the call whose tool is pid P, while the
helper has not reaped P, stops P's group, then kills what left the group: P's descendants, and the orphans
(now the helper's) that carry the call's mark, round after round, then the group. Never another call's
processes: they are neither P's descendants nor marked so. A process that both leaves the call's tree
(its parent dead) and clears its environment escapes a cancel; it still dies with the server.

The server's side (Helper) sends each request over a Unix socket: marshal'd (argv, env, cwd, the file
actions, the exec path, and optionally a dict of options: the call's mark, killing its group as it is reaped)
with the descriptors the tool gets (SCM_RIGHTS) and the write end of a pipe of the call's own, on which the
helper answers the tool's pid (or why it could not start) and later its wait status. Confined calls are not the
helper's: they fork from the server into their PID namespace (process.Contained).

`nexus skills verify --all` forks a helper of its own for the same reasons (each verify command in a group of
its own, the reaper of what it leaves), and a Batch starts its commands there without waiting for each start,
waiting on all of them in one select loop; their mark is NEXUS_SKILL, which their environment has already.
"""

import _socket as socket  # the C module: socket.py makes enums of its constants, at a cost of milliseconds
import _thread
import marshal
import os
import select
import sys
import time

import _signal as signal  # the C module, as process.py has it

from . import process

SPAWN, KILL = 0, 1
MAX_FDS = 8  # the descriptors of one request: stdin, stdout, stderr, the answer's pipe
QUIET = (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGTERM)  # the server's to act on, not the helper's
DEATH = signal.SIGUSR1  # the helper's parent-death signal: the server is gone
MARK = "NEXUS_MCP_CALL"  # in a tool's environment: the call it belongs to, for the orphans it leaves


class Gone(Exception):
    """The helper is not there: the caller starts the program itself."""


class Helper:
    """The server's handle on its spawn helper; its methods may be called from any thread."""

    def __init__(self, pid, sock, warn=None):
        self.pid, self.sock, self.warn, self.lock, self.gone = pid, sock, warn, _thread.allocate_lock(), False

    def spawn(self, argv, env, actions, cwd, group):
        """Start argv (with posix_spawn's file `actions`, in a group of its own where `group`) in the helper: a
        Started; None when the helper cannot be asked (nothing was started). OSError when the program cannot
        be started, as process._spawn raises it."""
        answers = self.ask(argv, env, actions, cwd, group)
        if answers is None:
            return None
        try:
            return Started(self, answers)
        except BaseException:
            os.close(answers)
            raise

    def ask(self, argv, env, actions, cwd, group, path=None, **options):
        """Send the request that starts argv, without waiting for the answer: the read end of the answer's pipe
        (b"P<pid>\n", later b"S<wait status>\n"; or b"E" and why it could not start), or None when the helper is
        gone. options: `mark` ("NAME=value", a variable already in `env` that marks the call's processes: none is
        added), `end_group` (its group is killed as it is reaped: nothing it left there outlives it)."""
        fds, wired = [], []
        for action in actions:
            if action[0] == os.POSIX_SPAWN_DUP2:
                wired.append((action[0], len(fds), action[2]))
                fds.append(action[1])
            else:
                wired.append(action)
        request = (SPAWN, list(argv), dict(env), cwd, wired, group, path or os.get_exec_path())
        answers, answer_w = os.pipe()
        try:
            self._send(marshal.dumps(request + ((options,) if options else ())), fds + [answer_w])
        except Gone:
            os.close(answers)
            return None
        except BaseException:
            os.close(answers)
            raise
        finally:
            os.close(answer_w)
        return answers

    def kill(self, pid, signum, group):
        """Signal the program `pid` started here as process.Child.kill would, if the helper has not reaped it
        yet (then its group only, where it has one). False when the helper is gone."""
        try:
            self._send(marshal.dumps((KILL, pid, signum, group)), [])
        except Gone:
            return False
        return True

    def lost(self, why="killed"):
        """The helper is gone: from now on the server starts its tools itself (process._spawn)."""
        with self.lock:
            said, self.gone = self.gone, True
        if not said and self.warn:
            self.warn(f"the spawn helper ended ({why}): tools are started by the server itself from now on")

    def _send(self, payload, fds):
        with self.lock:
            gone = self.gone
            if not gone:
                try:
                    self.sock.sendmsg([len(payload).to_bytes(4, "little")],
                                      [(socket.SOL_SOCKET, socket.SCM_RIGHTS, _packed(fds))] if fds else [])
                    self.sock.sendall(payload)
                    return
                except OSError as e:
                    why = e.strerror
        if not gone:
            self.lost(why)
        raise Gone


class Started:
    """A program the helper started: its pid, and `fd`, the pipe that becomes readable when it has ended."""

    def __init__(self, helper, fd):
        self.helper, self.fd, data = helper, fd, b""
        while not (data[:1] == b"P" and b"\n" in data):  # its pid, or why not until the end
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
        if data[:1] == b"E":
            raise OSError(*marshal.loads(data[1:]))
        if b"\n" not in data:  # the helper died before it said: whether it started the program is unknown
            raise OSError(0, "the spawn helper ended before it started the program")
        line, _, self.pending = data.partition(b"\n")
        self.pid = int(line[1:])
        os.set_blocking(fd, False)

    def status(self, group):
        """The program's wait status once the helper reaped it, else None. When the helper was killed before
        it could say, the program is killed here (its group where it has one, which no other can take while
        a member lives), and said killed."""
        if b"\n" not in self.pending:
            try:
                chunk = os.read(self.fd, 64)
            except BlockingIOError:
                return None
            if not chunk:
                self.helper.lost()
                try:
                    os.killpg(self.pid, signal.SIGKILL) if group else os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
                return signal.SIGKILL
            self.pending += chunk
            if b"\n" not in self.pending:
                return None
        return int(self.pending[1:self.pending.index(b"\n")])

    def kill(self, signum, group):
        if not self.helper.kill(self.pid, signum, group):  # the helper was killed: what is left of the call, here
            try:
                os.killpg(self.pid, signum) if group else os.kill(self.pid, signum)
            except OSError:
                pass


class Batch:
    """Programs started through a helper and waited for in one loop, many at once (`nexus skills verify --all`).

    Each runs as process.Child runs a program in a group of its own waited for with kill_group: stdin
    /dev/null, stdout and stderr captured (at most `limit` bytes of each), its group killed once it exits (by
    the helper as it reaps it), its own timeout (SIGTERM to the group and to what of it left the group, then
    SIGKILL KILL_AFTER seconds later; exit 124). Nothing waits for one program's start: a request is sent, and
    the helper's answer read when it comes. One thread starts and waits."""

    def __init__(self, helper):
        self.helper, self.path = helper, os.get_exec_path()
        self.fds = {}  # the read end of a run's answer pipe, or of one of its streams -> the run

    def __len__(self):
        return len(set(self.fds.values()))

    def start(self, key, argv, env, timeout, limit=None, mark=None):
        """Start argv for `key` (what wait() gives back); False when the helper is gone: nothing was started."""
        out, out_w = os.pipe()
        err, err_w = os.pipe()
        actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0), (os.POSIX_SPAWN_DUP2, out_w, 1),
                   (os.POSIX_SPAWN_DUP2, err_w, 2)]
        answer = None
        try:
            answer = self.helper.ask(argv, env, actions, None, True, self.path, end_group=True,
                                     **({"mark": mark} if mark else {}))
        finally:
            os.close(out_w)
            os.close(err_w)
            if answer is None:
                os.close(out)
                os.close(err)
        if answer is None:
            return False
        run = _Run(key, answer, {out: process._Sink(limit=limit), err: process._Sink(limit=limit)},
                   time.monotonic() + timeout)
        for fd in (answer, out, err):
            self.fds[fd] = run
        return True

    def wait(self, also=()):
        """Wait until programs have ended, or one of the descriptors `also` is readable: ([(key, how it went)],
        the readable ones of `also`). How it went: a process.Finished; the OSError it could not start with; or
        Gone, when the helper ended before it said (the program was killed: that says nothing of it)."""
        while True:
            now, wait_for = time.monotonic(), None
            for run in set(self.fds.values()):
                if run.deadline is not None and run.pid is not None:
                    if now >= run.deadline:
                        run.deadline = self._escalate(run)
                    if run.deadline is not None:
                        left = max(0.0, run.deadline - now)
                        wait_for = left if wait_for is None else min(wait_for, left)
            readable = select.select([*self.fds, *also], [], [], wait_for)[0]
            ended = []
            for fd in readable:
                run = self.fds.get(fd)
                if run is None or run in ended:
                    continue
                if not (run.heard(self.helper) if fd == run.answer else run.read(fd)):
                    del self.fds[fd]
                if run.done():
                    ended.append(run)
                    for other in [run.answer, *run.sinks]:  # a number closed before may be another run's now
                        if self.fds.get(other) is run:
                            del self.fds[other]
                    run.close()
            ready = [fd for fd in readable if fd in also]
            if ended or ready:
                return [(run.key, run.result()) for run in ended], ready

    def _escalate(self, run):
        """Its deadline passed: SIGTERM now, SIGKILL KILL_AFTER seconds later."""
        signum = signal.SIGKILL if run.timed_out else signal.SIGTERM
        run.timed_out = True
        if not self.helper.kill(run.pid, signum, True):
            try:
                os.killpg(run.pid, signum)  # the helper is gone (its answer pipe says so next)
            except OSError:
                pass
        return time.monotonic() + process.KILL_AFTER if signum == signal.SIGTERM else None

    def close(self):
        """End the helper, which kills what it started that is left, and wait for it."""
        for fd in self.fds:
            os.close(fd)
        self.fds = {}
        self.helper.sock.close()
        try:
            os.waitpid(self.helper.pid, 0)
        except ChildProcessError:
            pass


class _Run:
    """One program of a Batch: its answer pipe, its captured streams (`open`: those not at their end), its
    deadline."""

    def __init__(self, key, answer, sinks, deadline):
        self.key, self.answer, self.sinks, self.deadline = key, answer, sinks, deadline
        self.open, self.said, self.timed_out = set(sinks), b"", False
        self.pid = self.status = self.error = None

    def heard(self, helper):
        """Read the helper's answer: the pid, later the wait status; or why it could not start. False at its end."""
        chunk = os.read(self.answer, 4096)
        self.said += chunk
        if self.said[:1] == b"E":
            if not chunk:  # all of it is there once the helper has closed the pipe
                self.error = OSError(*marshal.loads(self.said[1:]))
            return bool(chunk)
        for line in self.said.split(b"\n")[:-1]:
            if line[:1] == b"P":
                self.pid = int(line[1:])
            elif line[:1] == b"S":
                self.status = int(line[1:])
        if not chunk and self.status is None:  # the helper ended before it said: what it started is ended here
            helper.lost()
            if self.pid is not None:
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except OSError:
                    pass
            self.error = Gone()
        return bool(chunk)

    def read(self, fd):
        """Keep what the program wrote on `fd`; False at its end (then it is closed)."""
        chunk = os.read(fd, 65536)
        if chunk:
            self.sinks[fd].write(chunk)
            return True
        self.open.discard(fd)
        os.close(fd)
        return False

    def done(self):
        """True once it has ended and what it wrote before is read: as Child.wait, what is in the pipes then (for
        at most process.DRAIN seconds), since a process that left its group may hold them open."""
        if self.error is None and self.status is None:
            return False
        until = time.monotonic() + process.DRAIN
        while self.open and self.error is None and time.monotonic() < until:
            readable = select.select(list(self.open), [], [], 0)[0]
            if not readable:
                break
            for fd in readable:
                self.read(fd)
        return True

    def close(self):
        for fd in [self.answer, *self.open]:
            os.close(fd)
        self.open = set()
        for sink in self.sinks.values():
            sink.flush()

    def result(self):
        if self.error is not None:
            return self.error
        code = os.waitstatus_to_exitcode(self.status)
        killed_by = -code if code < 0 else None
        code = 124 if self.timed_out else 128 + killed_by if killed_by else code
        out, err = self.sinks.values()
        return process.Finished(code, self.timed_out, killed_by, bytes(out.data), bytes(err.data),
                                out.truncated or err.truncated)


def start(warn=None):
    """Fork the helper (from a caller with one thread, before it loads what the helper need not hold) and make
    it the one process.Child asks for a program that is to die with the server. None where the system has
    no reaper of orphans (not Linux)."""
    process.helper = fork(warn)
    return process.helper


def fork(warn=None):
    """A helper of the caller's own (the calling thread's: it dies with it), or None where the system has no
    reaper of orphans (not Linux)."""
    if not process.linux():
        return None
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    server = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            ours.close()
            _serve(theirs, server, process._prctl())  # ctypes loaded here: the server may never need it
        finally:
            os._exit(0)
    theirs.close()
    return Helper(pid, ours, warn)


def _serve(sock, server, prctl):
    """The helper: start what is asked, say when each ends, until the server is gone; then kill all it started."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):  # never the protocol's streams: the client sees the server's end, not ours
        os.dup2(null, fd)
    os.close(null)
    home = os.open(".", os.O_RDONLY | os.O_DIRECTORY)  # the server's folder, a tool's where the call names none
    wake, woken = os.pipe()
    os.set_blocking(wake, False)
    os.set_blocking(woken, False)
    signal.set_wakeup_fd(woken, warn_on_full_buffer=False)
    for signum in (*QUIET, DEATH, signal.SIGCHLD):  # handled, not ignored: a program starts with them at default
        signal.signal(signum, _nothing)
    prctl(process.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    prctl(process.PR_SET_PDEATHSIG, DEATH, 0, 0, 0)
    live, calls = {}, 0  # live: pid -> (the write end of its answer's pipe, its call's mark, end_group), till reaped
    try:
        while os.getppid() == server:
            readable = select.select([sock, wake], [], [])[0]
            if wake in readable:
                while _drained(wake):
                    pass
            _reap(live)
            if sock in readable:
                request = _receive(sock)
                if request is None:
                    break  # the server closed its end
                message, fds = request
                if message[0] == KILL:
                    _kill(*message[1:], live)
                else:
                    calls += 1
                    _start(message[1:], fds, home, str(calls), live)
    finally:
        for pid in live:
            _stop(pid)
        if live or _has_children():  # else nothing descends from us: no look through /proc
            me = os.getpid()
            process.kill_found(lambda children, groups: list(process.descendants(children, me)))


def _has_children():
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def _nothing(_signum, _frame):
    pass  # the wakeup descriptor says it


def _drained(fd):
    try:
        return bool(os.read(fd, 512))
    except BlockingIOError:
        return False


FD_BYTES = 4  # a descriptor in SCM_RIGHTS: a C int


def _packed(fds):
    return b"".join(fd.to_bytes(FD_BYTES, sys.byteorder, signed=True) for fd in fds)


def _receive(sock):
    """One request: (the unmarshalled message, the descriptors that came with it); None at end of file."""
    head, ancillary, _, _ = sock.recvmsg(4, socket.CMSG_SPACE(MAX_FDS * 4), socket.MSG_CMSG_CLOEXEC)
    fds = []
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += [int.from_bytes(data[i:i + FD_BYTES], sys.byteorder, signed=True)
                    for i in range(0, len(data) - FD_BYTES + 1, FD_BYTES)]
    while head and len(head) < 4:
        more = sock.recv(4 - len(head))
        head = head + more if more else b""
    payload = bytearray(int.from_bytes(head, "little") if len(head) == 4 else 0)
    view, got = memoryview(payload), 0
    while head and got < len(payload):
        count = sock.recv_into(view[got:])
        if not count:
            head = b""
        got += count
    if len(head) < 4:
        for fd in fds:
            os.close(fd)
        return None
    return marshal.loads(payload), fds


def _start(request, fds, home, mark, live):
    """posix_spawn what the request asks, and answer on its pipe (the last descriptor) its pid or why not."""
    argv, env, cwd, wired, group, path, *more = request
    options = more[0] if more else {}
    answer = fds.pop()
    actions = [(a[0], fds[a[1]], a[2]) if a[0] == os.POSIX_SPAWN_DUP2 else a for a in wired]
    if options.get("mark"):  # a variable the caller's environment has already
        mark = options["mark"]
    else:
        env[MARK] = mark
        mark = f"{MARK}={mark}"
    try:
        # the helper's own folder is the tool's, changed here: the helper has one thread, and the server's never changes
        os.chdir(cwd) if cwd is not None else os.fchdir(home)
        pid = _spawned(argv, env, actions, group, path)
    except OSError as e:
        _say(answer, b"E" + marshal.dumps((e.errno or 0, e.strerror or os.strerror(e.errno or 0), e.filename)))
        os.close(answer)
        return
    finally:
        for fd in fds:
            os.close(fd)
    _say(answer, b"P%d\n" % pid)
    live[pid] = (answer, os.fsencode(mark), bool(options.get("end_group")) and group)


def _spawned(argv, env, actions, group, path):
    """posix_spawn argv; a bare name is looked up on the server's PATH, as process._spawn does (the best error)."""
    error = FileNotFoundError(2, os.strerror(2), argv[0])
    for program in [argv[0]] if "/" in argv[0] else [os.path.join(d, argv[0]) for d in path]:
        try:
            return os.posix_spawn(program, argv, env, file_actions=actions, setsigdef=process.RESETS,
                                  **({"setpgroup": 0} if group else {}))
        except (FileNotFoundError, NotADirectoryError):
            pass
        except PermissionError as e:
            error = e
    raise OSError(error.errno, error.strerror, argv[0])


def _say(fd, line):
    try:
        os.write(fd, line)
    except OSError:
        pass  # the server's thread is gone: the program is still reaped, and ended with the rest


def _reap(live):
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return
        answer, _, end_group = live.pop(pid, (None, None, False))  # else an orphan a tool left, which came to us
        if end_group:  # its group, before anyone hears it ended: its pid is still the group's while one lives
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if answer is not None:
            _say(answer, b"S%d\n" % status)
            os.close(answer)


def _kill(pid, signum, group, live):
    """As process.Child.kill: signal the program, or its group; ending it (SIGTERM, SIGKILL) while it is ours
    (not reaped: its pid still its own) first kills what of its call left the group."""
    if pid in live and group and signum in (signal.SIGTERM, signal.SIGKILL):
        if signum == signal.SIGKILL:  # the group stopped first: nothing in it can leave it while we look
            _stop(pid)
        mark = live[pid][1]
        others = [p for p in live if p != pid]
        process.kill_found(lambda children, groups: _escaped(children, groups, pid, mark, others))
    try:
        if group:
            os.killpg(pid, signum)
        elif pid in live:
            os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(pid):
    try:
        os.killpg(pid, signal.SIGSTOP)
    except (ProcessLookupError, PermissionError):
        pass


def _escaped(children, groups, pid, mark, others):
    """What of the call whose tool is `pid` left its group: its descendants outside it, and the orphans (ours
    now, under no other call's tool) whose environment carries the call's `mark`."""
    found = [m for m in process.descendants(children, pid) if groups[m] != pid]
    skip = {pid, *others}
    todo = [m for m in children.get(os.getpid(), ()) if m not in skip]
    while todo:
        member = todo.pop()
        todo += [m for m in children.get(member, ()) if m not in skip]
        try:
            with open(f"/proc/{member}/environ", "rb") as f:
                if mark in f.read().split(b"\0"):
                    found.append(member)
        except OSError:
            pass  # gone meanwhile
    return found
