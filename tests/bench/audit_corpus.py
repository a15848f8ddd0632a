"""`make audit-corpus`: the audit's precision over public skill collections, fetched beforehand.

    python tests/bench/audit_corpus.py FOLDER [--findings]

FOLDER holds the collections, each either a folder of files or a git repository (a bare one, or
`owner+name/repo` as a mirror lays it out). A repository is read at the commit PINS names for it
(HEAD when it names none), through `git archive`: nothing is fetched, so this never needs the network,
and CI never runs it.

A finding is judged by JUDGED (`true|false COLLECTION SKILL CODE` lines, read by hand); one it does not name
is judged by its severity: a high finding in a public collection is false (none of them is hostile), a
medium one true (each was reviewed by class: a vendor's installer piped to a shell, a network call, a
write to /etc, a documented cron job is what the rule says it is).

Prints, per collection: the skills read, the skills with a false high finding, the skills with a false
medium one (and their share); with --findings, each high and medium finding and its judgement.
"""

import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).parent
PINS = {  # the commits the figures in README's Security section were measured at
    "anthropics/skills": "9d2f1ae187231d8199c64b5b762e1bdf2244733d",
    "openai/skills": "f6b8344b4e519f964d8884d6f60b57991f3f4993",
    "vercel-labs/agent-skills": "b9c8ee0643d87d3c5a953d1e22382ff2ead39229",
    "obra/superpowers": "44c9b2d6e889982ac18c27d05a19fefe335194e1",
    "K-Dense-AI/claude-scientific-skills": "899a51bfbd63218153b272c9459dcb4a7ae88da6",
    "faahim/openclaw-skills": "fe6dd0f47b0b2e15b360f59925678d462260a29f",
}
JUDGED = HERE / "audit_corpus_judged.txt"


def collections(folder):
    """[(name, path: a folder of files or a git directory)] of what FOLDER holds."""
    found = []
    for child in sorted(pathlib.Path(folder).iterdir()):
        if (child / "repo").is_dir():
            child = child / "repo"
        name = child.name if child.name != "repo" else child.parent.name
        found.append((name.replace("+", "/"), child))
    return found


def files_of(name, path, scratch):
    """A folder holding the collection's files: `path` itself, or its pinned commit archived into scratch."""
    git_dir = path if (path / "HEAD").is_file() else path / ".git" if (path / ".git").exists() else None
    if git_dir is None:
        return path
    out = pathlib.Path(scratch) / name.replace("/", "+")
    out.mkdir(parents=True)
    archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", PINS.get(name, "HEAD")],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def judged():
    """{(collection, skill, code): True when accurate} from JUDGED."""
    found = {}
    for line in JUDGED.read_text().splitlines() if JUDGED.is_file() else ():
        if line.strip() and not line.startswith("#"):
            verdict, collection, skill, code = line.split()[:4]
            found[collection, skill, code] = verdict == "true"
    return found


def measure(name, root, accurate, show):
    from nexus.distribute import sources
    from nexus.skill import audit

    skills = sources.skill_folders(str(root), lambda message: None)
    false_high = false_medium = 0
    for folder in skills:
        skill = os.path.relpath(folder, root)
        findings = [f for f in audit.audit(folder, skill) if f.severity != audit.LOW]
        wrong = [f for f in findings if not accurate.get((name, skill, f.code), f.severity == audit.MEDIUM)]
        false_high += any(f.severity == audit.HIGH for f in wrong)
        false_medium += any(f.severity == audit.MEDIUM for f in wrong)
        for f in findings if show else ():
            print(f"  {'false' if f in wrong else 'true':5} {f.format()}")
    share = 100 * false_medium / len(skills) if skills else 0
    print(f"{name}: {len(skills)} skills, {false_high} with a false high finding, {false_medium} with a false medium "
          f"one ({share:.1f}%)", flush=True)
    return len(skills), false_high, false_medium


def main(argv):
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    accurate, show, totals = judged(), "--findings" in argv, [0, 0, 0]
    with tempfile.TemporaryDirectory(prefix="audit-corpus.") as scratch:
        for name, path in collections(argv[0]):
            for i, n in enumerate(measure(name, files_of(name, path, scratch), accurate, show)):
                totals[i] += n
    skills, high, medium = totals
    print(f"all: {skills} skills, {high} with a false high finding, {medium} with a false medium one "
          f"({100 * medium / max(skills, 1):.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
