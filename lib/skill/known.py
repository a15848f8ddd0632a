"""Static execution metadata for well-known skills: the tools, scripts and prompt-only skills nexus knows.

A skill's own metadata.nexus (type, tool, verify, runner, script, requiredEnv) wins over these tables.
"""

KNOWN_SKILL_TOOLS = {
    "gog": {"tool": "gog", "verify": "gog gmail labels list --account default", "requiresAuth": True},
    "eve": {"tool": "eve", "verify": "eve messages --limit 1", "requiresAuth": True},
    "1password": {"tool": "op", "verify": "op whoami", "requiresAuth": True},
    "tmux": {"tool": "tmux", "verify": "tmux -V"},
    "peekaboo": {"tool": "peekaboo", "verify": "peekaboo --version"},
    "qmd": {"tool": "qmd", "verify": "qmd status"},
    "aix": {"tool": "aix", "verify": "aix --version"},
    "video-frames": {"tool": "ffmpeg", "verify": "ffmpeg -version"},
    "camsnap": {"tool": "camsnap", "verify": "camsnap --help"},
    "nano-pdf": {"tool": "nano-pdf", "verify": "nano-pdf --version"},
    # the design's "(env check)": the summarize CLI, configured once its key is set
    "summarize": {"tool": "summarize", "verify": 'test -n "$SUMMARIZE_API_KEY"', "requiredEnv": ["SUMMARIZE_API_KEY"]},
}

SCRIPT_SKILLS = {
    "brave-search": {"runner": "node", "script": "scripts/search.mjs", "requiredEnv": ["BRAVE_API_KEY"],
                     "verify": 'test -n "$BRAVE_API_KEY"'},
    "openai-image-gen": {"runner": "python3", "script": "scripts/gen.py", "requiredEnv": ["OPENAI_API_KEY"],
                         "verify": 'test -n "$OPENAI_API_KEY"'},
}

# A tool that signs in to a person's account, and the connector (the account) it needs connected.
CONNECTORS = {"gog": "google", "eve": "apple", "op": "1password", "gh": "github"}

PROMPT_ONLY_SKILLS = frozenset({
    "filesystem", "computer-use", "weather", "github", "discord", "apple-notes", "apple-reminders",
    "onboarding",
})

# What these tools need when they run confined (gateway.sandbox), where their own SKILL.md does not say.
SANDBOX = {
    "gog": {"network": True, "read": ["~/.config/gogcli"], "write": ["~/.config/gogcli"]},
    "eve": {"network": True},
    "1password": {"network": True, "read": ["~/.config/op"], "write": ["~/.config/op"]},
    # its server: a Unix socket in its folder (a grant of its own: gateway.sandbox.seccomp_filter)
    "tmux": {"unix": ["/tmp/tmux-{uid}"], "write": ["/tmp/tmux-{uid}"]},
    "qmd": {"write": ["~/.cache/qmd"]},
    "aix": {"network": True},
    "camsnap": {"write": ["{cwd}"]},
    "brave-search": {"network": True},
    "openai-image-gen": {"network": True, "write": ["{cwd}"]},
}

EXECUTION_KEYS = ("type", "tool", "verify", "runner", "script", "requiredEnv", "configEnv", "requiresAuth")


def execution(name, meta):
    """The resolved type, tool, verify, runner, script, requiredEnv and configEnv of a skill."""
    declared = {k: meta[k] for k in EXECUTION_KEYS if meta.get(k) not in (None, "", [])}
    if name in PROMPT_ONLY_SKILLS:
        table = {"type": "prompt"}
    elif name in KNOWN_SKILL_TOOLS:
        table = {"type": "tool", **KNOWN_SKILL_TOOLS[name]}
    elif name in SCRIPT_SKILLS:
        table = {"type": "script", **SCRIPT_SKILLS[name]}
    else:
        table = {}
    if "type" not in declared and ("tool" in declared or "runner" in declared or "script" in declared):
        table = {}  # the skill describes its own execution; the table's guess does not apply
    resolved = {**table, **declared}
    if "type" not in resolved:
        resolved["type"] = "script" if "script" in resolved else "tool" if "tool" in resolved else "prompt"
    return resolved
