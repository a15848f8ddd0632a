"""Background runs: `nexus skill run NAME --background` verifies the skill, starts its tool detached and
returns at once with a job id.

A small supervisor (forked from nexus, in a session of its own, so the shell that started it may go)
runs the tool in a process group of its own, its stdin /dev/null and its output in files under
$NEXUS_HOME/state/nexus/jobs/ID/, waits for it (ending it after --timeout), records the call exactly
once, as any call is recorded, and writes how it ended into job.json. Finished jobs are pruned by
`nexus skills rotate` after KEEP_DAYS days.

The job id is printed only once the supervisor has saved its pid, so a job is never taken for lost
while its supervisor may still start. A supervisor that was killed leaves its job "running": the next
`nexus jobs`, `job wait`, `job kill` or `skills rotate` that reads it ends the tool's process group
(when it is still the one the job started), records the call, and says the job was lost.
"""

import os
import select
import shutil
import time

import _signal as signal

from .. import fastjson, fileio, paths, schema
from ..errors import BadInput, NexusError, UsageError
from . import process

KEEP_DAYS = 7
GRACE = 5  # seconds between SIGTERM and SIGKILL when a job is killed


def folder(job_id):
    """The job's folder; the id is checked before it becomes a path."""
    if not (isinstance(job_id, str) and job_id and all(c in "0123456789abcdef-" for c in job_id) and len(job_id) <= 40):
        raise UsageError(f"invalid job id {job_id!r}: see `nexus jobs`")
    return os.path.join(paths.jobs_dir(), job_id)


def read(job_id, scoped=True):
    """The job's record; a job whose supervisor is gone without saying how it ended is settled as lost.
    BadInput for a job.json that is not a job's; NexusError for one another profile started, when a
    profile is in force (scoped: True for the one in force, or the Scope itself; None for none): an
    agent sees and ends only its own jobs."""
    job = _load(job_id)
    profile = _profile() if scoped is True else scoped
    if profile and job.get("profile") != profile.name:
        raise NexusError(f"job {job['id']}: not available to profile {profile.name}")
    if job["status"] in ("starting", "running") and not _alive(job.get("supervisor") or job.get("starter")):
        job = _settle_lost(job)
    return job


STATUSES = ("starting", "running", "finished", "failed", "timed-out", "killed", "lost")
_PID = "a process id"
SHAPE = {"id": str, "skill": str, "status": str, "started": str, "ended": str, "starter": _PID, "supervisor": _PID,
         "pid": _PID, "pidStart": int, "timeout": (int, float), "exit": int, "ms": int, "args": list, "session": str,
         "profile": str, "toolEnded": bool, "truncated": bool, "call": str}


def _load(job_id):
    """The job.json of a job, checked against SHAPE (a pid a whole number above 1: nexus signals it); BadInput
    naming the file and the first field that is wrong, NexusError when there is none."""
    path = os.path.join(folder(job_id), "job.json")
    job = fileio.read_json(path)  # BadInput when it is not JSON
    if job is None:
        raise NexusError(f"no job {job_id}: see `nexus jobs`")
    if not isinstance(job, dict):
        raise BadInput(f"'{path}' is not a job's record: not an object")
    for key in ("id", "skill", "status"):
        if key not in job:
            raise BadInput(f"'{path}' is not a job's record: no '{key}'")
    for key, value in job.items():
        want = SHAPE.get(key)
        if value is None or want is None:
            continue
        if want is _PID:
            good = type(value) is int and value > 1
        elif want is bool:
            good = type(value) is bool
        else:  # true is not a number here
            good = isinstance(value, want) and type(value) is not bool
        if not good:
            raise BadInput(f"'{path}' is not a job's record: '{key}' is {fastjson.dumps(value)[:40]}")
    if job["id"] != job_id or job["status"] not in STATUSES or not paths.is_valid_name(job["skill"]) \
            or not all(isinstance(a, str) for a in job.get("args") or []):
        raise BadInput(f"'{path}' is not a job's record: its id, status, skill or args")
    return job


def _profile():
    """The profile in force (a Scope), or None."""
    from .. import config as configlib  # only for jobs: the gateway's own path has its config already
    from ..catalog import scope

    return scope.chosen(configlib.load())


def _settle_lost(job):
    """A job whose supervisor is gone: end its tool's process group if it is still the one the job
    started, record the call once (whoever sees it first, under the job's lock), and mark it lost."""
    with fileio.Lock(os.path.join(folder(job["id"]), "lock")):
        job = _load(job["id"])
        if job.get("status") not in ("starting", "running"):
            return job  # settled meanwhile, by its supervisor or by another reader
        pid, ended = job.get("pid"), False
        if pid and job.get("pidStart") is not None and _start_time(pid) == job["pidStart"]:
            try:
                os.killpg(pid, signal.SIGKILL)
                ended = True
            except (ProcessLookupError, PermissionError):
                pass
        job.update(status="lost", ended=schema.now_iso(), toolEnded=ended)
        _save(job)
        if job.get("pid"):  # the tool ran: its call is recorded as any call is, once
            _record_lost(job, ended)
    return job


def _record_lost(job, ended):
    from .. import config as configlib  # a lost job only: its call is recorded as the gateway records one
    from ..catalog import manifest
    from . import call as gateway

    try:
        config = configlib.load()
        entry = manifest.entry(configlib.sources(config), job["skill"], lambda message: None)
        started = schema.parse_iso(job.get("started"))
        ms = int((time.time() - started.timestamp()) * 1000) if started else 0
        error = "its supervisor was killed" + ("; nexus ended the tool" if ended else "")
        caller = gateway.Caller(gateway.JOB, lambda message: None, session=job.get("session"))
        lost = gateway.Call(entry, config, caller, job.get("args") or ())
        lost.id, lost.sandbox = job.get("call"), None  # the call the supervisor ran; how, it did not say
        lost.record(job.get("started") or schema.now_iso(), ms, 137, error=error)
    except (NexusError, OSError):
        pass  # the skill is gone, or its state cannot be written: the job still says lost


def _stat(pid):
    """The fields of /proc/PID/stat after the command's name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()
    except OSError:
        return None


def _start_time(pid):
    """When a process started, in clock ticks since boot (field 22 of /proc/PID/stat): tells the process
    a job started from another that took its pid since. None where there is no /proc or no such process."""
    fields = _stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def _alive(pid):
    """Whether a process runs: a zombie (killed, and not reaped by a parent that is not waiting) does not."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, TypeError):
        return False
    except PermissionError:
        pass
    fields = _stat(pid)
    return not (fields and fields[0] == b"Z")


def _save(job):
    fileio.write_json(os.path.join(folder(job["id"]), "job.json"), job)


def start(call, timeout):
    """Start the prepared call in the background; its job id. The caller returns at once."""
    from ..state import usage_log  # a start only: listing or reading jobs never needs it

    args = usage_log.bounded({"args": [call.masked(a) for a in call.args]})  # as the log keeps them
    job = {"id": schema.new_id(3), "skill": call.entry["name"], "status": "starting", "started": schema.now_iso(),
           "timeout": timeout, "starter": os.getpid(), "session": call.caller.session, "call": call.id, **args,
           **({"profile": call.profile.name} if call.profile else {})}
    where = folder(job["id"])
    try:
        fileio.private_dirs(where, paths.state_root())
        out, err = (os.open(os.path.join(where, name), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
                    for name in ("stdout", "stderr"))
        _save(job)
    except OSError as e:  # a full disk: no folder is left that no listing shows and no prune removes
        shutil.rmtree(where, ignore_errors=True)
        raise NexusError(f"cannot start a background job in {where}: {e.strerror}") from None
    ready, said = os.pipe()
    if os.fork():
        for fd in (out, err, said):
            os.close(fd)
        os.read(ready, 1)  # the supervisor has saved its pid (or is gone): only now is the id given out
        os.close(ready)
        return job["id"]
    try:  # the supervisor: it never returns into the command that forked it
        os.close(ready)
        _supervise(call, job, out, err, timeout, said)
    finally:
        os._exit(0)


def _supervise(call, job, out, err, timeout, said):
    os.setsid()  # no terminal, no job control of the shell that started us: its hangup is not ours
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    job["supervisor"] = os.getpid()
    _save(job)
    os.close(said)
    call.cancel_mark = os.path.join(folder(job["id"]), "kill")  # `job kill` is a cancel, as an MCP client's is

    def running(child):
        job.update(status="running", pid=child.pid, pidStart=_start_time(child.pid))
        _save(job)

    done = call.execute(timeout=timeout, stdin=process.DEVNULL, stdout=out, stderr=err, on_start=running)
    killed = os.path.exists(os.path.join(folder(job["id"]), "kill"))
    status = "killed" if killed else "timed-out" if done.timed_out else "failed" if not done.started else "finished"
    job.update(status=status, exit=done.exit, ms=done.ms, ended=schema.now_iso())
    _save(job)


def all_jobs(warn=None, scoped=True):
    """Every job (scoped: of the profile in force), newest first; `warn` hears of a malformed job.json."""
    try:
        ids = sorted(os.listdir(paths.jobs_dir()), reverse=True)
    except FileNotFoundError:
        return []
    try:
        profile = _profile() if scoped else None  # the config read once, not once a job
    except UsageError:
        return []  # a profile the config lacks sees no job
    found = []
    for job_id in ids:
        try:
            found.append(read(job_id, profile))
        except BadInput as e:  # a job.json that is not a job's: said, and the others still listed
            if warn:
                warn(str(e))
        except (NexusError, UsageError):
            continue  # a folder half made, or not ours
    return found


def wait(job_id, timeout=None):
    """The job once it has ended (None when `timeout` passed first): waits on its supervisor, without
    polling where the system can."""
    job = read(job_id)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        watch = os.pidfd_open(job["supervisor"]) if job.get("supervisor") else None
    except (AttributeError, OSError):
        watch = None
    try:
        while job["status"] in ("starting", "running"):
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            if watch is not None:
                select.select([watch], [], [], left)
            else:
                time.sleep(0.05 if left is None else min(0.05, left))
            job = read(job_id)
    finally:
        if watch is not None:
            os.close(watch)
    return job


def kill(job_id):
    """End a job's whole process group: SIGTERM, then SIGKILL after GRACE seconds; the job, once ended,
    with "outlived": true when processes of the group outlived its tool (they are killed then)."""
    job = read(job_id)
    if job["status"] not in ("starting", "running") or not job.get("pid"):
        return job
    open(os.path.join(folder(job_id), "kill"), "w").close()
    process.kill_escaped(job["pid"])  # what left its group (setsid), while the tool still gathers its orphans
    for signum, patience in ((signal.SIGTERM, GRACE), (signal.SIGKILL, GRACE)):
        try:
            os.killpg(job["pid"], signum)
        except ProcessLookupError:
            break
        ended = wait(job_id, patience)
        if ended is not None:
            return _no_leftovers(ended)
    return _no_leftovers(wait(job_id, GRACE) or read(job_id))


def _no_leftovers(job):
    """The job, once its tool has ended: a process of the tool's group still there (one that ignored
    SIGTERM) is killed, and the job says so. A group id is not given to another while a member lives."""
    try:
        os.killpg(job["pid"], signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return job
    return {**job, "outlived": True}


def output(job_id):
    """The paths of the job's stdout and stderr."""
    where = folder(job_id)
    return os.path.join(where, "stdout"), os.path.join(where, "stderr")


def prune(days=KEEP_DAYS, warn=None):
    """Remove the jobs that ended over `days` days ago; how many. A job lost meanwhile is settled first."""
    since, removed = schema.now_iso(time.time() - days * 86400), 0
    for job in all_jobs(warn, scoped=False):
        if job.get("ended") and job["ended"] < since:
            shutil.rmtree(folder(job["id"]), ignore_errors=True)
            removed += 1
    return removed + _prune_husks(time.time() - days * 86400)


def _prune_husks(before):
    """Remove the job folders without a job.json (a start that failed half way) last changed before `before`."""
    removed = 0
    for job_id in os.listdir(paths.jobs_dir()) if os.path.isdir(paths.jobs_dir()) else ():
        where = os.path.join(paths.jobs_dir(), job_id)
        try:
            husk = not os.path.lexists(os.path.join(where, "job.json")) and os.lstat(where).st_mtime < before
        except OSError:
            continue
        if husk and os.path.isdir(where) and not os.path.islink(where):
            shutil.rmtree(where, ignore_errors=True)
            removed += 1
    return removed

