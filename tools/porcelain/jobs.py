"""Background runs: `nexus jobs`, `nexus job show|logs|wait|kill`."""

import os
import time

from nexus.cli.command import renders
from nexus.errors import NexusError
from nexus.gateway import jobs, plan
from nexus.style import Style, fitted, local, shell_line, when


def render_jobs(found, out):
    if not found:
        out.write("No jobs: start one with `nexus skill run NAME --background -- ARGS`.\n")
        return
    rows = [["JOB", "SKILL", "STATUS", "EXIT", "STARTED", "MS"]]
    rows += [[j["id"], j["skill"], j["status"], str(j.get("exit", "-")), local(j["started"]), str(j.get("ms", "-"))]
             for j in found]
    out.write("\n".join(fitted(rows, Style(out).columns, give=(4, 1))) + "\n")


@renders(render_jobs)
def list_jobs(ctx):
    """Status: starting, running, finished (exit is the tool's), failed (it could not be started),
    timed-out, killed, or lost (its supervisor is gone without saying how the tool ended). Jobs that
    ended over 7 days ago are removed by `nexus skills rotate`.
    """
    return jobs.all_jobs(ctx.warn)


def render_job(job, out):
    stdout, stderr = jobs.output(job["id"])
    shown = {**job, **{key: when(job.get(key)) for key in ("started", "ended") if job.get(key)}}
    lines = [f"{key}: {shown[key]}" for key in ("id", "skill", "status", "started", "ended", "exit", "ms", "timeout")
             if shown.get(key) is not None]
    lines.append("args: " + shell_line(job.get("args") or []))  # exact, and visible
    lines += [f"stdout: {stdout}", f"stderr: {stderr}"]
    out.write("\n".join(lines) + "\n")


@renders(render_job)
def show(ctx):
    return jobs.read(ctx.args["ID"])


def logs(ctx):
    """Prints the job's stdout on stdout and its stderr on stderr, as the tool wrote them but for the
    secrets nexus hands the skill, shown as *** (as `nexus-run --json` and MCP results show them)."""
    job = jobs.read(ctx.args["ID"])
    secrets = plan.secrets_of(job["skill"], ctx.config)
    streams = [(open(path, "rb"), target, plan.Masking(secrets)) for path, target in zip(jobs.output(job["id"]), (1, 2))]
    try:
        while True:
            if sum(_copy(*stream) for stream in streams):
                continue
            if not ctx.args["--follow"]:
                break
            if jobs.read(job["id"])["status"] not in ("starting", "running"):
                while sum(_copy(*stream) for stream in streams):  # what it wrote before it ended
                    pass
                break
            time.sleep(0.2)  # a file has nothing to wait on: look again, as tail -f does
        for _, target, masking in streams:
            _write(target, masking.feed(b"", last=True))  # what was held back in case a secret went on
        return 0
    finally:
        for f, _, _ in streams:
            f.close()


def _copy(source, fd, masking):
    chunk = source.read(65536)
    _write(fd, masking.feed(chunk))
    return len(chunk)


def _write(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def wait(ctx):
    """
    Exit status:
      N    the tool's own exit status, once the job has ended (124 if it timed out, 128+N after signal N)
      1    the job was lost, or could not be started
      124  --timeout passed first; the job is still running
    """
    timeout = ctx.args["--timeout"]
    job = jobs.wait(ctx.args["ID"], timeout)
    if job is None:
        ctx.warn(f"job {ctx.args['ID']} still running after {timeout:g} s")
        return 124
    if job.get("exit") is None:
        raise NexusError(f"job {job['id']} is {job['status']}: its exit status is unknown")
    return job["exit"]


def render_killed(job, out):
    said = f" (exit {job['exit']})" if job.get("exit") is not None else ""
    if job.get("outlived"):
        said += " (processes of its tool outlived it: nexus killed them)"
    if job["status"] == "lost":
        said = (" (its supervisor was gone; the tool had outlived it, and nexus ended it)" if job.get("toolEnded")
                else " (its supervisor was gone)")
    out.write(f"{job['id']}: {job['status']}{said}\n")


@renders(render_killed)
def kill(ctx):
    """Ends the job's whole process group: SIGTERM, then SIGKILL 5 seconds later. The call is recorded
    as killed (a cancel: the skill is not marked for verification again, as an MCP cancel does not);
    a job that has already ended is left as it is. A job whose supervisor was killed is lost: its
    tool, if it outlived the supervisor, is ended, the call recorded, and the output says so.
    """
    return jobs.kill(ctx.args["ID"])




def job_ids(ctx):
    """Every background run's id, newest first, for shell completion."""
    return "".join(job["id"] + "\n" for job in jobs.all_jobs())
