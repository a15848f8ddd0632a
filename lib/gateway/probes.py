"""What confinement this system gives, as `nexus status` and `nexus skill show` say it, without a fork each time.

sandbox.availability forks a child that makes a user, network and mount namespace and mounts an overlay
where stages are: half of what `nexus status` cost, for an answer that changes only with what is below. It is
kept in state/nexus/probes.json with exactly that, and asked again when any of it differs or the answer is an
hour old (a safety net for what the kernel may consult that is not listed):

- the boot (the kernel, its command line: Landlock, and the LSMs that may forbid user namespaces);
- the user and group, and what this process may do: its capabilities, its seccomp mode, no_new_privs, its
  AppArmor label (Ubuntu restricts user namespaces per profile), its user and mount namespaces (a container);
- the sysctls that limit unprivileged user namespaces (`KNOBS`);
- the file system nexus's state lies on (an overlay's upper layer must be one that takes it), and
  NEXUS_SANDBOX_UNAVAILABLE.

A cache is input: one that is not nexus's own (fileio.read_own) or not of the shape written is asked again.
Only what is said is taken from it: a confined call never reads it, and finds out for itself.
"""

import os
import sys
import time

from .. import config as configlib, fastjson, fileio, paths
from . import stage

KNOBS = ("/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces",
         "/proc/sys/user/max_net_namespaces", "/proc/sys/user/max_mnt_namespaces",
         "/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "/proc/sys/kernel/unprivileged_userns_apparmor_policy")
READ = ("/proc/sys/kernel/random/boot_id", *KNOBS, "/proc/self/attr/current")
STATUS_LINES = (b"CapEff:", b"NoNewPrivs:", b"Seccomp:")  # of /proc/self/status
AGE = 3600  # seconds an answer is kept at most


def _text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def key():
    """Everything the answer of sandbox.availability depends on, as one JSON text."""
    own = _text("/proc/self/status") or ""
    lines = [line for line in own.split("\n") if line.encode().startswith(STATUS_LINES)]
    spaces = []
    for space in ("user", "mnt"):
        try:
            spaces.append(os.readlink(f"/proc/self/ns/{space}"))
        except OSError:
            spaces.append(None)
    try:
        device = os.stat(paths.state_root()).st_dev
    except OSError:
        device = None
    return fastjson.dumps([os.geteuid(), os.getegid(), os.environ.get("NEXUS_SANDBOX_UNAVAILABLE", ""), device,
                           spaces, lines, [_text(path) for path in READ]])


def _kept(found, now):
    """The answer kept in `found` (the cache file's document) when it is of the shape written and fresh enough."""
    answer = found.get("found") if isinstance(found, dict) else None
    if (not isinstance(answer, dict) or set(answer) != {"landlock", "netns", "overlay"}
            or type(answer["landlock"]) is not int or answer["landlock"] < 0
            or type(answer["netns"]) is not bool or type(answer["overlay"]) is not bool):
        return None
    at = found.get("at")
    return answer if type(at) in (int, float) and now - AGE < at <= now else None


def availability():
    """sandbox.availability's answer ({'landlock', 'netns', 'overlay'}): kept while what it depends on holds."""
    if not sys.platform.startswith("linux"):
        from . import sandbox  # no fork there to spare

        return sandbox.availability()
    wanted, now = key(), time.time()
    try:
        found = fastjson.loads(fileio.read_own(paths.probes_file()) or b"null")
    except ValueError:
        found = None
    if isinstance(found, dict) and found.get("key") == wanted:
        answer = _kept(found, now)
        if answer is not None:
            return answer
    from . import sandbox  # only to ask again

    answer = sandbox.availability()
    try:
        fileio.private_dirs(paths.state_root(), paths.home())
        fileio.write_json(paths.probes_file(), {"key": wanted, "at": now, "found": answer})
    except OSError:
        pass  # a cache that cannot be written is only slower
    return answer


def status(config):
    """What `nexus status` says of confinement: {mode, landlock, netns, overlay, text, and problem when the mode
    asks for what this system cannot give}."""
    found = availability()
    chosen = configlib.get(config, "skills.sandbox.mode", "untrusted")
    shown = {"mode": chosen, **found, "text": describe(found)}
    problems = [f"a call of {skill} ended before its writes to {cwd} were applied (nexus was killed): they are not "
                f"applied, and its next call keeps them in {paths.set_aside_dir()}"
                for _, skill, cwd in stage.leftovers()]
    if chosen != "off" and found["netns"] and not found["overlay"]:
        problems.append(f"{shown['text']}: confined skills do not write the folder they are called from "
                        f"({stage.NO_OVERLAY}, in {paths.stages_dir()})")
    if chosen != "off" and configlib.get(config, "skills.sandbox.fallback", "refuse") == "refuse":
        if not found["landlock"]:
            shown["problem"] = f"{shown['text']}: skills.sandbox.mode is {chosen}, and confined skills are refused"
        elif not found["netns"]:
            shown["problem"] = (f"{shown['text']} (user namespaces blocked): skills.sandbox.mode is {chosen}, and "
                                "confined skills without network are refused; those with network run without a PID "
                                "namespace, and without writing the folder they are called from (no mount "
                                "namespace to stage what they write there)")
    if problems:
        shown["problem"] = "; ".join(([shown["problem"]] if "problem" in shown else []) + problems)
    return shown


def describe(found):
    """'landlock ABI 7, network namespace yes, overlay yes', as status --check and skill show say it."""
    landlock = f"landlock ABI {found['landlock']}" if found["landlock"] else "no landlock"
    return f"{landlock}, network namespace {'yes' if found['netns'] else 'no'}, overlay " \
           f"{'yes' if found.get('overlay') else 'no'}"
