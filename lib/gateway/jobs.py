"""Background runs: `nexus skill run NAME --background` verifies the skill, starts its tool detached and
returns at once with a job id.

A small supervisor (forked from nexus, in a session of its own, so the shell that started it may go)
runs the tool in a process group of its own, its stdin /dev/null and its output in files under
$NEXUS_HOME/state/nexus/jobs/ID/, waits for it (ending it after --timeout), records the call exactly
once, as any call is recorded, and writes how it ended into job.json. Finished jobs are pruned by
`nexus skills rotate` after KEEP_DAYS days.
"""

import os
import select
import shutil
import time

import _signal as signal

from .. import fileio, paths, schema
from ..errors import NexusError, UsageError
from . import process

KEEP_DAYS = 7
GRACE = 5  # seconds between SIGTERM and SIGKILL when a job is killed


def folder(job_id):
    """The job's folder; the id is checked before it becomes a path."""
    if not (isinstance(job_id, str) and job_id and all(c in "0123456789abcdef-" for c in job_id) and len(job_id) <= 40):
        raise UsageError(f"invalid job id {job_id!r}: see `nexus jobs`")
    return os.path.join(paths.jobs_dir(), job_id)


def read(job_id):
    """The job's record, with `status` "lost" when its supervisor is gone without saying how it ended."""
    job = fileio.read_json(os.path.join(folder(job_id), "job.json"))
    if not isinstance(job, dict):
        raise NexusError(f"no job {job_id}: see `nexus jobs`")
    if job.get("status") in ("starting", "running") and not _alive(job.get("supervisor")):
        job["status"] = "lost"
    return job


def _alive(pid):
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, TypeError):
        return False
    except PermissionError:
        pass
    return True


def _save(job):
    fileio.write_json(os.path.join(folder(job["id"]), "job.json"), job)


def start(call, timeout):
    """Start the prepared call in the background; its job id. The caller returns at once."""
    job = {"id": schema.new_id(3), "skill": call.entry["name"], "args": [call.masked(a) for a in call.args],
           "status": "starting", "started": schema.now_iso(), "timeout": timeout}
    where = folder(job["id"])
    fileio.private_dirs(where, paths.state_root())
    out, err = (os.open(os.path.join(where, name), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
                for name in ("stdout", "stderr"))
    _save(job)
    if os.fork():
        os.close(out)
        os.close(err)
        return job["id"]
    try:  # the supervisor: it never returns into the command that forked it
        _supervise(call, job, out, err, timeout)
    finally:
        os._exit(0)


def _supervise(call, job, out, err, timeout):
    os.setsid()  # no terminal, no job control of the shell that started us: its hangup is not ours
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    job["supervisor"] = os.getpid()

    def running(child):
        job.update(status="running", pid=child.pid)
        _save(job)

    done = call.execute(timeout=timeout, stdin=process.DEVNULL, stdout=out, stderr=err, on_start=running)
    killed = os.path.exists(os.path.join(folder(job["id"]), "kill"))
    status = "killed" if killed else "timed-out" if done.timed_out else "failed" if not done.started else "finished"
    job.update(status=status, exit=done.exit, ms=done.ms, ended=schema.now_iso())
    _save(job)


def all_jobs():
    """Every job, newest first."""
    try:
        ids = sorted(os.listdir(paths.jobs_dir()), reverse=True)
    except FileNotFoundError:
        return []
    found = []
    for job_id in ids:
        try:
            found.append(read(job_id))
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
    """End a job's whole process group: SIGTERM, then SIGKILL after GRACE seconds; the job, once ended."""
    job = read(job_id)
    if job["status"] not in ("starting", "running") or not job.get("pid"):
        return job
    open(os.path.join(folder(job_id), "kill"), "w").close()
    for signum, patience in ((signal.SIGTERM, GRACE), (signal.SIGKILL, GRACE)):
        try:
            os.killpg(job["pid"], signum)
        except ProcessLookupError:
            break
        ended = wait(job_id, patience)
        if ended is not None:
            return ended
    return wait(job_id, GRACE) or read(job_id)


def output(job_id):
    """The paths of the job's stdout and stderr."""
    where = folder(job_id)
    return os.path.join(where, "stdout"), os.path.join(where, "stderr")


def prune(days=KEEP_DAYS):
    """Remove the jobs that ended over `days` days ago; how many."""
    since, removed = schema.now_iso(time.time() - days * 86400), 0
    for job in all_jobs():
        if job.get("ended") and job["ended"] < since:
            shutil.rmtree(folder(job["id"]), ignore_errors=True)
            removed += 1
    return removed

