"""Where added skills come from: a local folder or a git repository, and the skills one holds.

A git source is cloned shallow with the system `git` into a scratch folder under the cache and
removed afterwards; nothing is kept that could go stale. Nothing inside a source is ever followed
out of it: a skill with a symlink that leads outside the source is refused.
"""

import contextlib
import os
import shutil
import tempfile

from .. import fileio, paths, trust, urls
from ..errors import NexusError, UsageError
from ..gateway import process
from ..skill import entry as entrylib, skillmd
from ..style import Progress, visible

MAX_DEPTH = 4  # how many folders below a source's root a SKILL.md is looked for
SKIP_FOLDERS = {".git", "node_modules"}
GIT_SCHEMES = ("https", "http", "ssh", "git", "file")


class Source:
    """One fetched source: `root` holds its files while the `checkout` block lasts."""

    def __init__(self, kind, location, root, revision=None):
        self.kind, self.location, self.root, self.revision = kind, location, root, revision
        base = location.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        self.root_name = base.removesuffix(".git")  # the name a skill at the root falls back to


class Candidate:
    """A folder with a SKILL.md: its name once read, or the reason it cannot be added."""

    def __init__(self, source, folder):
        self.dir = folder
        rel = os.path.relpath(folder, source.root)
        self.path = os.fsencode(rel).decode("utf-8", "backslashreplace")  # text, even for a name that is not
        self.name = self.description = self.error = None
        self.files = []
        try:
            utf8_name(rel)
            self.files = files(folder, source.root)
        except NexusError as e:
            self.error = str(e)
            return
        folder_name = source.root_name if self.path == "." else os.path.basename(folder)
        skill = skillmd.read(skillmd.file_in(folder), folder_name)
        bad = skill.ok and entrylib.unprintable(skill.meta)
        if bad:
            self.error = (f"SKILL.md: metadata.{skill.meta_key}.{bad[0]} holds a control character "
                          f"('{visible(bad[1])}'): refused, for it could change what the door shows")
        elif skill.ok:
            self.name, self.description = skill.name, skill.frontmatter["description"].strip()
        else:
            self.error = next(p for p in skill.problems if p.severity == "error").format("SKILL.md")

    @property
    def label(self):
        return self.name or self.path

    def as_dict(self):
        return {"name": self.name, "path": self.path, "description": self.description, "ok": self.error is None,
                "error": self.error}


def resolve(source):
    """('folder', absolute path) or ('git', url) for a SOURCE as the user wrote it. A URL is judged by its
    scheme in any case, and refused before anything shows it when it carries credentials."""
    scheme, _, _, _, _ = urls.split(source)
    carried = urls.credentials(source)
    if carried:
        raise UsageError(f"source '{urls.shown(source)}': a URL with credentials ({carried}) would be kept in the "
                         "lockfile and shown on screen: give them to git instead (a credential helper, ~/.netrc)")
    if scheme in GIT_SCHEMES or (scheme is None and source.startswith("git@") and ":" in source):
        return "git", source if scheme is None else scheme + source[len(scheme):]
    if scheme is not None or "::" in source or source.startswith("-"):  # git's ext:: would run a command
        raise NexusError(f"source '{urls.shown(source)}': only {', '.join(GIT_SCHEMES)} URLs are fetched")
    path = os.path.abspath(os.path.expanduser(source))
    if os.path.isdir(path):
        return ("git", "file://" + path) if os.path.exists(os.path.join(path, ".git")) else ("folder", path)
    owner, _, repo = source.partition("/")
    if repo and paths.is_valid_name(owner.lower()) and "/" not in repo and repo.strip(".") and _plain(repo):
        return "git", f"https://github.com/{owner}/{repo.removesuffix('.git')}.git"
    raise UsageError(f"source '{source}' is not a folder, a git URL or owner/repo")  # bad input: exit 2, as every other


def _plain(text):
    return all(c.isalnum() or c in "-_." for c in text)


@contextlib.contextmanager
def checkout(source, ref=None):
    """The Source for SOURCE, its files readable for the duration of the block; `ref`, a git source's tag,
    branch or commit (else its default branch)."""
    kind, location = resolve(source)
    if kind == "folder":
        if ref:
            raise NexusError(f"source '{source}' is a folder: it has no ref '{ref}' to fetch")
        yield Source(kind, location, location)
        return
    fileio.private_dirs(paths.cache_dir(), paths.home())
    scratch = tempfile.mkdtemp(prefix="clone.", dir=paths.cache_dir())
    try:
        root = os.path.join(scratch, "repo")
        with Progress(f"cloning {location}") as progress:  # on a terminal: a large repository takes a while
            progress.show()
            if ref:
                _fetch(location, checked_ref(ref), root)
            else:
                _git(["clone", "--quiet", "--depth", "1", "--no-checkout", "--", location, root],
                     f"cannot clone '{location}'")
            _write_tree(root, location)
        revision = _git(["-C", root, "rev-parse", "HEAD"], f"cannot read the revision of '{location}'").strip()
        yield Source(kind, location, root, revision)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _fetch(location, ref, root):
    """One commit of a repository into `root`: what a tag or branch names now, or a commit (a server that
    no longer has it, or never let it be fetched, says so)."""
    _git(["init", "--quiet", "--", root], f"cannot make a clone at {root}")
    _git(["-C", root, "fetch", "--quiet", "--depth", "1", "--", location, ref], f"cannot fetch {ref} of '{location}'")
    _git(["-C", root, "update-ref", "--no-deref", "HEAD", "FETCH_HEAD"], f"cannot check out {ref} of '{location}'")


def checked_ref(ref):
    """`ref` when it is a plain tag, branch or commit name; NexusError otherwise (git would read an option, a
    refspec that writes a ref, or a revision expression)."""
    if not ref or ref.startswith(("-", "/")) or ".." in ref or not all(c.isalnum() or c in "-_./+" for c in ref):
        raise NexusError(f"ref {ref!r}: a ref is a tag, branch or commit name (letters, digits, - _ . / +)")
    return ref


# A clone runs nothing of the repository's or the user's: no hooks (core.hooksPath, the user's too), and no
# checkout, whose filters a repository's .gitattributes names (git-lfs fetching from a URL it chooses, or
# any filter the user's config defines); the files are written from the objects by _write_tree. The
# user's config is kept otherwise: credential helpers, insteadOf rules and proxies still apply.
NO_HOOKS = ["-c", "core.hooksPath=/dev/null"]


def _git(args, failure, stdin=None, raw=False):
    # No prompts for credentials or passwords: this runs from cron too.
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "/bin/false", "SSH_ASKPASS": "/bin/false",
           "GIT_LFS_SKIP_SMUDGE": "1"}
    try:
        done = process.run(["git", *NO_HOOKS, *args], env=env, stdin=process.DEVNULL if stdin is None else stdin,
                           stdout=process.CAPTURE, stderr=process.CAPTURE)
    except FileNotFoundError:
        raise NexusError("git is not installed: install git to add skills from a repository") from None
    if done.exit != 0:
        said = " ".join(line.strip() for line in done.stderr.decode("utf-8", "replace").splitlines() if line.strip())
        raise NexusError(f"{failure}: {said or f'git exited with {done.exit}'}")  # git's whole message, on one line
    return done.stdout if raw else done.stdout.decode("utf-8", "replace")


def _write_tree(root, location):
    """Write the files of HEAD's tree into `root` from the object store: blobs as they are stored (no filter,
    no smudge, no end-of-line conversion), symlinks as links, the executable bit kept, submodules left out."""
    failure = f"cannot read the files of '{location}'"
    listing = _git(["-C", root, "ls-tree", "-r", "-z", "--full-tree", "HEAD"], failure, raw=True)
    entries = []
    for item in listing.split(b"\0"):
        if not item:
            continue
        meta, path = item.split(b"\t", 1)
        mode, kind, oid = meta.split()
        parts = path.split(b"/")
        if any(p in (b"", b".", b"..") or p.lower() == b".git" for p in parts):  # git's own checkout refuses them
            raise NexusError(f"{failure}: the tree names '{path.decode('utf-8', 'backslashreplace')}'")
        if kind == b"blob":
            entries.append((mode, oid, path))
    objects = _git(["-C", root, "cat-file", "--batch"], failure, stdin=b"".join(oid + b"\n" for _, oid, _ in entries),
                   raw=True)
    at, base = 0, os.fsencode(root)
    for mode, oid, path in entries:
        header_end = objects.index(b"\n", at)
        size = int(objects[at:header_end].split()[2])
        data, at = objects[header_end + 1:header_end + 1 + size], header_end + 2 + size
        target = os.path.join(base, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if mode == b"120000":
            os.symlink(data, target)
            continue
        with open(target, "wb") as f:
            f.write(data)
        os.chmod(target, 0o755 if mode == b"100755" else 0o644)


def at(source, path):
    """The Candidate at `path` inside a source (a project's `path = ...`); NexusError when there is no skill."""
    folder = os.path.normpath(os.path.join(source.root, path))
    if not paths.contains(source.root, folder) or not os.path.lexists(skillmd.file_in(folder)):
        raise NexusError(f"{source.location} has no skill at '{path}'")
    return Candidate(source, folder)


def find(source, on_problem):
    """The Candidates of a source: the root when it holds a SKILL.md, else folders below it."""
    found = [Candidate(source, folder) for folder in skill_folders(source.root, on_problem, source.location)]
    if not found:
        raise NexusError(f"no skills in {source.location}: no SKILL.md at its root "
                         f"or in folders up to {MAX_DEPTH} levels below it")
    return found


def skill_folders(root, on_problem, location=None):
    """The folders that hold a SKILL.md, as `skills add` finds them (and `skills check` and `audit` of a
    folder): `root` itself, else its folders down to MAX_DEPTH levels below it, dot-folders included
    (.curated), never .git or node_modules, nothing below a skill, no symlink that leads out of `root`.
    on_problem(message) hears of a folder it cannot read or a symlink it skipped."""
    found = []
    _walk(root, location or root, root, 0, found, set(), on_problem)
    return found


def _walk(root, location, folder, depth, found, seen, on_problem):
    real = os.path.realpath(folder)
    if real in seen:
        return  # a loop of symlinks
    seen.add(real)
    if os.path.lexists(skillmd.file_in(folder)):
        found.append(folder)
        return
    if depth >= MAX_DEPTH:
        return
    try:
        with os.scandir(folder) as it:
            children = sorted((e for e in it if e.name not in SKIP_FOLDERS), key=lambda e: e.name)
    except OSError as e:
        on_problem(visible(f"{folder}: cannot read folder: {e.strerror}"))  # a source's names: shown, never obeyed
        return
    for child in children:
        if child.is_symlink() and not paths.contains(root, child.path):
            on_problem(visible(f"{location}: {os.path.relpath(child.path, root)}: skipped: symlink points outside "
                               "the source"))
        elif child.is_dir():
            _walk(root, location, child.path, depth + 1, found, seen, on_problem)


def files(skill_dir, root):
    """A skill's files as sorted relative paths (trust.walk's, without Python's cache); NexusError for a
    symlink that leads out of `root` or a name that is not UTF-8."""
    return [utf8_name(rel) for rel in trust.walk(skill_dir, root=root, caches=False)]


def utf8_name(rel):
    """`rel` when it is a UTF-8 file name; NexusError showing its bytes otherwise (a lockfile, a digest and
    an agent's tool list all need text)."""
    try:
        rel.encode()
    except UnicodeEncodeError:
        shown = os.fsencode(rel).decode("ascii", "backslashreplace")
        raise NexusError(f"'{shown}': the file name is not UTF-8") from None
    return rel


def digest(skill_dir, rels):
    """SHA-256 over a skill's files: each relative path, then the SHA-256 of its contents."""
    return trust.combined({rel: trust.file_digest(os.path.join(skill_dir, rel)) for rel in rels})
