"""`nexus profiles`: each profile of the config, and the skills an agent given it may see and run."""

from nexus import config as configlib
from nexus.catalog import listing, scope
from nexus.cli.command import renders
from nexus.style import Style


def render_profiles(found, out):
    if not found:
        out.write("No profiles: every agent sees every skill. Add one with\n"
                  "  nexus config set profiles.NAME.skills.allow '[\"skill\", \"capability:NAME\"]'\n")
        return
    style = Style(out)
    for profile in found:
        default = " (default)" if profile["default"] else ""
        out.write(f"{style.color(profile['name'], 'bold')}{default}\n")
        rules = [("allow", profile["allow"] if profile["allow"] is not None else ["every skill"]),
                 ("deny", profile["deny"])]
        for word, patterns in rules:
            if patterns:
                out.write(f"  {word}: {', '.join(patterns)}\n")
        skills = profile["skills"]
        out.write(f"  skills ({len(skills):,}): {', '.join(skills) if skills else 'none'}\n")


@renders(render_profiles)
def list_profiles(ctx):
    """A profile is a [profiles.NAME] table of the config: `skills.allow` and `skills.deny` list skill names,
    `*` globs and `capability:NAME` (the skills that provide it, but for one added with `nexus skills
    add`, which only its name or a glob admits: it claims what it likes). An agent given a profile
    (`--profile`, NEXUS_PROFILE, `skills.defaultProfile`, or `nexus-mcp --profile`) sees and runs only its
    skills. Under a profile named by `--profile` or NEXUS_PROFILE, as agents are given one, this lists
    that profile alone.
    """
    found = scope.profiles(ctx.config)
    if scope.named():  # an agent given a profile learns nothing of the others' rules or skills
        given = scope.chosen(ctx.config)  # an unknown profile is an error, never every profile
        found = {given.name: given}
    records = listing.listed(ctx.config, ctx.warn, scoped=False).records() if found else []
    default = configlib.get(ctx.config, "skills.defaultProfile")
    return [{"name": name, "default": name == default, "allow": profile.allow, "deny": profile.deny,
             "skills": [r["name"] for r in records if profile.admits(r)]}
            for name, profile in sorted(found.items())]
