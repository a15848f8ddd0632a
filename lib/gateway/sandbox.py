"""Confinement: what a skill may touch, and the kernel's means of holding it to that (Linux: a user namespace
with PID, mount and network namespaces in it, a seccomp filter and Landlock).

A skill gets what it is given, never "everything but a list". Its permissions are the default widened by its
declaration (metadata.nexus.sandbox) and set per key by the user's config (skills.entries.NAME.sandbox). It
reads the system (SYSTEM: programs, their libraries and settings, what programs read of /proc and /sys), its
own folder, {cwd}, {tmp}, {state}, its grants and where its program lies (installed()), and in those never the
secrets of skills.sandbox.deny nor nexus's own config and state; nothing else (not /tmp, /run/user, /srv, a
home). It writes {tmp} (a private temporary folder of the skill, kept), {state} (its own folder under nexus's
state) and, for a tool skill, {cwd} (the caller's folder) where that is safe (unsafe_cwd), staged: an overlay in
its mount namespace takes what it writes there, applied after the call but what would run later outside the
sandbox (gateway.stage); it has no network and no Unix socket, each a grant of its own (a `unix` grant: where
sockets live is hidden in its mount namespace but the paths it names). Landlock only allows: a denied folder is
left out by allowing each of its siblings instead (never listing their parent, which a rule would list down to
the denied one); the places where a written file would run outside the sandbox (protected()) are left out of
every write grant the same way. `network: false` is a new
network namespace, so UDP and DNS are cut as well as TCP; where user namespaces are blocked, Landlock (ABI 4)
cuts TCP alone, and that is a fallback the config must accept (skills.sandbox.fallback = "warn"). Landlock
does not mediate connect() to a Unix socket at a path, nor terminal ioctls: the seccomp filter cuts those
(seccomp_filter). The program runs in a session of its own under a minimal init in its PID namespace
(process.Contained), so nothing it starts outlives the call. Its environment is made the same way: a fixed set
and what the skill declares or the config gives it (handed).

The ruleset is built here, in the parent (`Confinement`); `Confinement.child` is the step gateway.process
runs in the child before exec. Only confined calls import this module (gateway.plan.confined decides).
"""

import _thread
import os
import struct
import sys

from .. import config as configlib, fastjson, fileio, paths, schema, urls
from ..catalog.status import injected_env
from ..errors import Refused
from . import plan, process, stage

XDG = {"XDG_CONFIG_HOME": ("config", "~/.config"), "XDG_CACHE_HOME": ("cache", "~/.cache"),
       "XDG_DATA_HOME": ("data", "~/.local/share"), "XDG_STATE_HOME": ("state", "~/.local/state")}

# Landlock (include/uapi/linux/landlock.h): the same system call numbers on every architecture
CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION, RULE_PATH_BENEATH, PR_SET_NO_NEW_PRIVS = 1, 1, 38
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
MAKE = sum(1 << bit for bit in range(4, 13))  # remove dir and file, make char, dir, reg, sock, fifo, block, sym
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, ABI 3, ABI 5
BIND_TCP, CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6: no abstract socket, no signal, outside the sandbox
FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE  # the rights a rule on a file (not a folder) may hold
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
# The only device files a confined skill opens (read and written by many tools): no terminal (/dev/tty, /dev/pts,
# /dev/ptmx: a terminal on stdin is handed as the descriptor it is), no camera, microphone or disk
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
# Where Unix sockets live (the user's agents, tmux, D-Bus, Docker): for a skill with a `unix` grant, each is an empty
# tmpfs in its mount namespace, with what it is given there bound back (Landlock does not mediate connect() to a
# path, so hiding the path is what holds a grant to the sockets it names)
SOCKET_PLACES = ("/tmp", "/var/tmp", "/run", "/var/run")
SAID = 20  # lines said of what a call wrote that was set aside; the rest in one
# What a confined skill reads of the system, where it exists: programs, their libraries and settings, the stores of
# Nix and Guix, what programs read of /proc (all of it: a rule on /proc/self would be the gateway's own, and
# Landlock's ptrace scope keeps other processes' environ, fd and mem) and of /sys (CPUs, cgroup limits, huge pages),
# where DNS's answer lies (systemd-resolved, resolvconf: /etc/resolv.conf leads there), and the package databases,
# certificates and font caches tools consult. Not /tmp, /var/tmp, /run/user, /var/mail, /media, /mnt, /srv, /home,
# /root: the user's files and secrets lie there (Kerberos' ticket in /tmp, an agent's socket folder in /run/user).
SYSTEM = ("/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/snap", "/nix/store",
          "/gnu/store", "/run/current-system", "/proc", "/sys/devices/system", "/sys/fs/cgroup",
          "/sys/kernel/mm/transparent_hugepage", "/run/systemd/resolve", "/run/resolvconf", "/var/lib/ca-certificates",
          "/var/lib/dpkg", "/var/lib/rpm", "/var/lib/snapd/snap", "/var/cache/fontconfig")
# Where a program that lies outside SYSTEM is never granted its whole folder (installed()): only its file
WIDE = ("/", "/tmp", "/var/tmp", "/run", "/run/user", "/var", "/var/mail", "/var/spool", "/media", "/mnt", "/srv",
        "/home", "/root", "/dev")
# What a confined skill is handed of the environment (handed), besides what it declares or the config gives it:
# who and where it is, the locale, the kind and size of a terminal, the time zone, the folders nexus sets, and
# what nexus sets for the call (plan.environment)
HANDED = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "COLORTERM", "NO_COLOR", "TZ",
          "COLUMNS", "LINES", "TMPDIR", *XDG, "PYTHONDONTWRITEBYTECODE", "NEXUS_CALLER_CWD", "NEXUS_PARENT_CALL",
          plan.MARK, schema.PROFILE_ENV)
# With a network grant: how to reach it (a proxy whose URL holds no credentials) and which certificates to trust
NETWORK_ENV = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
               "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")
# Written, these run code of the skill's outside its confinement: a shell's startup files, what a desktop or
# systemd starts at login, ssh's keys and authorized_keys, git's and other tools' settings (a pager, a hook, an
# alias is a command), what a login session reads (nexus's own places are added: protected())
ESCALATION = ("~/.bashrc", "~/.bash_profile", "~/.bash_login", "~/.bash_logout", "~/.profile", "~/.zshrc",
              "~/.zshenv", "~/.zprofile", "~/.zlogin", "~/.config/fish", "~/.config/autostart",
              "~/.config/systemd/user", "~/.ssh", "~/.local/bin", "~/.gitconfig", "~/.config/git", "~/.hgrc",
              "~/.config/hg", "~/.npmrc", "~/.config/direnv", "~/.config/mise", "~/.pam_environment",
              "~/.config/environment.d", "~/.xprofile", "~/.xsession", "~/.xinitrc", "~/.config/nexus",
              # what a project's folder runs later (stage.RUN_LATER), the user's own in the home: agents' hooks
              *("~/" + name for name in stage.RUN_LATER if name.startswith(".")))


def fallback(config):
    return configlib.get(config, "skills.sandbox.fallback", "refuse")


def refusal(entry, why):
    """The refusal for want of confinement: why, then what a person can do about it."""
    return Refused("sandbox", f"Skill '{entry['name']}' must run confined, and cannot be here: {why}\n"
                              f"To run it anyway: nexus skill run {entry['name']} --no-sandbox (at a terminal), or "
                              f"nexus config set skills.sandbox.fallback warn")


def check(entry, config, warn):
    """Before a confined call: True when it can be confined; False (warned) where it cannot and the config
    accepts that; Refused otherwise."""
    if landlock_abi():
        return True
    if fallback(config) == "warn":
        warn(f"{entry['name']}: runs unconfined: {NO_LANDLOCK} (skills.sandbox.fallback = \"warn\")")
        return False
    raise refusal(entry, NO_LANDLOCK)


NO_LANDLOCK = "Landlock is not available (Linux 5.13 or later, with landlock among its LSMs)"
NO_MOUNTS = "no mount namespace here (user namespaces are blocked) to stage what it writes there"


def run(entry, config, env, warn, start):
    """start(env, prepare) confined, as the policy says: (what it returned, how it was confined: 'landlock+netns',
    'landlock+pidns' (network granted), 'landlock' (no user namespace)); what it wrote to the caller's folder is
    applied after it (Confinement.applied), what would run outside the sandbox set aside and said (warn). Refused
    when the child could not be confined (user namespaces blocked, say) and the config does not accept less; with
    fallback = "warn", a blocked network namespace leaves Landlock to cut TCP alone, and a unix grant reaches every
    socket."""
    stage.set_aside_leftovers(entry["name"], warn)
    confined = Confinement(entry, config, env)
    for grant, why in confined.dropped.items():
        warn(f"{entry['name']}: its grant {grant} is dropped: {why}")
    try:
        try:
            done = start(confined.env, confined.child)
        except OSError as e:
            if e.filename == "stage":  # no overlay here: it runs without writing {cwd}, and a denied write says why
                confined.finish()
                confined = Confinement(entry, config, env, unstaged=e.strerror)
                done = start(confined.env, confined.child)
                return done, confined.kind
            if e.filename != "sandbox" or not confined.namespaces:
                raise
            # no user namespace here: a skill with network runs without its PID namespace (kill_escaped ends
            # what it leaves behind instead); one without, only where the config accepts Landlock's TCP cut
            if confined.netns and (fallback(config) != "warn" or confined.abi < 4):
                raise refusal(entry, e.strerror) from None
            if confined.netns:
                warn(f"{entry['name']}: {e.strerror}: Landlock cuts its TCP, not UDP or DNS "
                     f"(skills.sandbox.fallback = \"warn\")")
            if confined.unix:  # no mount namespace to hide the other sockets: its grant would reach them all
                if fallback(config) != "warn":
                    raise refusal(entry, f"{e.strerror}: its unix grant would reach every Unix socket") from None
                warn(f"{entry['name']}: {e.strerror}: its unix grant reaches every Unix socket here, not only "
                     f"{', '.join(confined.unix)} (skills.sandbox.fallback = \"warn\")")
            confined.finish()
            confined = Confinement(entry, config, env, fallback_network=True)
            done = start(confined.env, confined.child)
        confined.applied(done, warn)
        return done, confined.kind
    finally:
        confined.finish()


def declared(entry):
    """The skill's own declaration, {network, write, read}, as far as it is well formed."""
    value = entry.get("sandbox")
    return value if isinstance(value, dict) else {}


def permissions(entry, config):
    """{network, write, read}: the declaration, each key set instead by skills.entries.NAME.sandbox when given;
    the folders as written ({cwd}, ~ and all)."""
    given = configlib.skill_entry(config, entry).get("sandbox")
    given = given if isinstance(given, dict) else {}
    own = declared(entry)
    found = {key: given[key] if key in given else own.get(key) for key in ("network", "write", "read", "unix")}
    return {"network": found["network"] is True, "write": _strings(found["write"]), "read": _strings(found["read"]),
            "unix": _strings(found["unix"])}


def grant(entry, network=False, write=(), read=()):
    """Widen what the skill may do when confined, in the config (skills.entries.KEY.sandbox, whose lists start
    from the skill's declaration): `nexus skill allow` and `skills add --allow-network`. True when it changed."""
    from ..config import edit, keys  # a grant only: config.edit brings tomllib and tomli-w

    table, own_declared = ("skills", "entries", configlib.own_key(entry), "sandbox"), declared(entry)
    wanted = {key: value for key, value in (("network", network), ("write", list(write)), ("read", list(read)))
              if value}

    def changes(doc):
        own = keys.lookup(doc, table)[1]
        own = own if isinstance(own, dict) else {}
        found = []
        for key, value in wanted.items():
            if key == "network":
                found += [] if own.get("network", own_declared.get("network")) is True else [((*table, key), True)]
                continue
            current = _strings(own.get(key, own_declared.get(key, [])))
            merged = list(dict.fromkeys(current + value))
            found += [] if merged == current and key in own else [((*table, key), merged)]
        return found

    before, after = edit.change(changes)
    return before != after


def widening(new, old, granted):
    """What declaration `new` asks beyond declaration `old` and what is `granted` ({network, write, read}), as
    `skills add` and `update` ask it ('the network; writing ~/x'); '' when nothing."""
    wants = ["the network"] if new.get("network") is True and old.get("network") is not True and \
        not granted.get("network") else []
    for key, doing in (("write", "writing"), ("read", "reading"), ("unix", "the Unix sockets")):
        more = [p for p in _strings(new.get(key)) if p not in _strings(old.get(key)) + list(granted.get(key, []))]
        wants += [f"{doing} {', '.join(more)}"] if more else []
    return "; ".join(wants)


def _strings(value):
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def effective(entry, config):
    """What `skill show` and `skills add` show: confined or not, and the permissions it has (folders as written),
    but a write grant that lies in a protected place (~/.ssh, say), which a call drops."""
    allowed = permissions(entry, config)
    write = writable(entry, allowed)
    if allowed["write"]:  # most skills have no grant: protected() is not worth its stats for them
        guarded = [os.path.realpath(expand(p, {})) for p in protected(config)]
        write = [p for p in write if p.startswith("{") or not _guarded(os.path.realpath(expand(p, {})), guarded)]
    return {"confined": plan.confined(entry, config), "network": allowed["network"], "write": write,
            "read": allowed["read"], "unix": allowed["unix"]}


def said(name, allowed):
    """One line of what a skill will be allowed (`allowed`: effective()), as `skills add` and `update` say it."""
    if not allowed["confined"]:
        return f"{name}: runs unconfined (skills.sandbox.mode)"
    reads = "; reads " + ", ".join(allowed["read"]) if allowed["read"] else ""
    return (f"{name}: runs confined: network {'yes' if allowed['network'] else 'no'}; writes "
            f"{', '.join(allowed['write'])}{reads} (to grant more: nexus skill allow {name} ...)")


def writable(entry, allowed):
    """The folders a confined skill writes, as written: {tmp}, {state}, {cwd} for a tool skill, and its grants."""
    return list(dict.fromkeys(["{tmp}", "{state}"] + (["{cwd}"] if entry.get("type") == "tool" else [])
                              + allowed["write"]))


def availability():
    """{'landlock': its ABI (0: none), 'netns': whether a process may make a network namespace, 'overlay':
    whether it may mount the overlay a stage is (gateway.stage), where nexus keeps its stages}: a fork to see."""
    abi = landlock_abi()
    libc = process.libc() if hasattr(os, "fork") and process.linux() else None
    netns = overlay = False
    if libc is not None:
        try:
            probe = stage.Probe()
        except OSError:
            probe = None  # nexus's state cannot be written (a read-only home): no stage could be made either
        pid = os.fork()
        if pid == 0:
            if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS) != 0:
                os._exit(1)
            os._exit(0 if probe and probe.mounts(libc) else 2)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if probe:
            probe.remove()
        netns, overlay = code in (0, 2), code == 0
    return {"landlock": abi, "netns": netns, "overlay": overlay}


def landlock_abi():
    """The kernel's Landlock ABI version, 0 where there is none (not Linux, too old, or turned off)."""
    if not process.linux():
        return 0
    if os.environ.get("NEXUS_SANDBOX_UNAVAILABLE"):  # to see (and test) what a system without it does
        return 0
    version = process.libc().syscall(CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
    return max(version, 0)


def expand(path, places):
    """A folder as written in a declaration or the config, made absolute: {cwd}, {tmp}, {state}, ~ (and {uid},
    which the known tools' table uses)."""
    path = path.replace("{uid}", str(os.getuid()))
    for name, value in places.items():
        if path == name or path.startswith(name + "/"):
            return os.path.normpath(value + path[len(name):])
    return os.path.abspath(os.path.expanduser(path))


def _unsound(grant, places, writes):
    """Why a grant as written is dropped, or None: a . or .. in it (unsound(): refused where it is read, and
    never resolved here); inside nexus's state but the skill's own {tmp} and {state} (other skills' tokens, the
    caches); inside a place the skill writes (`writes`: absolute, as written) while its real path leaves that place
    (a link there may be the skill's own doing: {state}/cache -> ~/.ssh)."""
    why = unsound(grant)
    if why:
        return why
    path = expand(grant, places)
    real, state = _real(path), paths.state_root()
    own = (places["{tmp}"], places["{state}"])
    if (paths.within(path, state) or paths.within(real, _real(state))) and not any(paths.within(path, o) for o in own):
        return "it lies in nexus's state, where only {tmp} and {state} are the skill's"
    left = next((w for w in writes if paths.within(path, w) and not paths.within(real, _real(w))), None)
    return f"it leads out of {left}, which the skill writes, through a link (to {real})" if left else None


def unsound_grants(entry, allowed, places, unsafe=None):
    """(where the skill writes, or wrote in an earlier call, as written; {grant: why it is dropped}, as
    _unsound says), as a call and `skill show` find them: a grant in a place the skill writes never follows a
    link out of it. `unsafe`: why {cwd} is one no skill writes (unsafe_cwd), if it is."""
    writes = [expand(p, places) for p in writable(entry, allowed) if not (unsafe and p.split("/")[0] == "{cwd}")]
    dropped = {}
    for grant in allowed["write"] + allowed["read"]:
        why = _unsound(grant, places, writes)
        if why:
            dropped.setdefault(grant, why)
    return writes, dropped


def unsound(folder):
    """Why a folder as written may not be a grant, or None: a . or .. in it, which could lead out of the place it
    names ({state}/../../other/data)."""
    return "it holds . or .." if any(part in (".", "..") for part in folder.split("/")) else None


def _resolved(entry, config, env, places, allowed, namespaces, unstaged):
    """What a confined call's ruleset is made of, as real paths: {protect, cwd, withheld, write, read, deny,
    installed, unread, system, git, xdg}. Taken from the skill's cache (state/sandbox/NAME.json) when every answer
    of the file system it was built on is still the same (Resolution), built and cached otherwise."""
    key = _key(entry, config, env, places, allowed, namespaces, unstaged)
    path = paths.sandbox_cache(entry["name"])
    cached = _cached(path)
    for kept in cached:
        found = _valid(kept, key)
        if found is not None:
            return found
    look = _local.look = Resolution()
    try:
        found = _resolve(entry, config, env, places, allowed, namespaces, unstaged)
    finally:
        _local.look = None
    # an answer of lexists() or islink() on a path realpath() looked at is its sign in `seen`, checked first
    asked = [a for a in look.asked.values() if not (a[0] in ("lexists", "islink") and a[1][0] in look.seen)]
    kept = {"key": key, "seen": look.seen, "asked": asked, "found": found}
    # a path that gave two answers while it was built (a link flipped by a concurrent call): `found` may rest on
    # either, so no cache could say when it is stale
    if look.torn or _valid(kept, key) is None:
        return found
    try:
        fileio.private_dirs(os.path.dirname(path), paths.state_root())
        fileio.write_atomic(path, fileio.encode(fastjson.dumps(
            [kept, *[c for c in cached if isinstance(c, dict) and c.get("key") != key][:KEPT - 1]])))
    except (OSError, TypeError, ValueError):
        pass  # a cache not written only costs the next call its time
    return found


def _resolve(entry, config, env, places, allowed, namespaces, unstaged):
    """_resolved, built: every question of the file system through _real and _asked, so that a Resolution
    records it."""
    _asked("file", entry.get("filePath"))  # its SKILL.md, as read
    protect = sorted({_real(q) for p in protected(config) for q in in_homes(p, places)})
    # {cwd} where a file written would be run later, unconfined (~/.bashrc, ~/bin, ~/.config/...): none of it
    cwd = _real(places["{cwd}"])
    unsafe = unsafe_cwd(cwd, protect)
    withheld = unsafe or (None if namespaces else NO_MOUNTS) or unstaged
    writes, dropped = unsound_grants(entry, allowed, places, unsafe)
    grants = [p for p in writable(entry, allowed) if p not in dropped and not (withheld and p.split("/")[0] == "{cwd}")]
    # real paths, as the denied ones are: a grant through a link must not cover what is denied inside it
    write = [_real(expand(p, places)) for p in grants]
    # reads: the system (SYSTEM), and what is given: its own folder, {cwd} where it is safe, its grants; and where
    # its program lies (a tool installed in ~/.local, ~/.cargo, a venv), which is inferred, so it never takes a
    # path off the deny list
    read = [_real(expand(p, places)) for p in allowed["read"] if p not in dropped] + [_real(entry["dir"])]
    read += [] if withheld else [cwd]
    deny = deny_list(config, places)
    homes = home_folders()
    named = {q for p in allowed["read"] + allowed["write"] if p not in dropped for q in in_homes(p, places, homes)}
    denied = _denied(deny, named)
    # a grant whose real path lies in a denied one it does not name (a link swapped in): dropped
    for grant in [p for p in allowed["write"] + allowed["read"] if p not in dropped]:
        real, given = _real(expand(grant, places)), in_homes(grant, places, homes)
        held = next((d for d in deny if _real(d) in denied and paths.within(real, _real(d))
                     and not any(paths.within(g, d) for g in given)), None)
        if held:
            dropped[grant] = f"it leads into {held}, which skills.sandbox.deny holds, through a link"
            write = write[:2] + [p for p in write[2:] if p != real]
            read = [p for p in read if p != real]
    found = installed(entry, config, env, [] if withheld else [cwd], deny,
                      made=[w for p, w in zip(writable(entry, allowed), writes) if p.split("/")[0] != "{cwd}"])
    read += found
    # the homes are left out of the system's folders that hold one (a service's home in /opt, /var/lib), unless a
    # grant holds it; a home that is / or holds a system folder, as a service's may, is not left out whole
    unread = [h for h in home_folders() if _asked("isdir", h) and not any(paths.within(h, p) for p in read)
              and not any(paths.within(top, h) for top in SYSTEM)]
    # no grant makes these writable: a grant that holds one is narrowed to what lies around it, one inside is
    # dropped ({tmp} and {state} lie in nexus's home, and are the skill's own)
    write = write[:2] + [p for p in write[2:] if not _guarded(p, protect)]
    resolv = os.path.dirname(_real("/etc/resolv.conf"))  # where DNS's answer lies, when elsewhere
    system = [*SYSTEM, *([] if any(paths.within(resolv, top) for top in SYSTEM) or resolv in WIDE else [resolv])]
    xdg = {}
    for var, (name, default) in XDG.items():
        real = os.path.abspath(os.path.expanduser(env.get(var) or default))
        if not any(paths.within(real, p) or paths.within(p, real) for p in read + write):
            xdg[var] = os.path.join(places["{state}"], name)  # where tools cache and refresh their tokens
    return {"protect": protect, "cwd": cwd, "withheld": withheld, "write": write, "read": read, "deny": denied,
            "installed": found, "unread": unread, "system": system, "git": _git_settings(read, denied, env), "xdg": xdg,
            "dropped": dropped}


CACHE_FORMAT = 2
# The modules whose code and data a resolution is computed with (config/keys: the default deny list, SECRETS)
RESOLVING = ("__init__.py", "gateway/sandbox.py", "gateway/plan.py", "gateway/stage.py", "paths.py",
             "config/__init__.py", "config/keys.py", "catalog/status.py", "fileio.py")


def _key(entry, config, env, places, allowed, namespaces, unstaged):
    """All a Resolution depends on besides the file system's answers, as the sha256 of its text (the text holds
    the skill's config entry, apiKey and all: never stored): nexus's code (its version, and each of RESOLVING's
    files as the file system has it), the skill's entry (its SKILL.md read) and permissions, the config's sandbox
    settings and skill sources, the variables of the call and of nexus that name folders, who runs it, and where
    nexus is."""
    import site  # loaded by Python's start-up already: its user folders

    from .. import __version__

    names = ("PATH", "HOME", "NEXUS_CALLER_CWD", "XDG_RUNTIME_DIR", *XDG)
    ours = sorted((k, v) for k, v in os.environ.items()
                  if k in names or k.startswith(("NEXUS_", "XDG_", "PYTHON")) or k == "MANAGED_SKILLS_DIR")
    text = fastjson.dumps([CACHE_FORMAT, __version__, _code(), entry, allowed, configlib.get(config, "skills.sandbox"),
                           [env.get(k) for k in names], ours, places, os.getcwd(), namespaces, unstaged, os.geteuid(),
                           os.getuid(), os.getegid(), sys.prefix, sys.base_prefix, site.getusersitepackages(),
                           paths.home(), paths.config_file(), paths.state_root(), configlib.sources(config),
                           configlib.bin_path(config)])
    return _sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _code():
    """Where nexus's package lies, and each of RESOLVING's files as it is now (inode, size, modified and changed
    times): a new version, an edit, a reinstall that keeps the times (Nix, a reproducible wheel) all differ."""
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [top, *(_file(os.path.join(top, name)) for name in RESOLVING)]


def _sha256(data):
    try:  # the C module alone: hashlib would bring OpenSSL onto a confined call's way
        from _sha256 import sha256
    except ImportError:
        try:
            from _sha2 import sha256  # Python 3.12's name of it
        except ImportError:
            from hashlib import sha256  # a Python built without it
    return sha256(data)



KEPT = 4  # resolutions kept a skill: a few callers' folders, a fallback's


def _cached(path):
    """The resolutions cached at `path`, when the file is ours (a regular file of our user, not readable by
    others); [] otherwise (none, another user's, torn)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or info.st_mode & 0o170077 != 0o100000:
            return []
        with os.fdopen(fd, "rb", closefd=False) as f:
            cached = fastjson.loads(f.read())
        return cached if isinstance(cached, list) else []
    except (OSError, ValueError):
        return []
    finally:
        os.close(fd)


def _valid(kept, key):
    """The resolution `kept` when it was built for `key` and each answer of the file system it was built on is
    the same now; else None (stale, or not a resolution at all)."""
    try:
        if kept["key"] != key or any(_sign(p) != sign for p, sign in kept["seen"].items()):
            return None
        if any(ASKED[question](*args) != answer for question, args, answer in kept["asked"]):
            return None
        found = kept["found"]
        return found if isinstance(found, dict) and set(found) == RESOLVED and _typed(found) else None
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _typed(found):
    """Whether each field of a resolution has its type: a string where a list is meant ("write": "/home") would
    be read as the rules "/", "h", ..."""
    lists = all(type(found[k]) is list and all(type(p) is str and p.startswith("/") for p in found[k])
                for k in ("protect", "write", "read", "deny", "installed", "unread", "system"))
    tables = all(type(found[k]) is dict and all(type(v) is str for v in found[k].values())
                 for k in ("git", "xdg", "dropped"))
    return lists and tables and type(found["cwd"]) is str and type(found["withheld"]) in (str, type(None))


RESOLVED = {"protect", "cwd", "withheld", "write", "read", "deny", "installed", "unread", "system", "git", "xdg",
            "dropped"}


class Resolution:
    """The file system's answers a resolution was built on: `seen`, each path realpath() looked at, as _sign
    says it (a link and where it leads, a folder, another file, nothing); `asked`, each other question
    (ASKED) with its answer. The same answers give the same resolution."""

    def __init__(self):
        self.seen, self.asked, self.torn = {}, {}, False

    def real(self, path):
        """os.path.realpath(path) (Python 3.11's, non-strict), each component it looks at recorded."""
        path, _ = self._join("", path, {})
        return os.path.abspath(path)

    def _join(self, path, rest, seen):
        if rest.startswith("/"):
            rest, path = rest[1:], "/"
        while rest:
            name, _, rest = rest.partition("/")
            if not name or name == ".":
                continue
            if name == "..":
                if path:
                    path, name = os.path.split(path)
                    if name == "..":
                        path = os.path.join(path, "..", "..")
                else:
                    path = ".."
                continue
            newpath = os.path.join(path, name)
            sign = _sign(newpath)
            self.torn = self.torn or self.seen.setdefault(newpath, sign) != sign
            if not sign.startswith("L"):
                path = newpath
                continue
            if newpath in seen:
                path = seen[newpath]
                if path is not None:
                    continue
                return os.path.join(newpath, rest), False
            seen[newpath] = None
            path, ok = self._join(path, sign[1:], seen)
            if not ok:
                return os.path.join(path, rest), False
            seen[newpath] = path
        return path, True


def _sign(path):
    """What realpath() learns of `path`: 'L' and where it leads for a link, 'd' a folder, 'f' another file, '-'
    nothing there (or nothing it may look at)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "-"
    if mode & 0o170000 == 0o120000:
        try:
            return "L" + os.readlink(path)
        except OSError:
            return "-"
    return "d" if mode & 0o170000 == 0o040000 else "f"


_local = _thread._local()  # the Resolution being built by this thread (nexus-mcp's calls build theirs at once)


def _real(path):
    """os.path.realpath, recorded while a resolution is built."""
    look = getattr(_local, "look", None)
    return look.real(path) if look else os.path.realpath(path)


def _asked(question, *args):
    """ASKED[question](*args), its answer recorded while a resolution is built."""
    answer = ASKED[question](*args)
    look = getattr(_local, "look", None)
    if look:
        key = fastjson.dumps([question, args])
        look.torn = look.torn or key in look.asked and look.asked[key][2] != answer
        look.asked[key] = [question, args, answer]
    return answer


def _head(path):
    """The first line of a file (a #! line, at most 256 bytes) as Latin-1 text, None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read(256).split(b"\n")[0].decode("latin-1")
    except (OSError, TypeError):
        return None


def _links(folder):
    """The symlinks in `folder`, as paths."""
    try:
        return [e.path for e in os.scandir(folder) if e.is_symlink()]
    except OSError:
        return []


def _raw_homes():
    """$HOME and the password entry's home, as written."""
    import pwd  # a confined call, or what it grants, only

    found = [os.path.expanduser("~")]
    try:
        found.append(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:  # a uid without an entry (a container's): $HOME alone
        pass
    return found


def _file(path):
    """A file's identity and version (device, inode, size, modification time), None when there is none."""
    try:
        info = os.stat(path)
    except (OSError, TypeError):
        return None
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def _which(name, dirs):
    from ..catalog import status  # which(), as plan.command finds the program

    return status.which(name, dirs)


# The questions a resolution asks the file system besides realpath(), each cheap to ask again: answers in JSON's types
ASKED = {"lexists": os.path.lexists, "exists": os.path.exists, "isdir": os.path.isdir, "islink": os.path.islink,
         "which": _which, "head": _head, "links": _links, "homes": _raw_homes, "file": _file,
         "matching": lambda pattern: _matching(pattern)}


class Confinement:
    """One confined call: the folders it gets, its environment's changes, and the ruleset for its child.

        confined = sandbox.Confinement(entry, config, env)   # Refused when it cannot be confined
        child = process.Child(argv, env=confined.env, prepare=confined.child, ...)
        confined.finish()                                      # after the call: the ruleset closed
    """

    def __init__(self, entry, config, env, fallback_network=False, unstaged=None):
        self.name = entry["name"]
        self.abi = landlock_abi()
        if not self.abi:
            raise refusal(entry, NO_LANDLOCK)
        allowed = permissions(entry, config)
        self.network, self.unix = allowed["network"], allowed["unix"]
        self.namespaces = not fallback_network  # a user namespace, and a PID namespace in it (process.Contained)
        self.netns = not self.network and self.namespaces
        self.gateway = os.getpid()
        state, self.tmp = paths.sandbox_folders(self.name)
        for made in (state, self.tmp):
            if not os.path.isdir(made):
                fileio.private_dirs(made, paths.state_root())
        places = {"{cwd}": env.get("NEXUS_CALLER_CWD") or os.getcwd(), "{tmp}": self.tmp, "{state}": state}
        found = _resolved(entry, config, env, places, allowed, self.namespaces, unstaged)
        self.protect, cwd, self.withheld = found["protect"], found["cwd"], found["withheld"]
        self.write, self.read, self.deny = found["write"], found["read"], found["deny"]
        self.installed, self.unread, self.system = found["installed"], found["unread"], found["system"]
        self.dropped = found["dropped"]
        WITHHELD[self.name] = (cwd, self.withheld) if self.withheld else None
        # what it writes to {cwd} is staged (an overlay in its mount namespace) and applied after the call
        self.stage = None
        if not self.withheld and cwd in self.write:
            try:
                self.stage = stage.Stage(self.name, cwd, SYSTEM)
            except OSError as e:  # nexus's state is not writable: it runs without {cwd}, and a denied write says why
                self.withheld = f"its writes cannot be staged in {paths.stages_dir()}: {e.strerror}"
                WITHHELD[self.name] = (cwd, self.withheld)
                self.write.remove(cwd)
        self.deferred = []  # the rules on paths in {cwd}: added in the child, on the overlay's files
        self.hidden, self.shown = self._sockets_hidden(env, places, cwd) if self.unix and self.namespaces else ([], [])
        self.given_env = env  # the call's PATH: a folder on it is never written through the stage
        self.env = dict(handed(entry, config, env, self.network), TMPDIR=self.tmp)
        self.env.update({name: value for name, value in found["git"].items() if name not in self.env})
        self.env.update(found["xdg"])
        self.kind = "landlock+netns" if self.netns else "landlock+pidns" if self.namespaces else "landlock"
        self.fd = None
        self.filter = seccomp_filter(unix=bool(self.unix))
        self.child = process.Contained(self._steps, self.namespaces)
        try:
            self.fd = self._ruleset()
        except BaseException:
            self.finish()
            raise

    def _ruleset(self):
        """The Landlock ruleset, built here once; the child only restricts itself with it."""
        fs = EXECUTE | WRITE_FILE | READ_FILE | READ_DIR | MAKE | (REFER if self.abi >= 2 else 0) | (
            TRUNCATE if self.abi >= 3 else 0)
        # device ioctls (a camera's, a terminal's) are handled and granted to none: those of files opened before
        # (the descriptors 0-2 handed) and the common ones (FIONREAD, ...) stay
        handled = fs | (IOCTL_DEV if self.abi >= 5 else 0)
        # Landlock cuts TCP only where there is no network namespace to cut it all ("Network is unreachable")
        net = BIND_TCP | CONNECT_TCP if self.abi >= 4 and not self.network and not self.netns else 0
        # abstract sockets are scoped here, a `unix` grant or not (it names paths); socket(AF_UNIX): seccomp_filter
        scoped = (SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX) if self.abi >= 6 else 0
        attr = struct.pack("QQQ", handled, net, scoped)[:8 if self.abi < 4 else 16 if self.abi < 6 else 24]
        libc = process.libc()
        fd = libc.syscall(CREATE_RULESET, attr, len(attr), 0)
        if fd < 0:
            raise Refused("sandbox", f"Landlock refused a ruleset: {os.strerror(process.errno())}")
        read = EXECUTE | READ_FILE | READ_DIR
        rules = [(p, READ_FILE | WRITE_FILE | (TRUNCATE if self.abi >= 3 else 0), None) for p in DEVICES]
        rules.append(("/dev", READ_DIR, True))  # /dev itself is listed: its devices are only those of DEVICES
        for top, deny in [(p, sorted({*self.deny, *self.unread})) for p in self.system] + [
                (p, sorted({*self.deny, "/dev"})) for p in self.read]:  # a grant of / reads no terminal in /dev
            rules += _allowed(top, deny, read)
        for top in self.write:
            rules += _allowed(top, sorted(set(self.deny + self.protect)), fs)
        # a rule holds for the file it was opened on: in {cwd}, the overlay's files, opened in the child once mounted
        self.deferred = [r for r in rules if self.stage and paths.within(r[0], self.stage.cwd)]
        try:
            _add_rules(libc, fd, [r for r in rules if r not in self.deferred])
        except OSError as e:
            os.close(fd)
            raise Refused("sandbox", e.strerror) from None
        return fd

    def _steps(self):
        """In the child, before exec: its own user and PID namespaces (and network: none), then no new
        privileges, the seccomp filter and the ruleset; process.Contained then starts the program under an init."""
        libc = process.libc()
        if self.namespaces:
            uid, gid = os.geteuid(), os.getegid()
            if libc.unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | (CLONE_NEWNET if self.netns else 0)) != 0:
                raise OSError(process.errno(), ("no network namespace: " if self.netns else "no PID namespace: ")
                              + os.strerror(process.errno()), "sandbox")
            for name, text in (("uid_map", b"%d %d 1" % (uid, uid)), ("setgroups", b"deny"),
                               ("gid_map", b"%d %d 1" % (gid, gid))):
                fd = os.open(f"/proc/self/{name}", os.O_WRONLY | os.O_CLOEXEC)  # the same ids inside: files keep
                try:  # their owners
                    os.write(fd, text)
                finally:
                    os.close(fd)
            self._mount(libc)
        if os.geteuid() == 0:  # root's program would start with every capability (in its namespace): it gets none
            _no_root(libc)
        if (libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                or self.filter is not None and libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, self.filter[0], 0, 0) != 0
                or libc.syscall(RESTRICT_SELF, self.fd, 0) != 0):
            raise OSError(process.errno(), "confinement: " + os.strerror(process.errno()), "sandbox")

    def _sockets_hidden(self, env, places, cwd):
        """For a `unix` grant: (the folders where sockets live, to hide: SOCKET_PLACES and the runtime folder;
        what it is given in them, to bind back: its sockets, its folders and program, {cwd}, the system's)."""
        runtime = env.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
        hidden = list(dict.fromkeys(os.path.realpath(p) for p in (*SOCKET_PLACES, runtime) if os.path.isdir(p)))
        hidden = [h for h in hidden if h != "/" and not any(paths.within(h, o) and h != o for o in hidden)]
        given = [os.path.realpath(expand(p, places)) for p in self.unix] + self.read + self.write + [cwd]
        given += [os.path.realpath(p) for p in (*SYSTEM, "/etc/resolv.conf")]  # /run/systemd/resolve: DNS
        shown = sorted({g for g in given if any(paths.within(g, h) for h in hidden) and os.path.lexists(g)})
        # a system folder there that is a link (NixOS: /run/current-system) is made again as the link it is
        self.relinked = [(p, os.readlink(p)) for p in SYSTEM
                         if any(paths.within(p, h) for h in hidden) and os.path.islink(p)]
        return hidden, [g for g in shown if not any(paths.within(g, o) and g != o for o in shown)]

    def _mount(self, libc):
        """In the child's own mount namespace: where sockets live hidden (a `unix` grant), the stage over {cwd},
        and the rules on the files under it."""
        if not self.stage and not self.hidden:
            return
        if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
            raise OSError(process.errno(), "no mount namespace: " + os.strerror(process.errno()), "sandbox")
        layers = self.stage.layers() if self.stage else None
        if self.hidden:
            self._hide(libc)
        if self.stage:
            self.stage.mount(libc, layers)
        else:
            try:
                os.chdir(os.getcwd())  # its folder, as the new mounts show it
            except OSError:
                os.chdir("/")
        _add_rules(libc, self.fd, self.deferred)

    def _hide(self, libc):
        """Each of `hidden` covered by an empty tmpfs, and each of `shown` bound back at its path (a socket onto an
        empty file): the same files, so the rules on them hold."""
        found = [(path, os.open(path, os.O_PATH | os.O_CLOEXEC)) for path in self.shown]
        for folder in self.hidden:
            if libc.mount(b"tmpfs", os.fsencode(folder), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755") != 0:
                raise OSError(process.errno(), f"cannot hide {folder}: {os.strerror(process.errno())}", "sandbox")
        for path, fd in found:
            source = f"/proc/self/fd/{fd}"
            if os.path.isdir(source):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
            if libc.mount(os.fsencode(source), os.fsencode(path), None, MS_BIND | MS_REC, None) != 0:
                raise OSError(process.errno(), f"cannot show {path}: {os.strerror(process.errno())}", "sandbox")
            os.close(fd)
        for path, target in self.relinked:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                os.symlink(target, path)
            except FileExistsError:
                pass  # a folder made for what was bound back below it

    def applied(self, done, warn):
        """After the call: its writes to {cwd} applied but what would run outside the sandbox later, which is set
        aside and said, a line each; a call that succeeded then fails (exit 1), so that an agent knows what it
        wrote is not all there."""
        if not self.stage:
            return
        kept = self.stage.apply(self.given_env)
        self.stage.remove()
        self.stage = None
        if kept:
            from .. import style  # something was set aside: rare

            kept = [(style.visible(path), why, style.visible(where)) for path, why, where in kept]
        for path, why, where in kept[:SAID]:
            warn(f"{self.name}: not applied: {path} ({why}); kept in {where}")
        if len(kept) > SAID:
            warn(f"{self.name}: and {len(kept) - SAID:,} more not applied, kept in {os.path.dirname(kept[-1][2])}")
        if kept and done.exit == 0:
            done.exit = 1
            done.set_aside = f"{len(kept)} of its writes would run outside the sandbox later: not applied " \
                             f"({', '.join(path for path, _, _ in kept[:3])}{', ...' if len(kept) > 3 else ''})"

    def finish(self):
        """After the call: the ruleset is closed; a stage not applied (the call could not start) is removed."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.stage:
            self.stage.remove()
            self.stage = None


def _add_rules(libc, fd, rules):
    """Each (path, access, whether a folder: None when unknown) added to the Landlock ruleset `fd`; a path not
    there is nothing to allow. OSError when Landlock refuses one."""
    for path, access, folder in rules:
        try:
            target = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if folder is None:
                folder = os.stat(target).st_mode & 0o170000 == 0o040000
            rule = struct.pack("=Qi", access if folder else access & FILE_ONLY, target)
            if libc.syscall(ADD_RULE, fd, RULE_PATH_BENEATH, rule, 0) != 0:
                error = process.errno()
                raise OSError(error, f"Landlock refused a rule for {path}: {os.strerror(error)}")
        finally:
            os.close(target)


PR_CAPBSET_DROP, PR_SET_SECUREBITS, SECBIT_NOROOT, SECBIT_NOROOT_LOCKED = 24, 28, 1 << 0, 1 << 1


def _no_root(libc):
    """In the child of root's call: exec grants no capability (no bounding set, and uid 0 is not special to exec),
    so that the program, still uid 0 (files keep their owner: git, ssh), holds none, and cannot reach the child
    and init it runs under, which keep theirs (gateway.process._contain)."""
    fd = os.open("/proc/sys/kernel/cap_last_cap", os.O_RDONLY | os.O_CLOEXEC)
    try:
        last = int(os.read(fd, 16))
    finally:
        os.close(fd)
    for cap in range(last + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    if libc.prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED, 0, 0, 0) != 0:
        raise OSError(process.errno(), "cannot drop root's capabilities: " + os.strerror(process.errno()))


def installed(entry, config, env=None, written=(), deny=None, made=()):
    """What a skill's program needs to read where SYSTEM does not hold it: for the program and the interpreter of
    its #! line (`#!/usr/bin/env NAME`: NAME as found on the PATH of `env`), each as found and as its real path,
    its folder, or for one in a bin/ folder, that prefix's bin, lib, lib64, libexec and pyvenv.cfg (a venv,
    ~/.local, ~/.cargo, ~/.nvm/versions/...); in a folder of WIDE, a home or one holding a home, its file alone.
    Inferred from what the skill names, so never more: no link (a prefix's lib that leads to ~/.ssh), nothing a
    confined skill writes (nexus's state, which holds every skill's {tmp} and {state}; `written`: {cwd}), nothing
    of the deny list (`deny`: deny_list(), when known); and nothing of a program that lies where the skill writes
    (`made`: its write grants, as written), whose links and #! line it may have made itself. Real paths, in the
    order found."""
    from ..catalog import status  # search_dirs(), as plan.command finds the program

    env = os.environ if env is None else env
    found = _asked("which", plan.runs(entry) or "", status.search_dirs(config, env))
    found = None if found and any(paths.within(os.path.abspath(found), w) for w in made) else found
    programs = [found] if found else []
    line = _asked("head", found) if found else None
    words = line.encode("latin-1")[2:].split() if line and line.startswith("#!") else []
    if words:
        programs.append(os.fsdecode(words[0]))
    if len(words) > 1 and os.path.basename(words[0]) == b"env":  # the first word that is neither option nor VAR=
        name = next((os.fsdecode(w) for w in words[1:] if not w.startswith(b"-") and b"=" not in w), None)
        programs += [p for p in [name and _asked("which", name, status.search_dirs(config, env))] if p]
    programs = [p for p in programs if not any(paths.within(os.path.abspath(p), w) for w in made)]
    homes = home_folders()
    held = [_real(p) for p in [paths.state_root(), *written, *(deny or deny_list(config, {}))]]

    def wide(folder):
        return folder in WIDE or any(paths.within(h, folder) for h in homes)

    folders = []
    for program in programs:
        for path in (os.path.abspath(program), _real(program)):
            where = _real(os.path.dirname(path))
            prefix = os.path.dirname(where)
            if any(paths.within(where, top) for top in SYSTEM):
                continue
            if os.path.basename(where) == "bin" and not wide(prefix):
                folders += [where] + [os.path.join(prefix, name) for name in ("lib", "lib64", "libexec", "pyvenv.cfg")]
            else:
                folders.append(os.path.join(where, os.path.basename(path)) if wide(where) else where)
    return [f for f in dict.fromkeys(folders) if _asked("lexists", f) and not _asked("islink", f)
            and not any(paths.within(f, h) for h in held)]


def home_folders():
    """The user's home folders, real: $HOME's and the password entry's, which differ where a harness, a service
    or an MCP client sets HOME elsewhere (or to /): what is left out of reads and the deny list's ~ follow both."""
    return list(dict.fromkeys(_real(h) for h in _asked("homes") if h))


def in_homes(path, places, homes=None):
    """A path as written, made absolute (expand): one for each of the user's homes when it starts with ~."""
    if path == "~" or path.startswith("~/"):
        return [os.path.normpath(home + "/" + path[1:]) for home in homes or home_folders()]
    return [expand(path, places)]


def _git_settings(read, deny, env):
    """What git needs to work confined: no optional lock (`git status` would rewrite .git/index, which a staged
    {cwd} sets aside: the call would fail), and no global config where ~/.gitconfig is not given to read (git
    takes its "Permission denied" as fatal, a missing file not). What the skill's environment sets stays: the
    caller leaves those out."""
    found = {"GIT_OPTIONAL_LOCKS": "0"}
    config = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".gitconfig")
    real = _real(config)
    if _asked("exists", config) and (not any(paths.within(real, p) for p in read) or any(paths.within(real, d) for d in deny)):
        found["GIT_CONFIG_GLOBAL"] = "/dev/null"
    return found


def deny_list(config, places):
    """skills.sandbox.deny made absolute, its ~ in each of the user's homes and its * matched, with nexus's own
    config and state."""
    from ..config import keys  # its SECRETS: a confinement built anew (not cached), what a grant shows or hints

    homes = home_folders()
    found = [q for p in configlib.get(config, "skills.sandbox.deny", keys.SECRETS) for q in in_homes(p, places, homes)]
    found += ROOT_SECRETS if os.geteuid() == 0 else []  # what no other account may read anyway
    found = [match for path in found for match in (_asked("matching", path) if "*" in path else [path])]
    return found + [paths.config_file(), paths.state_root()]


# The system's secrets, which only root reads: its confined skills are denied them (the system is read whole)
ROOT_SECRETS = ["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/ssh/ssh_host_*_key",
                "/etc/ssl/private", "/etc/wireguard", "/etc/NetworkManager/system-connections", "/etc/krb5.keytab",
                "/etc/rancher", "/etc/kubernetes", "/etc/gitlab-runner", "/etc/sudoers", "/etc/sudoers.d"]


def _matching(pattern):
    """The paths that match `pattern`, whose * stands for any run of characters in a name (hidden ones too):
    glob's meaning, without the regular expressions glob would bring onto a confined call's way."""
    found = ["/"]
    for part in pattern.strip("/").split("/"):
        if "*" not in part:
            found = [os.path.join(p, part) for p in found]
            continue
        head, *middle, tail = part.split("*")
        matched = []
        for folder in found:
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                rest = name[len(head):len(name) - len(tail)] if len(name) >= len(head) + len(tail) else None
                if rest is None or not name.startswith(head) or not name.endswith(tail):
                    continue
                for piece in middle:
                    at = rest.find(piece)
                    rest = None if at < 0 else rest[at + len(piece):]
                    if rest is None:
                        break
                if rest is not None:
                    matched.append(os.path.join(folder, name))
        found = matched
    return sorted(found)


def handed(entry, config, env, network=False):
    """The environment a confined skill gets, by construction: HANDED of `env`, what the skill declares
    (requires.env, primaryEnv, its variables) or the config gives it (skills.entries.KEY.env, apiKey), and with
    `network`, NETWORK_ENV but a proxy whose URL holds credentials. Nothing else: a secret by any name (DATABASE_URL,
    MYSQL_PWD, CI_JOB_JWT), the user's agents' addresses (SSH_AUTH_SOCK, DBUS_SESSION_BUS_ADDRESS)."""
    own = {*HANDED, *plan.declared_env(entry), *injected_env(entry, config)}
    if network:
        own.update(name for name in NETWORK_ENV if not urls.credentials(env.get(name, "")))
    return {name: value for name, value in env.items() if name in own or name.startswith("LC_")}


# seccomp (linux/seccomp.h, linux/filter.h): the architectures it is built for, {AUDIT_ARCH: system call numbers}
PR_SET_SECCOMP, SECCOMP_MODE_FILTER, AF_UNIX, IO_URING_SETUP, X32 = 22, 2, 1, 425, 0x40000000
ARCHES = {"x86_64": (0xC000003E, {"socket": 41, "socketpair": 53, "ioctl": 16, "add_key": 248, "request_key": 249,
                                  "keyctl": 250}),
          "aarch64": (0xC00000B7, {"socket": 198, "socketpair": 199, "ioctl": 29, "add_key": 217, "request_key": 218,
                                   "keyctl": 219})}
LOAD, JEQ, JGE, AND, RET = 0x20, 0x15, 0x35, 0x54, 0x06
ALLOW, KILL, DENIED = 0x7FFF0000, 0x80000000, 0x00050000 | 13  # the last: fail with EACCES
TIOCSTI, TIOCLINUX = 0x5412, 0x541C  # type into a terminal; the console's selection (which can paste)
SOCK_STREAM, SOCK_FLAGS = 1, 0o4000 | 0o2000000  # the flags: SOCK_NONBLOCK, SOCK_CLOEXEC
NR, ARCH, ARG0, ARG1 = 0, 4, 16, 24  # offsets in seccomp_data: an argument's low half (little-endian)


def seccomp_filter(unix=False):
    """The seccomp filter of a confined call: no typing into a terminal (TIOCSTI, TIOCLINUX: only the low 32 bits
    of the request are compared, as the kernel does), no kernel keyring, no io_uring (which could do what this
    filter denies without the system call) and, without a `unix` grant, no Unix socket: socket(AF_UNIX) (at a
    path: Landlock does not mediate connect() to one) and socketpair() of any type but a stream (a datagram
    pair sendto()s a path, and the kernel makes a SOCK_RAW pair a datagram one); stream pairs reach no path and
    stay, for event loops. A program of another architecture is killed
    (i386's socketcall would go around it). (the filter, its instructions: kept alive together), or None where
    the architecture is not one of ARCHES."""
    arch = ARCHES.get(os.uname().machine)
    if arch is None:
        return None
    audit, nr = arch
    code = [(LOAD, 0, 0, ARCH), (JEQ, "nr", 0, audit), (RET, 0, 0, KILL),
            "nr", (LOAD, 0, 0, NR), (JGE, "deny", 0, X32), (JEQ, "deny", 0, IO_URING_SETUP),
            *((JEQ, "deny", 0, nr[name]) for name in ("add_key", "request_key", "keyctl")),
            (JEQ, "ioctl", 0, nr["ioctl"])]
    if not unix:
        code += [(JEQ, "socket", 0, nr["socket"]), (JEQ, "pair", 0, nr["socketpair"])]
    code += [(RET, 0, 0, ALLOW),
             "ioctl", (LOAD, 0, 0, ARG1), (JEQ, "deny", 0, TIOCSTI), (JEQ, "deny", 0, TIOCLINUX), (RET, 0, 0, ALLOW),
             "socket", (LOAD, 0, 0, ARG0), (JEQ, "deny", 0, AF_UNIX), (RET, 0, 0, ALLOW),
             "pair", (LOAD, 0, 0, ARG0), (JEQ, 0, "allow", AF_UNIX), (LOAD, 0, 0, ARG1),
             (AND, 0, 0, ~SOCK_FLAGS & 0xFFFFFFFF), (JEQ, "allow", "deny", SOCK_STREAM),
             "allow", (RET, 0, 0, ALLOW), "deny", (RET, 0, 0, DENIED)]
    instructions, labels = [], {}
    for item in code:
        if isinstance(item, str):
            labels[item] = len(instructions)
        else:
            instructions.append(item)
    jump = {}
    for i, (op, true, false, k) in enumerate(instructions):
        jump[i] = (op, *(labels[t] - i - 1 if isinstance(t, str) else t for t in (true, false)), k)
    packed, address = process.libc().buffer(b"".join(struct.pack("=HBBI", *jump[i]) for i in range(len(instructions))))
    return struct.pack("=HxxxxxxQ", len(instructions), address), packed


def hint(entry, config, stderr):
    """What a failed confined call was denied, where its stderr says, and the command that grants it: 'the
    network: to grant it, nexus skill allow NAME network' (None: it does not say); with no stderr to read,
    the command's forms."""
    name = entry["name"]
    if stderr is None:
        return (f"something, or failed by itself (its stderr was not read): to grant what it lacked, nexus skill "
                f"allow {name} network | --read PATH | --write PATH")
    import json  # a failed confined call only, as style (shlex, re) is

    from .. import style

    text = stderr.decode("utf-8", "replace")
    cwd, why = WITHHELD.get(name) or (None, None)
    if not permissions(entry, config)["network"] and any(s in text for s in NETWORK_ERRORS):
        return f"the network: to grant it, nexus skill allow {name} network"
    deny = deny_list(config, {})
    # what it reads: an existing path denied elsewhere was denied to read, one in there to write
    readable = [*SYSTEM, os.path.realpath(entry["dir"]), *(os.path.realpath(expand(p, {})) for p in
                                                            permissions(entry, config)["read"] if not p.startswith("{"))]
    for line in text.splitlines():
        head, sep, _ = line.partition(": Permission denied")
        if not sep:
            head, sep, _ = line.partition(": Read-only file system")
        path = _last_path(head) if sep else None
        if path:
            path = os.path.abspath(os.path.expanduser(path))
            # The path comes from the tool's own stderr: quoted, so the command shown runs as it reads
            shown = style.shell_line([path])
            if not permissions(entry, config)["unix"] and _socket(path) and configlib.skill_key(entry):  # its own grant
                return f"the socket {shown}: to grant it, " + style.shell_line(
                    ["nexus", "config", "set", f"skills.entries.{configlib.skill_key(entry)}.sandbox.unix", json.dumps([path])])
            allow = ["nexus", "skill", "allow", name]
            if any(paths.contains(d, path) for d in deny):  # a secret: named, never a command to grant it
                return (f"reading {shown}, which skills.sandbox.deny keeps from every confined skill (nexus "
                        "suggests no grant of it)")
            if os.path.exists(path) and not any(
                    paths.within(os.path.realpath(path), p) for p in readable):
                return f"reading {shown}: to grant it, " + style.shell_line([*allow, "--read", path])
            folder = os.path.dirname(path)
            said = f"writing {shown}: to grant it, " + style.shell_line([*allow, "--write", folder])
            if cwd and paths.within(os.path.realpath(folder), cwd):
                return f"{said} (confined skills do not write the folder they are called from here, {cwd}: {why})"
            return said
    return None


NETWORK_ERRORS = ("Network is unreachable", "Temporary failure in name resolution", "Could not resolve host",
                  "Name or service not known", "No address associated", "Connection refused")


def _socket(path):
    try:
        return os.stat(path).st_mode & 0o170000 == 0o140000  # S_IFSOCK
    except OSError:
        return False


def _last_path(text):
    """The last absolute path-looking word of a message such as `cat: /home/me/.ssh/id_rsa`."""
    words = [w.strip("'\"`‘’“”:()") for w in text.replace(":", " ").split()]
    return next((w for w in reversed(words) if w.startswith("/") or w.startswith("~/")), None)


WITHHELD = {}  # a skill's name: (the caller's folder, why its last confined call could not write it), or None


def unsafe_cwd(cwd, protect):
    """Why a confined skill may not write the caller's folder `cwd` (a real path), or None: $HOME, /, a folder
    that holds $HOME, one inside a dot-folder of $HOME (where tools find their configuration and plugins), or
    one inside what no grant reaches (protect: a skill source, nexus's install and state, ~/.local/bin, ...)."""
    if cwd == "/":
        return "the root folder"
    for home in home_folders():  # $HOME's and the account's: a HOME set elsewhere never makes the real one safe
        if cwd == home:
            return "your home folder, where what a program writes is run later (~/.bash_aliases, ~/bin)"
        if paths.within(home, cwd):
            return "a folder that holds your home folder"
        if paths.within(cwd, home) and cwd[len(home):].lstrip("/").startswith("."):
            return f"inside ~/{cwd[len(home):].lstrip('/').split('/')[0]}, a dot-folder of your home (settings, plugins)"
    held = next((p for p in protect if paths.within(cwd, p)), None)
    return f"inside {held}, which runs as you or as nexus (a skill source, nexus, its state)" if held else None


def protected(config):
    """The paths no write grant covers (ESCALATION, and what runs as nexus): nexus's home (its workspace
    skills, its tools), every skill source's folder, skills.binPath, and nexus itself (its package, with the
    bundled skills, and the Python installation it runs from, where a .pth file would run in every nexus)."""
    import site  # already loaded by Python's start-up, unless -S: its user folders

    folders = [folder for _, folder in configlib.sources(config)]
    return [*ESCALATION, paths.home(), *folders, *linked(folders), *configlib.bin_path(config),
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))), sys.prefix, sys.base_prefix,
            site.getusersitepackages()]


def linked(folders):
    """Where the skills linked into these folders really lie (`skills add` of a local folder links it): a
    confined skill that wrote one's run.py ran its code with that skill's grants."""
    found = []
    for folder in folders:
        found += [_real(link) for link in _asked("links", folder)]
    return found


def _guarded(path, protect):
    """Whether a real path lies in (or is) one of the real paths `protect`: no write grant reaches it."""
    return any(paths.within(path, q) for q in protect)


def _denied(deny, named):
    """The paths to deny, real (the walk from / never follows a link), but one a grant names as written (`named`:
    in_homes() of each): never one reached through a link, and never nexus's config and state nor ROOT_SECRETS."""
    never = {paths.config_file(), paths.state_root()}
    return sorted({_real(p) for p in deny if _asked("lexists", p)
                   and (p not in named or p in never or any(_fits(p, r) for r in ROOT_SECRETS))})


def _fits(path, pattern):
    """Whether `path` is `pattern` or lies in it, a * in it standing for any run of characters in a name."""
    head, star, tail = pattern.partition("*")
    if not star:
        return paths.within(path, pattern)
    return path.startswith(head) and path.endswith(tail) and "/" not in path[len(head):len(path) - len(tail)]


def _allowed(folder, deny, access, is_folder=None):
    """Rules (path, access, whether a folder: None when unknown) that allow `access` to everything under
    `folder` but the denied paths (Landlock cannot deny below an allowed folder): a folder with a denied
    path inside is not even listed (a rule on a folder holds for all below it: listing it would list the
    denied ones too), and each of its entries that is not a link is allowed the same way (a link leads
    somewhere allowed or not on its own)."""
    if folder in deny:
        return []
    inside = [d for d in deny if d.startswith(folder.rstrip("/") + "/")]
    if not inside:
        return [(folder, access, is_folder)]
    rules = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return rules
    for found in entries:
        if not found.is_symlink():
            rules += _allowed(found.path, inside, access, found.is_dir(follow_symlinks=False))
    return rules
