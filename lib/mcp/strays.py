"""What a nexus-mcp killed outright (kill -9, a crash, the OOM killer) leaves behind, swept at the next start.

When the server dies, its spawn helper (gateway.spawner) kills every process its tools started; but when
the helper is killed outright too (kill -9 of both, the OOM killer), what its tools started runs on, a
tool's group and what left it (setsid). So every server is recorded in
$NEXUS_HOME/state/nexus/mcp/servers.json (its pid, its start time in the kernel's clock ticks, the HTTP
sessions whose folders it made) and marks its own environment (MARK=pid-start), which every tool it starts
inherits, setsid or not. The next server to start finds the records whose process is gone (or is another
process that reuses the pid), kills every process of this user whose environment carries such a mark, and
removes those servers' session folders. A process that clears its environment, or runs as another user,
escapes this; a confined call dies with its PID namespace.
"""

import os
import shutil
import signal

from .. import fileio, paths

MARK = "NEXUS_MCP_SERVER"
ROUNDS = 20  # of kill_marked: each kills what the round before found; what forks faster than this is let be


def start_time(pid):
    """The start time of process `pid` (clock ticks since boot), or None when there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rpartition(b")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _changed():
    return fileio.Locked(paths.mcp_servers(), _read, paths.state_root())


def _read():
    found = fileio.read_json(paths.mcp_servers())
    return found if isinstance(found, dict) else {}


def begin(warn):
    """Sweep what dead servers left, record this one and mark the environment its tools inherit; its id."""
    me = f"{os.getpid()}-{start_time(os.getpid())}"
    with _changed() as servers:
        dead = {sid: info for sid, info in servers.items() if not isinstance(info, dict)
                or start_time(info.get("pid")) != info.get("start")}
        for sid in dead:
            killed = kill_marked(sid)
            if killed:
                warn(f"killed {killed} processes that a nexus-mcp which ended unexpectedly ({sid}) left running")
            del servers[sid]
        # a session folder no live server claims is a dead one's (or one that server could not remove)
        claimed = {s for info in servers.values() for s in info.get("sessions") or ()}
        folder = os.path.dirname(paths.session_folder("x"))
        try:
            found = os.listdir(folder)
        except OSError:
            found = []
        for name in found:
            if name not in claimed and name.startswith("mcp-"):
                shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
        servers[me] = {"pid": os.getpid(), "start": start_time(os.getpid()), "sessions": []}
    os.environ[MARK] = me
    return me


def session(me, name, open_=True):
    """Record (or forget) an HTTP session of server `me`, whose folder the next start removes if it dies."""
    with _changed() as servers:
        info = servers.get(me)
        if isinstance(info, dict):
            names = [s for s in info.get("sessions", []) if s != name]
            info["sessions"] = names + [name] if open_ else names


def end(me):
    """This server ends as it should: nothing of it to sweep."""
    try:
        with _changed() as servers:
            servers.pop(me, None)
    except OSError:
        pass


def kill_marked(sid):
    """SIGKILL every process of ours whose environment carries the mark of server `sid`; how many."""
    wanted, killed = f"{MARK}={sid}".encode(), set()
    for _ in range(ROUNDS):
        found = set()
        try:
            names = os.listdir("/proc")
        except OSError:
            return len(killed)
        for name in names:
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    marked = wanted in f.read().split(b"\0")
            except OSError:
                continue  # gone, or another user's
            if marked and int(name) not in killed:
                try:
                    os.kill(int(name), signal.SIGKILL)
                    found.add(int(name))
                except OSError:
                    pass
        killed |= found
        if not found:
            break
    return len(killed)
