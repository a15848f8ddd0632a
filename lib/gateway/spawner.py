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
actions, the exec path) with the descriptors the tool gets (SCM_RIGHTS) and the write end of a pipe of the
call's own, on which the helper answers the tool's pid (or why it could not start) and later its wait status.
Confined calls are not the helper's: they fork from the server into their PID namespace (process.Contained).
"""

import array
import marshal
import os
import select
import socket
import threading

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
        self.pid, self.sock, self.warn, self.lock, self.gone = pid, sock, warn, threading.Lock(), False

    def spawn(self, argv, env, actions, cwd, group):
        """Start argv (with posix_spawn's file `actions`, in a group of its own where `group`) in the helper: a
        Started; None when the helper cannot be asked (nothing was started). OSError when the program cannot
        be started, as process._spawn raises it."""
        fds, wired = [], []
        for action in actions:
            if action[0] == os.POSIX_SPAWN_DUP2:
                wired.append((action[0], len(fds), action[2]))
                fds.append(action[1])
            else:
                wired.append(action)
        answers, answer_w = os.pipe()
        try:
            try:
                self._send(marshal.dumps((SPAWN, list(argv), dict(env), cwd, wired, group, os.get_exec_path())),
                           fds + [answer_w])
            finally:
                os.close(answer_w)
            return Started(self, answers)
        except Gone:
            os.close(answers)
            return None
        except BaseException:
            os.close(answers)
            raise

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
                                      [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else [])
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


def start(warn=None):
    """Fork the helper (from a caller with one thread, before it loads what the helper need not hold) and make
    it the one process.Child asks for a program that is to die with the server. None where the system has
    no reaper of orphans (not Linux)."""
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
    process.helper = Helper(pid, ours, warn)
    return process.helper


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
    live, calls = {}, 0  # live: pid -> (the write end of its answer's pipe, its call's mark), till reaped
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
        me = os.getpid()
        process.kill_found(lambda children, groups: list(process.descendants(children, me)))


def _nothing(_signum, _frame):
    pass  # the wakeup descriptor says it


def _drained(fd):
    try:
        return bool(os.read(fd, 512))
    except BlockingIOError:
        return False


def _receive(sock):
    """One request: (the unmarshalled message, the descriptors that came with it); None at end of file."""
    head, ancillary, _, _ = sock.recvmsg(4, socket.CMSG_SPACE(MAX_FDS * 4), socket.MSG_CMSG_CLOEXEC)
    fds = array.array("i")
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
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
    return marshal.loads(payload), list(fds)


def _start(request, fds, home, mark, live):
    """posix_spawn what the request asks, and answer on its pipe (the last descriptor) its pid or why not."""
    argv, env, cwd, wired, group, path = request
    answer = fds.pop()
    actions = [(a[0], fds[a[1]], a[2]) if a[0] == os.POSIX_SPAWN_DUP2 else a for a in wired]
    env[MARK] = mark
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
    live[pid] = (answer, mark)


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
        answer, _ = live.pop(pid, (None, None))  # else an orphan a tool left, which came to us
        if answer is not None:
            _say(answer, b"S%d\n" % status)
            os.close(answer)


def _kill(pid, signum, group, live):
    """As process.Child.kill: signal the program, or its group; ending it (SIGTERM, SIGKILL) while it is ours
    (not reaped: its pid still its own) first kills what of its call left the group."""
    if pid in live and group and signum in (signal.SIGTERM, signal.SIGKILL):
        if signum == signal.SIGKILL:  # the group stopped first: nothing in it can leave it while we look
            _stop(pid)
        mark = f"{MARK}={live[pid][1]}".encode()
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
