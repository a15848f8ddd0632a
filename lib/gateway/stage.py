"""What a confined skill writes to the caller's folder ({cwd}) is staged, and applied after the call.

In the confined child's mount namespace an overlay covers {cwd}: its lower layer is {cwd} itself, its upper layer
and work folder a private folder of nexus's state (stages/SKILL.PID.RANDOM, 0700) that no confined skill reaches.
The tool sees and writes its folder as usual; nothing reaches the real {cwd} while it runs, so nothing it makes
there (a .git with an fsmonitor, say) runs while the call lasts. After the call the gateway, unconfined, applies
the upper layer to {cwd} (`Stage.apply`): new and changed files, symlinks (as links, never followed), deletions
(whiteouts: a character device 0/0) and folders made anew (opaque: xattr user.overlay.opaque). What would run
later outside the sandbox is set aside instead, at any depth, into set-aside/ of nexus's state (never beside the
original, where a skill could have taken the name): a path with a component in RUN_LATER; anything in a git
folder (HEAD with objects and refs, or commondir: a bare repository, a --separate-git-dir target), existing or
made, or in a repository's core.hooksPath; anything in a folder on PATH; and what a dot-entry of ~ or ~/.config
links to (a dotfiles repository). Applying walks both trees with folder descriptors (O_NOFOLLOW): a link of the
real {cwd} is never followed (where the upper layer holds a folder, that folder is set aside), nothing lands
outside {cwd}, and a stage of more than MAX_ENTRIES entries or MAX_DEPTH levels is set aside whole.

A stage whose gateway died (SIGKILL, a crash) is left behind: the skill's next confined call sets it aside
unapplied and says so (`leftovers`), and `nexus status --check` names it until then.
"""

import os
import stat

from .. import fileio, paths

# What runs later outside the sandbox when written in the caller's folder (git's hooks and config, hook managers,
# direnv and dotenv, mise and asdf, editors', agents' and dev containers' settings, CI, a nexus project): never
# applied from a stage, at any depth
RUN_LATER = (".git", ".hg", ".jj", ".envrc", ".env", ".vscode", ".idea", ".helix", ".zed", ".claude", ".codex",
             ".cursor", ".gemini", ".mcp.json", ".opencode", "opencode.json", "opencode.jsonc", ".roo", ".kiro",
             ".amazonq", ".windsurf", ".continue", ".aider.conf.yml", ".github/workflows", ".husky", ".githooks",
             ".lefthook", ".lefthook-local", *(f"{dot}lefthook{local}.{kind}" for dot in ("", ".")
                                                for local in ("", "-local") for kind in ("yml", "yaml", "toml", "json",
                                                                                         "jsonc")),
             ".pre-commit-config.yaml", "mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml", ".mise",
             "mise", ".config/mise", ".tool-versions", ".devcontainer", "nexus.toml", "nexus.lock", ".nexus")
MAX_ENTRIES, MAX_DEPTH = 200_000, 100
SET_ID = stat.S_ISUID | stat.S_ISGID  # never applied: a program the skill made would run as its owner
OPAQUE, OWN_XATTRS = "user.overlay.opaque", "user.overlay."
O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NO_OVERLAY = "no overlay could be mounted over it here, to stage what it writes"


class Stage:
    """The stage of one call's writes to `cwd` (a real path): made in the gateway, mounted in the child
    (`mount`), applied and removed in the gateway (`apply`, `remove`)."""

    def __init__(self, name, cwd, system=()):
        self.name, self.cwd, self.system = name, cwd, system  # system: where a link it makes may lead
        top = paths.stages_dir()
        fileio.private_dirs(top, paths.state_root())
        self.folder = os.path.join(top, f"{name}.{os.getpid()}.{os.urandom(8).hex()}")
        os.mkdir(self.folder, 0o700)
        self.upper, self.work = os.path.join(self.folder, "upper"), os.path.join(self.folder, "work")
        os.mkdir(self.work, 0o700)
        os.mkdir(self.upper, 0o700)
        os.chmod(self.upper, stat.S_IMODE(os.stat(cwd).st_mode))  # the overlay's root shows the upper's mode
        with open(os.path.join(self.folder, "cwd"), "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(cwd)  # where it was to go, for a stage its gateway left behind

    def layers(self):
        """In the child, before its mounts hide anything (nexus's state may lie in /tmp): its layers, opened."""
        return [os.open(p, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) for p in (self.cwd, self.upper, self.work)]

    def mount(self, libc, fds):
        """In the child, in its own mount namespace, before Landlock: the overlay of the layers `fds` over {cwd},
        and the child's folder entered again through it. Layers named by descriptor: any path, with no option
        syntax to escape."""
        from . import process  # loaded: the child of a confined call; its errno() without the ctypes package

        options = "lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d,userxattr" % (*fds,)
        if libc.mount(b"overlay", os.fsencode(self.cwd), b"overlay", 0, options.encode()) != 0:
            error = process.errno()
            raise OSError(error, f"{NO_OVERLAY}: {os.strerror(error)}", "stage")
        for fd in fds:
            os.close(fd)
        os.chdir(os.getcwd())  # the folder it stood in was the real one, under the overlay now

    def apply(self, env):
        """After the call: the upper layer applied to {cwd}, but what would run later outside the sandbox, which is
        set aside. [(path in {cwd}, why, where it is kept)], one for each thing set aside."""
        upper = os.open(self.upper, O_DIR)
        try:
            if not os.listdir(upper):
                return []  # it wrote nothing there: the common case costs a listing
            # one apply at a time: two calls that each wrote half of a git folder are judged whole (applies are short)
            with fileio.Lock(os.path.join(os.path.dirname(paths.stages_dir()), "stages.lock")):
                applying = _Apply(self, env)
                if applying.over:
                    return [applying.aside(upper, "", "", applying.over)]
                real = os.open(self.cwd, O_DIR)
                try:
                    applying.folder(upper, real, "")
                finally:
                    os.close(real)
                return applying.kept
        finally:
            os.close(upper)

    def remove(self):
        _discard(self.folder)


class Probe:
    """Whether an overlay can be mounted where stages are (`nexus status`): its folders made here, `mounts` in a
    child in its own user and mount namespaces, `remove` here again."""

    def __init__(self):
        fileio.private_dirs(paths.stages_dir(), paths.state_root())
        self.folder = os.path.join(paths.stages_dir(), f"-probe.{os.getpid()}.{os.urandom(8).hex()}")  # no skill's name
        os.mkdir(self.folder, 0o700)
        self.ids = os.geteuid(), os.getegid()  # here: in a new user namespace before its map, they are nobody's
        for name in ("lower", "upper", "work"):
            os.mkdir(os.path.join(self.folder, name), 0o700)

    def mounts(self, libc):
        uid, gid = self.ids
        try:
            for name, text in (("uid_map", f"{uid} {uid} 1"), ("setgroups", "deny"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
        except OSError:
            return False
        lower, upper, work = (os.path.join(self.folder, name) for name in ("lower", "upper", "work"))
        options = f"lowerdir={lower},upperdir={upper},workdir={work},userxattr"
        return libc.mount(b"overlay", os.fsencode(lower), b"overlay", 0, os.fsencode(options)) == 0

    def remove(self):
        _discard(self.folder)


class _Apply:
    """One application of a stage: the places not applied (`guarded`: a path in {cwd}, '' for all of it -> why),
    and what was set aside."""

    def __init__(self, staged, env):
        self.stage, self.cwd, self.kept, self.aside_folder = staged, staged.cwd, [], None
        self.guarded = {}
        self.over = self._survey(staged.upper)
        self._outside(env)
        self._above()

    def _note(self, real, why):
        """`real` (a real, absolute path) must not be written: guarded where it is, or is in, {cwd}."""
        if paths.within(real, self.cwd) or paths.within(self.cwd, real):
            self.guarded.setdefault(real[len(self.cwd):].strip("/") if len(real) > len(self.cwd) else "", why)

    def _outside(self, env):
        """Folders on PATH (ours and the call's), and what a dot-entry of ~ or ~/.config links to (a dotfiles
        repository: ~/.bash_aliases -> ~/dotfiles/bash_aliases), as the user's own home says it too."""
        import pwd  # a call that wrote {cwd} only

        for entry in [e for value in (env.get("PATH"), os.environ.get("PATH")) if value is not None
                      for e in value.split(":")]:
            if not entry.startswith("/"):  # an empty entry is the current folder, as for a relative one
                self._note(self.cwd, f"'{entry}', a relative folder on your PATH (empty: the current folder)")
            else:
                self._note(os.path.realpath(entry), f"{entry}, a folder on your PATH")
        homes = {os.path.expanduser("~")}
        try:
            homes.add(pwd.getpwuid(os.getuid()).pw_dir)
        except KeyError:
            pass
        for home in homes:
            for bin_folder in ("bin", ".local/bin"):  # on PATH from the next login where they exist (~/.profile)
                self._note(os.path.realpath(os.path.join(home, bin_folder)), f"~/{bin_folder}, on your PATH at login")
            for folder, dotted in ((home, True), (os.path.join(home, ".config"), False)):
                try:
                    entries = list(os.scandir(folder))
                except OSError:
                    continue
                for found in entries:
                    if (found.name.startswith(".") or not dotted) and found.is_symlink():
                        shown = "~/" + os.path.relpath(found.path, home)
                        self._note(os.path.realpath(found.path), f"what {shown} links to, run or read as you")
        for config in ("~/.gitconfig", "~/.config/git/config", "/etc/gitconfig"):
            for hooks in _hooks_paths(os.path.expanduser(config)):
                self._note(os.path.realpath(os.path.expanduser(hooks)), f"core.hooksPath of {config}")

    def _above(self):
        """{cwd} inside a git folder or a RUN_LATER name (called from .git/hooks, say): none of it is applied; a
        repository it lies in whose core.hooksPath leads into it: that folder is not."""
        folder = self.cwd
        while True:
            if os.path.basename(folder) in RUN_LATER:
                self._note(self.cwd, f"inside {folder}, which runs outside the sandbox later")
            if _git_folder(lambda name, f=folder: os.path.lexists(os.path.join(f, name))):
                self._note(self.cwd, f"inside {folder}, a git folder")
            if os.path.lexists(os.path.join(folder, ".git")):
                self._hooks_of(folder)
            if folder == "/":
                break
            folder = os.path.dirname(folder)

    def _hooks_of(self, worktree):
        """The core.hooksPath of the repository whose work tree is `worktree` (its .git a folder or a file that
        names one), guarded where it lies in {cwd}."""
        gitdir = os.path.join(worktree, ".git")
        if os.path.isfile(gitdir):
            try:
                with open(gitdir, encoding="utf-8", errors="replace") as f:
                    named = f.read(4096).partition("gitdir:")[2].strip()
            except OSError:
                return
            gitdir = os.path.join(worktree, named) if named else None
        if not gitdir:
            return
        configs = [os.path.join(gitdir, "config")]
        try:
            with open(os.path.join(gitdir, "commondir"), encoding="utf-8", errors="replace") as f:
                configs.append(os.path.join(gitdir, f.read(4096).strip(), "config"))
        except OSError:
            pass
        for config in configs:
            for hooks in _hooks_paths(config):
                self._note(os.path.realpath(os.path.join(worktree, os.path.expanduser(hooks))),
                           f"core.hooksPath of the repository in {worktree}")

    def _survey(self, top):
        """Walk the upper layer once, before anything is applied: the git folders it makes (or completes) and the
        repositories whose hooks it could reach; why none of it can be applied (too many entries, too deep), or
        None."""
        count, stack = 0, [("", 0)]
        while stack:
            rel, depth = stack.pop()
            if depth > MAX_DEPTH:
                return f"it is more than {MAX_DEPTH} folders deep"
            upper = os.path.join(top, rel)
            try:
                entries = {e.name: e for e in os.scandir(upper)}
            except OSError as e:  # a name too long to walk by path, say: none of it is applied
                return f"it could not be read whole ({e.strerror})"
            count += len(entries)
            if count > MAX_ENTRIES:
                return f"it wrote more than {MAX_ENTRIES:,} entries"
            real = os.path.join(self.cwd, rel)
            opaque = rel and _opaque(upper)

            def present(name, entries=entries, real=real, opaque=opaque):
                if name in entries:
                    return not _whiteout(entries[name].stat(follow_symlinks=False))
                return not opaque and os.path.lexists(os.path.join(real, name))

            if _git_folder(present):
                self._note(real if rel else self.cwd, "a git folder, whose config and hooks git runs")
            if present(".git") and ".git" not in entries and not os.path.islink(real):
                self._hooks_of(real)
            stack += [((f"{rel}/{name}" if rel else name), depth + 1) for name, e in entries.items()
                      if e.is_dir(follow_symlinks=False)]
        return None

    def why(self, rel):
        """Why the path `rel` of {cwd} is not applied, or None (RUN_LATER is matched on the whole real path: called
        from .github, a new workflows/x.yml is one)."""
        parts = rel.split("/")
        for i in range(len(parts) + 1):
            found = self.guarded.get("/".join(parts[:i]))
            if found:
                return found
        parts = self.cwd.strip("/").split("/") + parts
        for later in RUN_LATER:
            want = later.split("/")
            if any(parts[i:i + len(want)] == want for i in range(len(parts))):
                return f"{later}, which runs outside the sandbox later"
        return None

    def folder(self, upper, real, rel):
        """Apply the upper folder (a descriptor) to the real one (a descriptor) at `rel`."""
        for entry in sorted(os.scandir(upper), key=lambda e: e.name):
            name = entry.name
            path = f"{rel}/{name}" if rel else name
            why = self.why(path)
            if why:
                self.kept.append(self.aside(upper, name, path, why))
                continue
            try:
                self.entry(upper, real, entry, path)
            except OSError as e:  # the user's folder is read-only, the disk full, ...: kept, never half-applied
                self.kept.append(self.aside(upper, name, path, f"it could not be applied: {e.strerror}"))

    def entry(self, upper, real, entry, path):
        """Apply one entry of the upper folder (`upper`, a descriptor) to the real folder (`real`)."""
        name, found = entry.name, entry.stat(follow_symlinks=False)
        mode = found.st_mode
        try:
            there = os.stat(name, dir_fd=real, follow_symlinks=False)
        except FileNotFoundError:
            there = None
        if _whiteout(found):
            if there and stat.S_ISDIR(there.st_mode) and _holds_repository(real, name):
                self.kept.append(self.aside(upper, name, path, "a folder holding a repository: removing it would "
                                                               "lose its history"))
            elif there:
                _remove(real, name, there)
        elif stat.S_ISDIR(mode):
            if there and stat.S_ISLNK(there.st_mode):  # never followed: what was meant for it is kept
                self.kept.append(self.aside(upper, name, path, "a link in your folder where the call made a folder "
                                                               "(a link there is never followed)"))
                return
            if there and (not stat.S_ISDIR(there.st_mode) or _opaque(f"/proc/self/fd/{upper}/{name}")):
                if stat.S_ISDIR(there.st_mode) and _holds_repository(real, name):
                    self.kept.append(self.aside(upper, name, path, "a folder made anew over one holding a "
                                                                   "repository: its history would be lost"))
                    return
                _remove(real, name, there)  # a folder made anew (opaque) replaces all the old one held
                there = None
            if there is None:
                os.mkdir(name, 0o700, dir_fd=real)
            inner_upper = os.open(name, O_DIR, dir_fd=upper)
            try:
                inner_real = os.open(name, O_DIR, dir_fd=real)
                try:
                    self.folder(inner_upper, inner_real, path)
                    os.fchmod(inner_real, stat.S_IMODE(mode))
                finally:
                    os.close(inner_real)
            finally:
                os.close(inner_upper)
        elif stat.S_ISREG(mode) or stat.S_ISLNK(mode):
            out = _leads_out(self.cwd, path, os.readlink(name, dir_fd=upper), self.stage.system) \
                if stat.S_ISLNK(mode) else None
            if out:
                self.kept.append(self.aside(upper, name, path, f"a link out of your folder, to {out} (what is "
                                                               "written through it later would land there)"))
                return
            if stat.S_ISREG(mode) and mode & SET_ID:  # a set-user-ID program of the skill's: run as its owner
                os.chmod(name, stat.S_IMODE(mode) & ~SET_ID, dir_fd=upper)
                mode &= ~SET_ID
            if there and stat.S_ISDIR(there.st_mode):
                _remove(real, name, there)
            if stat.S_ISREG(mode):
                _own_xattrs_removed(upper, name)
            try:
                os.rename(name, name, src_dir_fd=upper, dst_dir_fd=real)  # a link is renamed, never followed
            except OSError as e:
                if e.errno != 18:  # EXDEV: {cwd} lies on another file system than nexus's state
                    raise
                _copy(upper, real, name, mode)
        # a fifo or a socket is not applied: nothing could use it after the call

    def aside(self, upper, name, rel, why):
        """Move the upper entry `name` (of the folder `upper`; '' for all of it) into set-aside/: (rel, why, where)."""
        if self.aside_folder is None:
            import time  # something is set aside: rare

            top = paths.set_aside_dir()
            fileio.private_dirs(top, paths.state_root())
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            self.aside_folder = os.path.join(top, f"{self.stage.name}.{stamp}.{os.urandom(4).hex()}")
            os.mkdir(self.aside_folder, 0o700)
        where = os.path.join(self.aside_folder, rel or "all")
        os.makedirs(os.path.dirname(where), mode=0o700, exist_ok=True)
        try:
            if name:
                os.rename(name, where, src_dir_fd=upper)
            else:
                os.rename(self.stage.upper, where)
        except OSError as e:  # it stays in the stage, which is removed: never applied either way
            where = f"nowhere: it could not be moved ({e.strerror}), and is removed"
        return os.path.join(self.cwd, rel) if rel else self.cwd, why, where


def _leads_out(cwd, path, target, system):
    """Where a link made at `path` (in {cwd}) to `target` leads when that is out of {cwd} and out of the system's
    folders (a venv's python3 -> /usr/bin/python3 stays), else None: read lexically, as it was made."""
    where = os.path.normpath(os.path.join(cwd, os.path.dirname(path), target))
    inside = [cwd, *system]
    return None if any(paths.within(where, p) for p in inside) else where


def _holds_repository(folder, name):
    """Whether the real folder `name` (in the folder descriptor `folder`) holds a repository: a .git, or a git
    folder, at any depth (links not followed); a tree too big to look through counts as holding one."""
    seen = 0
    for _, folders, files, _ in os.fwalk(name, dir_fd=folder):
        seen += len(folders) + len(files)
        names = set(folders) | set(files)
        if ".git" in names or _git_folder(lambda n: n in names) or seen > MAX_ENTRIES:
            return True
    return False


def _git_folder(present):
    """Whether a folder is one git takes for a repository (setup.c's is_git_directory): HEAD, with objects and
    refs of its own or a commondir that has them."""
    return present("HEAD") and (present("objects") and present("refs") or present("commondir"))


def _hooks_paths(config):
    """The core.hooksPath values a git config file sets (a small reader: section [core], key hookspath, any case;
    include paths are read too, a few deep)."""
    found, seen, todo = [], set(), [config]
    while todo and len(seen) < 8:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read(1 << 20)
        except OSError:
            continue
        section = ""
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("["):
                section = line[1:].split("]")[0].split('"')[0].strip().lower()
                line = line.split("]", 1)[1].strip() if "]" in line else ""
            key, sep, value = line.partition("=")
            if not sep:
                continue
            key, value = key.strip().lower(), value.split(" #")[0].split(" ;")[0].strip().strip('"')
            if section == "core" and key == "hookspath" and value:
                found.append(value)
            elif section in ("include", "includeif") and key == "path" and value:
                todo.append(os.path.join(os.path.dirname(path), os.path.expanduser(value)))
    return found


def _whiteout(st):
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _opaque(path):
    try:
        return os.getxattr(path, OPAQUE, follow_symlinks=False) == b"y"
    except OSError:
        return False


def _own_xattrs_removed(folder, name):
    """The overlay's own xattrs (user.overlay.*) off a file before it lands in {cwd}, where a later stage would
    read them as its lower layer's (best effort: a read-only file keeps them)."""
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    try:
        path = f"/proc/self/fd/{fd}"
        for attr in os.listxattr(path):
            if attr.startswith(OWN_XATTRS):
                os.removexattr(path, attr)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(folder, name, found):
    """Remove the entry `name` of the real folder (a descriptor): a folder with all it holds, links not followed."""
    if stat.S_ISDIR(found.st_mode):
        import shutil  # a deletion of a folder only

        shutil.rmtree(name, dir_fd=folder)
    else:
        os.unlink(name, dir_fd=folder)


def _copy(upper, real, name, mode):
    """The upper entry `name` copied into the real folder (another file system), a link as a link, the mode kept,
    put in place by a rename."""
    temporary = f".nexus-stage-{os.urandom(6).hex()}"
    if stat.S_ISLNK(mode):
        os.symlink(os.readlink(name, dir_fd=upper), temporary, dir_fd=real)
    else:
        source = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=upper)
        try:
            target = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                             dir_fd=real)
            try:
                while os.sendfile(target, source, None, 1 << 20):
                    pass
                os.fchmod(target, stat.S_IMODE(mode) & ~SET_ID)
            finally:
                os.close(target)
        finally:
            os.close(source)
    os.rename(temporary, name, src_dir_fd=real, dst_dir_fd=real)


def _discard(folder):
    """Remove a stage; the overlay's work folder leaves a folder of mode 000 in it. A stage whose writes were all
    applied holds its few folders alone: removed one by one, without shutil (loading it was half of what a
    confined call spent after its program ended)."""
    try:
        for name in ("upper", "work/work", "work/index", "work"):
            if os.path.lexists(os.path.join(folder, name)):
                os.rmdir(os.path.join(folder, name))
        os.unlink(os.path.join(folder, "cwd"))
        os.rmdir(folder)
        return
    except OSError:
        pass  # something is left in it: the whole tree
    import shutil  # a stage with something left in it only

    for inner in ("work/work", "work/index"):
        try:
            os.chmod(os.path.join(folder, inner), 0o700)
        except OSError:
            pass
    shutil.rmtree(folder, ignore_errors=True)


def leftovers(name=None):
    """The stages whose gateway is gone (killed mid-call): [(folder, skill, the {cwd} it was for)], of one skill
    or all."""
    try:
        found = os.listdir(paths.stages_dir())
    except OSError:
        return []
    left = []
    for entry in found:
        skill, _, rest = entry.partition(".")
        pid = rest.partition(".")[0]
        if (name and skill != name) or not paths.is_valid_name(skill) or not pid.isdigit() or _alive(int(pid)):
            continue
        folder = os.path.join(paths.stages_dir(), entry)
        try:
            with open(os.path.join(folder, "cwd"), encoding="utf-8", errors="surrogateescape") as f:
                cwd = f.read()
        except OSError:
            cwd = "?"
        left.append((folder, skill, cwd))
    return left


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def set_aside_leftovers(name, warn):
    """At a confined call of `name`: each stage a dead gateway of it left, moved unapplied into set-aside/ and said."""
    for folder, skill, cwd in leftovers(name):
        top = paths.set_aside_dir()
        fileio.private_dirs(top, paths.state_root())
        where = os.path.join(top, f"{skill}.left.{os.path.basename(folder).split('.', 1)[1]}")
        try:
            os.rename(os.path.join(folder, "upper"), where)
        except OSError as e:
            where = f"nowhere ({e.strerror})"
        _discard(folder)
        warn(f"{skill}: a call that ended before its writes to {cwd} were applied (nexus was killed) left them; "
             f"they were not applied, and are kept in {where}")
