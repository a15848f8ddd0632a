"""Capabilities and connectors over the evaluated catalogue.

A skill may implement capabilities (`implements: [email_sender]`), require them
(`requires.capabilities`) or require other skills by name (`requires.skills`). A skill whose
requirements are not met is not ready: it needs setup, and its `reason` names each candidate and
why it is not ready. Skills whose requirements form a cycle are invalid, the cycle named. A connector
(`connectors: [google]`, or what the known tools sign in to) is an account a person connects; it is
connected once a skill that needs it has passed verification.

Architecture invariant: all of this is a pure function of the catalogue, its state and the
environment; nothing here runs a command.
"""

from .. import paths
from ..skill.entry import required

SETTLED = ("disabled", "unsupported", "not-installed", "invalid")


def requirements(record):
    """(capabilities, skills) a record requires."""
    return required(record, "capabilities"), required(record, "skills")


def providers(records):
    """{capability: [records of the skills that implement it]}, invalid ones left out."""
    found = {}
    for record in records:
        if record["status"] != "invalid":
            for capability in record.get("implements") or []:
                found.setdefault(capability, []).append(record)
    return found


def resolve(records):
    """Apply requirements to evaluated records, in place: cycles make skills invalid, and an unmet
    requirement makes a ready skill need setup, with `reason` and `missing.capabilities`/`skills`."""
    by_name = {r["name"]: r for r in records if r["status"] != "invalid"}
    provided = providers(records)
    edges = {name: _depends_on(record, by_name, provided) for name, record in by_name.items()}
    for cycle in _cycles(edges):
        for name in cycle:
            by_name[name].update(status="invalid", error="requirement cycle: " + " -> ".join(cycle + cycle[:1]))
    done = set()
    for name in sorted(by_name):
        _settle(name, by_name, provided, done)
    return records


def _depends_on(record, by_name, provided):
    capabilities, skills = requirements(record)
    names = [p["name"] for c in capabilities for p in provided.get(c, [])] + [s for s in skills if s in by_name]
    return list(dict.fromkeys(names))


def _cycles(edges):
    """The strongly connected components that form a cycle (Tarjan's algorithm, iteratively), each as a
    path that walks the cycle, for naming it."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(root):
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c in edges), None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in edges[node]:
                        found.append(_walk(sorted(component)[0], set(component), edges))
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(edges[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return found


def _walk(start, members, edges):
    """The shortest path from `start` back to it through `members`: the cycle as a reader follows it."""
    paths, queue = {start: [start]}, [start]
    for node in queue:
        for child in edges[node]:
            if child == start:
                return paths[node]
            if child in members and child not in paths:
                paths[child] = paths[node] + [child]
                queue.append(child)
    return [start]


def _settle(name, by_name, provided, done):
    """Settle `name` after everything it depends on (no cycles are left among valid skills)."""
    if name in done:
        return
    done.add(name)
    record = by_name[name]
    capabilities, skills = requirements(record)
    if record["status"] == "invalid" or not (capabilities or skills):
        return
    reasons, missing = [], {"capabilities": [], "skills": []}
    for capability in capabilities:
        candidates = provided.get(capability, [])
        for candidate in candidates:
            _settle(candidate["name"], by_name, provided, done)
        if not any(c["status"] == "ready" for c in candidates):
            missing["capabilities"].append(capability)
            why = ", ".join(why_not_ready(c) for c in candidates) or "no skill provides it"
            reasons.append(f"needs a provider of {capability}: {why}")
    for skill in skills:
        if skill in by_name:
            _settle(skill, by_name, provided, done)
        if skill not in by_name or by_name[skill]["status"] != "ready":
            missing["skills"].append(skill)
            reasons.append(f"needs {why_not_ready(by_name[skill]) if skill in by_name else skill + ' (no such skill)'}")
    if reasons:
        record["missing"] = {**record.get("missing", {}), **missing}
        record["reason"] = "; ".join(reasons)
        if record["status"] not in SETTLED:
            record["status"] = "needs-setup"


def why_not_ready(record):
    """'gog not installed', 'sendgrid needs SENDGRID_API_KEY', 'tmux ready'."""
    name, status, missing = record["name"], record["status"], record.get("missing") or {}
    if status == "ready":
        return f"{name} ready"
    if record.get("reason"):
        return f"{name} {record['reason']}"
    if status == "needs-setup":
        needs = (missing.get("env") or []) + [f"config {p}" for p in missing.get("config") or []]
        return f"{name} needs {', '.join(needs)}" if needs else f"{name} failed verification"
    return f"{name} {'not for this platform' if status == 'unsupported' else status.replace('-', ' ')}"


def catalogue(records):
    """Every capability: its providers (name, status, verified), its consumers, and the ready ones."""
    found = {}
    for capability, candidates in providers(records).items():
        found[capability] = {"name": capability, "consumers": [], "providers": [
            {"name": c["name"], "status": c["status"], "verified": c.get("verified", False)} for c in candidates]}
    for record in records:
        for capability in requirements(record)[0]:
            found.setdefault(capability, {"name": capability, "consumers": [], "providers": []})
            found[capability]["consumers"].append(record["name"])
    return [found[c] for c in sorted(found)]


def ranking(capability, records, prefer, success_rates):
    """The providers of `capability`, best first, each with why it stands where it does: ready first;
    then the config's preference list; then the skills the user has before those added with `nexus
    skills add` (what an added skill claims to implement is its author's word: adding one must not take
    a capability over); then verified before unverified; then the best success rate over the usage
    logs' window; then name."""
    ranked = []
    for record in providers(records).get(capability, []):
        name = record["name"]
        rate = success_rates.get(name)
        added = record.get("source") in paths.ADDED
        key = (record["status"] != "ready", prefer.index(name) if name in prefer else len(prefer), added,
               not record.get("verified"), -(rate if rate is not None else -1), name)
        reasons = ["ready" if record["status"] == "ready" else why_not_ready(record)]
        if name in prefer:
            reasons.append(f"preference {prefer.index(name) + 1} in capabilities.{capability}.prefer")
        if added:
            reasons.append("added with `nexus skills add`")
        reasons.append("verified" if record.get("verified") else "not verified yet")
        reasons.append(f"success rate {rate:.0%}" if rate is not None else "no recent calls")
        ranked.append((key, {"name": name, "status": record["status"], "ready": record["status"] == "ready",
                             "verified": bool(record.get("verified")), "successRate": rate, "why": reasons}))
    return [item for _, item in sorted(ranked, key=lambda pair: pair[0])]


def connectors(records, steps):
    """Every connector: the skills that need it, whether it is connected (one of them, ready, passed
    verification) and, when locked, the one step that unlocks it (`steps(record)` gives a skill's)."""
    found = {}
    for record in records:
        if record["status"] == "invalid":
            continue
        for connector in record.get("connectors") or []:
            found.setdefault(connector, []).append(record)
    result = []
    for connector in sorted(found):
        needing = found[connector]
        unlocked = [r for r in needing if r["status"] == "ready" and r.get("verified")]
        item = {"name": connector, "skills": [r["name"] for r in needing], "connected": bool(unlocked)}
        if unlocked:
            item["connectedBy"] = unlocked[0]["name"]
        else:
            nearest = min(needing, key=lambda r: (r["status"] != "ready", len(steps(r)), r["name"]))
            item["unlock"] = {"skill": nearest["name"], "step": steps(nearest)[0]}
        result.append(item)
    return result


def unlock(record, connected):
    """What unlocks a locked skill first, as {"kind", "name", "step"}: a connector not yet connected
    (`connected` maps connector -> bool), else the first binary, env var, config path, capability or
    skill it lacks, else a verification that failed."""
    from ..skill.installspec import hints  # a locked skill only: installspec brings shlex and `re`

    missing = record.get("missing") or {}
    locked = [c for c in record.get("connectors") or [] if not connected.get(c)]
    found = [("connector", c, f"connect {c}") for c in locked]
    install = hints(record)
    found += [("bin", b, f"install {b}" + (f": {install[0]}" if install else "")) for b in missing.get("bins", [])]
    if missing.get("anyBins"):
        found.append(("anyBins", " ".join(missing["anyBins"]), "install one of " + ", ".join(missing["anyBins"])))
    found += [("env", v, f"set {v}") for v in missing.get("env", [])]
    found += [("config", p, f"nexus config set {p} true") for p in missing.get("config", [])]
    found += [("capability", c, f"make a provider of {c} ready") for c in missing.get("capabilities", [])]
    found += [("skill", s, f"make the skill {s} ready") for s in missing.get("skills", [])]
    kind, name, step = found[0] if found else ("verify", record["name"], f"fix and verify: nexus skill verify {record['name']}")
    return {"kind": kind, "name": name, "step": step}


def check(entries):
    """What `nexus skills check` says of a set of entries as a whole: {name: [(severity, message)]} for a
    required capability nothing provides (a warning: it may come with a skill not installed yet) and a
    cycle of requirements (an error: no skill in it can ever be ready)."""
    records = [{**e, "status": "ready"} for e in entries]
    by_name = {r["name"]: r for r in records}
    provided = providers(records)
    found = {}
    for record in records:
        for capability in requirements(record)[0]:
            if capability not in provided:
                found.setdefault(record["name"], []).append(
                    ("warning", f"requires.capabilities: nothing provides {capability} (no skill implements it)"))
    edges = {name: _depends_on(record, by_name, provided) for name, record in by_name.items()}
    for cycle in _cycles(edges):
        for name in cycle:
            found.setdefault(name, []).append(("error", "requirement cycle: " + " -> ".join(cycle + cycle[:1])))
    return found
