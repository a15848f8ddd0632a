"""The command table: every command of nexus as a record, porcelain and plumbing, as git's command list
holds both. The dispatcher, `--help`, the usage docopt parses, the man pages, the shell completions, the
README's Commands table and the tests' lists of scripts are all made from it (`make man` writes the
generated files; tests/test_architecture.py and tests/test_man.py fail when one is stale).

A row is a nexus.cli.records.Command; ARCHITECTURE.md ("A command") says how to add one, or an option.
No tool imports another, nor this table, which names them: the scripts of tools/bin/ start a tool
through it (`script`), and `nexus` (tools/nexus.py) dispatches through it.
"""

import sys

from nexus.cli.command import call, meant, options_first, prepared
from nexus.cli.output import DOCUMENT, PROCESS, STREAM, TEXT, say
from nexus.catalog import scope
from nexus.cli.records import (CAPABILITY, COMMAND, DIR, FILE, JOB, KEY, PLUMBING, SESSION, SKILL, STRING, WIDTH, Command,
                               Option, choice, definition, number, reflow, whole, wrap)
from nexus.errors import NexusError, UsageError
from nexus.tools.plumbing.run import NEXUS_RUN, SKILL_RUN


# -- what the layer prepares before a command runs (git's RUN_SETUP) -------------------------------------


def ENTRY(ctx):  # noqa: N802 - a constant of the table, as DOCUMENT is
    """ctx.entry: the manifest entry of the skill NAME, from a manifest kept fresh for it alone, as the
    profile in force lets this agent see it (NexusError for a skill outside it). The gateway reads its
    entry itself: its refusals are logged (gateway.call.Call.refuse)."""
    from nexus.catalog import listing  # the commands about one skill only: the gateway's way never loads it

    ctx.entry = listing.entry(ctx.config, ctx.args["NAME"], ctx.warn)


# -- the types of values -----------------------------------------------------------------------------------

DAYS = whole(1, 36500)  # a window of days: up to a hundred years
JOBS = whole(1, 256)  # verify commands at once
COUNT = whole(1, 100_000_000)
BYTES = whole(1, 2**40)
SECONDS, HOURS, INTERVAL = number(), number(zero=True), number(zero=True)  # HOURS 0: every skill; INTERVAL 0: never
FORMATS = choice("nexus.agents.instructions:PROMPT_FORMATS")
KEY_TYPES = choice("nexus.config.keys:TYPES")
CLIENTS = choice("nexus.mcp.clients:CLIENTS")
SCOPES = choice("nexus.mcp.clients:SCOPES")
AGENTS = choice("nexus.paths:AGENT_FOLDERS")

# -- commands that are both porcelain and plumbing --------------------------------------------------------

MCP = "nexus.tools.plumbing.mcp:serve"
MCP_USAGE = ("[--max-output BYTES] [--watch SECONDS] [--max-calls N] [--tools MODE]",
             "--http [--host HOST] [--port PORT] [--no-auth] [--certfile FILE] [--keyfile FILE] "
             "[--allow-origin ORIGIN]... [--max-connections N] [--max-sessions N] [--calls-per-token N] "
             "[--max-output BYTES] [--watch SECONDS] [--max-calls N] [--tools MODE]")
MCP_OPTIONS = (Option("--max-output BYTES", "The most bytes of a tool's stdout, and of its stderr, that a result "
                                            "carries; also the largest resource.", BYTES, default=256 * 1024),
               Option("--watch SECONDS", "How often to look for changed skills; 0: never.", INTERVAL, default=2),
               Option("--max-calls N", "The most tool calls that run at once; a call past it is answered at once "
                                       "with a tool error saying so.", whole(1, 1024), default=16),
               Option("--tools MODE", "What tools/list holds: each (a tool per skill), loader (run_skill, "
                                      "list_skills and read_skill, however many skills there are) or auto (loader "
                                      "once 40 tool and script skills are offered, else each); the config's "
                                      "mcp.tools, else auto.", choice("nexus.mcp.offer:MODES")),
               Option("--http", "Serve over MCP's streamable HTTP transport at http://HOST:PORT/mcp, many clients "
                                "at once, each with a bearer token (`nexus mcp token add`), instead of one client "
                                "on stdin and stdout."),
               Option("--host HOST", "The address to listen on; one that is not loopback needs a token.", STRING,
                      default="127.0.0.1"),
               Option("--port PORT", "The port to listen on; 0: any free one (the server says which on stderr).",
                      whole(0, 65535), default=8765),
               Option("--no-auth", "Let in requests without a token: on a loopback address alone."),
               Option("--certfile FILE", "Serve HTTPS with this certificate (PEM), with --keyfile.", FILE),
               Option("--keyfile FILE", "The certificate's private key (PEM).", FILE),
               Option("--allow-origin ORIGIN", "A browser page's origin (scheme://host:port) let in besides this "
                                               "server's own; any other Origin is refused (403).", STRING,
                      repeat=True),
               Option("--max-connections N", "The most connections one client address holds open at once; past it "
                                             "a new one closes that address's oldest idle one, or is refused (503) "
                                             "when none is idle.", whole(1, 4096), default=64),
               Option("--max-sessions N", "The most sessions one token holds open at once; one more is refused "
                                          "(503).", whole(1, 10000), default=32),
               Option("--calls-per-token N", "The most tool calls one token runs at once, a share of the "
                                             "server's; one more is answered at once with a tool error saying so.",
                      whole(1, 1024), default=8))

# -- the table ---------------------------------------------------------------------------------------------

COMMANDS = (  # the porcelain: `nexus WORDS`
    Command("skills list", "skills:list_skills", DOCUMENT,
            "Skills grouped by status: ready, needs setup, not installed, disabled, invalid.",
            usage=("[--ready | --locked | --all] [--json]", "--summary [--json]"),
            options=(Option("--ready", "Only skills that are ready to use."),
                     Option("--locked", "Only skills that need setup or are not installed, grouped by what unlocks "
                                        'them (--json: each with "unlock": {"kind", "name", "step"}).'),
                     Option("--all", "Also skills whose `os` excludes this platform."),
                     Option("--summary", "One line of counts per status: the same as `nexus status`."),
                     Option("--json", "An array of entries: name, description, source, type, status, verified, "
                                      "missing, ..., and for a tool or script skill permissions (what it may do "
                                      "when confined, as `nexus skill show --json` has them)."))),
    Command("skills refresh", "skills:refresh", DOCUMENT,
            "Rescan every skill source and rewrite the manifest.",
            usage=("[--json]",),
            options=(Option("--json", 'Print {"skills": N, "invalid": N, "shadowed": N, "manifest": PATH}.'),)),
    Command("skills path", "skills:path", DOCUMENT,
            "Print every skill source folder, lowest precedence first.",
            usage=("[--json]",),
            options=(Option("--json", 'An array of {"source", "path", "exists"}.'),)),
    Command("skills verify", "skill:verify_all", DOCUMENT,
            "Re-verify every skill never verified or verified over HOURS ago (for cron).",
            usage=("--all [--stale HOURS] [--jobs N] [--json] [--timeout SECONDS]",),
            options=(Option("--all", "Every tool and script skill in the manifest."),
                     Option("--stale HOURS", "Only skills never verified, or last verified over HOURS ago.", HOURS),
                     Option("--jobs N", "How many verify commands run at once (default: one per CPU).", JOBS),
                     Option("--json", "An array of outcomes, one per skill, in the order of their names."),
                     Option("--timeout SECONDS", "How long one verify command may run.", SECONDS, default=30))),
    Command("skills rotate", "usage:rotate", DOCUMENT,
            "Prune every usage log to its limits (for cron).",
            usage=("[--json]",),
            options=(Option("--json", 'Print {"skills": [{"name", "logEntries"}], "maxEntries", "maxBytes", '
                                      '"jobsRemoved"}.'),)),
    Command("skills check", "check:check", DOCUMENT,
            "Lint SKILL.md files against the Agent Skills and nexus rules.",
            usage=("[--strict] [--json] [--] [PATH...]",),
            options=(Option("--strict", "Also warn about fields that neither Agent Skills nor nexus defines."),
                     Option("--json", 'An array of findings: {"path", "line", "severity", "code", "message"}.')),
            arguments={"PATH": FILE}),
    Command("skills audit", "audit:audit", DOCUMENT,
            "Read every file of skills for what hostile skills do: hidden text, pipe-to-shell, credentials, ...",
            usage=("[--strict] [--json] [--] [SKILL...]",),
            options=(Option("--strict", "Exit 1 on a medium finding too."),
                     Option("--json", 'One document: {"audited": [{"name", "dir"}], "findings": [{"path", "line", '
                                      '"severity", "code", "message"}]}.')),
            arguments={"SKILL": FILE}),
    Command("skills cursor-rules", "agents:cursor_rules", TEXT,
            "The Cursor rules text; --write puts it in DIR/.cursor/rules/.",
            usage=("[--write [DIR]]",),
            options=(Option("--write", "Write the rules to DIR/.cursor/rules/nexus-skills.mdc instead (DIR: the "
                                       "current folder), creating the folders, and print the file's path. The file "
                                       "belongs to nexus: run the command again whenever skills change."),),
            arguments={"DIR": DIR}),
    Command("skills agents-md", "agents:agents_md", TEXT,
            "The AGENTS.md skills section; --write updates only that section of FILE.",
            usage=("[--write FILE]",),
            options=(Option("--write FILE", "Update the section in FILE instead, or append it when FILE has none "
                                            "(creating FILE), and print FILE's path. Everything outside the "
                                            "section is kept as it is.", FILE),)),
    Command("skills prompt", "agents:prompt", TEXT,
            "The block of ready skills an agent's system prompt includes.",
            usage=("[--format FORMAT] [--max-chars N] [--max-skills N]",),
            options=(Option("--format FORMAT", "xml: an <available_skills> block, as agents built on the Agent "
                                               "Skills convention expect; markdown: a list.", FORMATS, default="xml"),
                     Option("--max-chars N", "Keep the block within N characters.", COUNT),
                     Option("--max-skills N", "List at most N skills.", COUNT))),
    Command("skills add", "distribute:add", DOCUMENT,
            "Add skills from a folder or a git repository to the managed source.",
            usage=("SOURCE [--skill NAME]... [--list] [--copy] [--force] [--allow-network] [--allow-write PATH]... "
                   "[--allow-read PATH]... [--yes] [--json]",
                   "--project SOURCE [--skill NAME]... [--ref REF] [--force] [--yes] [--json]"),
            options=(Option("--skill NAME", "Only this skill (repeat for more).", repeat=True),
                     Option("--project", "Declare the skills in the project's nexus.toml (in the project nexus runs "
                                         "in, else this folder) and `nexus skills sync`: the team's skills, pinned "
                                         "in nexus.lock."),
                     Option("--ref REF", "With --project: the tag, branch or commit of a git SOURCE to use.", STRING),
                     Option("--list", "Show the skills SOURCE holds; add nothing."),
                     Option("--copy", "Copy a folder's skills instead of linking them (skills from git are always "
                                      "copied)."),
                     Option("--force", "Replace a skill of the same name that was placed by hand or came from "
                                       "elsewhere, add one that shadows a skill you have (bundled, workspace, "
                                       "extra folders), and add one with a high finding of `nexus skills audit`."),
                     Option("--allow-network", "Let the skills added use the network when they run confined (as "
                                               "`nexus skill allow NAME network` does for one); without it, one "
                                               "that is confined has none."),
                     Option("--allow-write PATH", "A folder the skills added may write when they run confined (as "
                                                  "`nexus skill allow NAME --write PATH`).", FILE, repeat=True),
                     Option("--allow-read PATH", "A folder or file the skills added may read when they run confined "
                                                 "(a secret of skills.sandbox.deny only when granted whole).", FILE,
                            repeat=True),
                     Option("--yes", "Accept what each skill declares it needs (network, folders to write or read) "
                                     "without asking: a skill that would run confined and declares more than the "
                                     "default is asked about at a terminal, and refused (exit 1) where there is "
                                     "none, unless --yes or the --allow-* options grant it."),
                     Option("--json", "The outcome as JSON: source, revision, added (each with what it shadows), "
                                      "unchanged, refused, and permissions (what each added skill will be allowed, "
                                      "as `nexus skill show --json` has it).")),
            arguments={"SOURCE": STRING}),
    Command("skills remove", "distribute:remove", DOCUMENT,
            "Remove added skills.",
            usage=("NAME... [--json]", "--project NAME... [--json]"),
            options=(Option("--project", "Take the skills out of the project's nexus.toml (its comments kept) and "
                                         "`nexus skills sync`, which removes them from .nexus/skills and nexus.lock."),
                     Option("--json", "An array of the names removed; with --project, sync's outcome.")),
            arguments={"NAME": SKILL}),
    Command("skills update", "distribute:update", DOCUMENT,
            "Fetch added skills again and report which changed.",
            usage=("[NAME...] [--force] [--yes] [--json]", "--project [NAME...] [--force] [--yes] [--json]"),
            options=(Option("--project", "Move the pins of the project's skills (all, or those named) in nexus.lock "
                                         "to what their refs name now, and show what changed, permissions first."),
                     Option("--force", "Replace a copied skill that was edited in place with its source's files, "
                                       "and update one whose new version has a new high finding of `nexus skills "
                                       "audit`."),
                     Option("--yes", "Accept what a changed skill now declares it needs beyond what it declared "
                                     "(network, folders), and a linked skill whose folder was edited in place: "
                                     "else it is asked about at a terminal, and kept as it is (exit 1) where "
                                     "there is none; with --yes each acceptance is said."),
                     Option("--json", "The outcome as JSON: changed, restored (a copy deleted by hand, put back), "
                                      "unchanged, editedLocally, removedUpstream, refused (lists of names), failed "
                                      "(name and error), findings (the audit's findings new since the version you "
                                      "have), and permissions (what each changed skill will be allowed).")),
            arguments={"NAME": SKILL}),
    Command("skills sync", "distribute:sync", DOCUMENT,
            "Install the skills the project's nexus.toml declares, and write nexus.lock.",
            usage=("[--frozen] [--force] [--yes] [--json]",),
            options=(Option("--frozen", "Install exactly nexus.lock (CI, a fresh clone): refuse (exit 1) a lock that "
                                        "is missing or stale, files or permissions that differ from it, a commit "
                                        "that cannot be fetched, a skill edited in place; never write the lock."),
                     Option("--force", "Replace a project skill that was edited in place, and place one with a high "
                                       "finding of `nexus skills audit`."),
                     Option("--yes", "Accept what each skill declares it needs (network, folders) without asking: "
                                     "else it is asked about at a terminal, and refused (exit 1) where there is "
                                     "none. What nexus.lock records is never taken as accepted."),
                     Option("--json", "The outcome as JSON: root, added, updated, unchanged, removed, refused (name "
                                      "and error), changes (per skill: permissions, commit, integrity, each before "
                                      "and after)."))),
    Command("skills link", "distribute:link", DOCUMENT,
            "Link the ready skills where an agent looks (cursor, claude-code, codex, agents).",
            usage=("--agent AGENT [--dir DIR] [--unlink] [--include-confined] [--json]",),
            options=(Option("--agent AGENT", "Where the agent reads skills: cursor (.cursor/skills), claude-code "
                                             "(.claude/skills), codex (.codex/skills), agents (.agents/skills: the "
                                             "shared folder that Codex, Gemini CLI, opencode, Copilot and Goose "
                                             "read too), gemini (.gemini/skills), opencode (.opencode/skills), "
                                             "copilot (.github/skills: GitHub Copilot in VS Code, its CLI and "
                                             "cloud agent), kiro (.kiro/skills), roo-code (.roo/skills), windsurf "
                                             "(.windsurf/skills) or cline (.cline/skills).", AGENTS),
                     Option("--dir DIR", "The project folder holding the agent's folder.", DIR, default="."),
                     Option("--unlink", "Remove the links nexus made there, and nothing else."),
                     Option("--include-confined", "Link the skills nexus runs confined too (an agent runs their "
                                                  "scripts itself, unconfined)."),
                     Option("--json", "The outcome as JSON: folder, linked, unchanged, skipped, unlinked, confined."))),
    Command("skill install", "skill:install", DOCUMENT,
            "Run the install spec that fits this platform, then verify the skill.",
            usage=("NAME [--id ID] [--dry-run] [--yes] [--json]",),
            options=(Option("--id ID", "The install spec with this id (default: the best fit whose package manager "
                                       "is here); runs it even when the skill's tools are already installed."),
                     Option("--dry-run", "Print the command, run nothing."),
                     Option("--yes", "Run without asking (needed when there is no terminal, as under cron or an "
                                     "agent)."),
                     Option("--json", "The outcome as JSON: skill, command, installed, alreadyInstalled, "
                                      "verification.")),
            arguments={"NAME": SKILL},
            needs=(ENTRY,)),
    Command("skill trust", "audit:trust", DOCUMENT,
            "Accept an added skill's files as they are now, after showing the change and its audit.",
            usage=("NAME [--yes] [--force] [--json]",),
            options=(Option("--yes", "Trust without asking (needed without a terminal, as under cron or an agent)."),
                     Option("--force", "Trust it even with a high finding in the change."),
                     Option("--json", "The outcome as JSON: name, changed, added, removed, findings, trusted.")),
            arguments={"NAME": SKILL}),
    Command("skill show", "skill:show", DOCUMENT,
            "A skill's status, requirements, usage and prompt.",
            usage=("NAME [--json | --prompt-only]",),
            options=(Option("--json", "The manifest entry with status, verified, missing, state, fromConfig, "
                                      'permissions and prompt, as JSON; fromConfig: {"env": [names], "apiKey": '
                                      'true or false, "apiKeyEnv"}; permissions (tool and script skills): '
                                      '{"confined", "network", "write", "read", and where confined "available"}.'),
                     Option("--prompt-only", "Only the prompt ({baseDir} resolved), for agents.")),
            arguments={"NAME": SKILL},
            needs=(ENTRY,)),
    Command("skill verify", "skill:verify_skill", DOCUMENT,
            "Run a skill's verify command and record the outcome.",
            usage=("NAME [--force] [--json] [--timeout SECONDS]",),
            options=(Option("--force", "Run the verify command even when the skill is already verified."),
                     Option("--json", "Print the outcome as JSON: skill, type, verify, ok, configured, "
                                      "configuredAt (the first success), exit, error, ms."),
                     Option("--timeout SECONDS", "How long the verify command may run.", SECONDS, default=30)),
            arguments={"NAME": SKILL},
            needs=(ENTRY,)),
    SKILL_RUN,
    Command("skill stats", "usage:skill_stats", DOCUMENT,
            "Usage statistics, for every skill or one.",
            usage=("[NAME] [--days N] [--session ID] [--profile NAME] [--json]",),
            options=(Option("--days N", "The window: the past N days.", DAYS, default=30),
                     Option("--session ID", "Only the calls of one session (NEXUS_SESSION_ID; see `nexus "
                                            "sessions`).", SESSION),
                     Option("--profile NAME", "Only the calls made under one profile (see `nexus profiles`).",
                            STRING),
                     Option("--json", "Every figure as numbers and ISO timestamps, as `nexus-stats --json` prints "
                                      "them.")),
            arguments={"NAME": SKILL}),
    Command("skill enable", "config:enable_skill", DOCUMENT,
            "Enable a skill in the config (skills.entries.KEY.enabled).",
            usage=("NAME [--json]",),
            options=(Option("--json", '{"skill", "key", "enabled", "changed"}, and "disabledReason" and "fix" when '
                                      "it stays disabled."),),
            arguments={"NAME": SKILL},
            needs=(ENTRY,)),
    Command("skill disable", "config:disable_skill", DOCUMENT,
            "Disable a skill in the config: listed as disabled, never run.",
            usage=("NAME [--json]",),
            options=(Option("--json", '{"skill", "key", "enabled", "changed"}.'),),
            arguments={"NAME": SKILL},
            needs=(ENTRY,)),
    Command("skill env", "config:set_env", DOCUMENT,
            "Set or remove environment variables the skill's tool gets.",
            usage=("NAME [VAR=VALUE...] [--secret] [--unset VAR]... [--json]",),
            options=(Option("--secret", "The values set are secrets: masked as *** wherever nexus writes or shows "
                                        "them (the usage log, errors, sessions, crystallized skills), as "
                                        "skills.entries.KEY.secretEnv says."),
                     Option("--unset VAR", "Remove VAR from the skill's environment (may be repeated).", repeat=True),
                     Option("--json", '{"skill", "key", "set", "unset", "marked", "env", "secret"}: names, never '
                                      'values ("set", "unset" and "marked" only when asked to change something).')),
            arguments={"NAME": SKILL, "VAR=VALUE": STRING},
            needs=(ENTRY,)),
    Command("skill key", "config:store_key", DOCUMENT,
            "Store the skill's API key, read from stdin or asked for without echo.",
            usage=("NAME [--unset] [--json]",),
            options=(Option("--unset", "Remove the skill's key."),
                     Option("--json", '{"skill", "key", "apiKey": "set", "unchanged" or "unset", "env"}: never the '
                                      "key itself.")),
            arguments={"NAME": SKILL},
            needs=(ENTRY,)),
    Command("skill allow", "config:allow_skill", DOCUMENT,
            "Widen what a confined skill may do: network, a folder to write or read.",
            usage=("NAME [network] [--write PATH]... [--read PATH]... [--json]",),
            options=(Option("--write PATH", "A folder the skill may write (and read) when it runs confined.", FILE,
                            repeat=True),
                     Option("--read PATH", "A folder or file the skill may read when it runs confined (a secret "
                                           "of skills.sandbox.deny only when granted whole).", FILE, repeat=True),
                     Option("--json", '{"skill", "granted", "changed", "key"}.')),
            arguments={"NAME": SKILL},
            needs=(ENTRY,)),
    Command("config get", "config:get_key", DOCUMENT,
            "Print the value nexus uses for a key: the file's, else the default.",
            usage=("KEY [--json]",),
            options=(Option("--json", '{"key", "value", "default", "origin"}: origin is "file" or "default".'),),
            arguments={"KEY": KEY}),
    Command("config set", "config:set_key", DOCUMENT,
            "Set a key in the config, in place: comments and formatting stay.",
            usage=("KEY [--] VALUE [--type TYPE] [--force] [--json]",),
            options=(Option("--type TYPE", "Read VALUE as this type: bool, int, string, list or table; an error "
                                           "when it is not one.", KEY_TYPES),
                     Option("--force", "Set a key nexus does not know (outside `skills`, where your own keys "
                                       "live)."),
                     Option("--json", "{\"key\", \"value\", \"changed\", \"file\"} (a secret's value as \"***\").")),
            arguments={"KEY": KEY, "VALUE": STRING}),
    Command("config unset", "config:unset_key", DOCUMENT,
            "Remove a key from the config: nexus then uses the default.",
            usage=("KEY [--json]",),
            options=(Option("--json", '{"key", "value": null, "changed", "file"}.'),),
            arguments={"KEY": KEY}),
    Command("config list", "config:list_keys", DOCUMENT,
            "Every key nexus knows, its value and where it comes from.",
            usage=("[--json]",),
            options=(Option("--json", 'An array: {"key", "value", "default", "origin", "type", "meaning"} for each '
                                      "key."),)),
    Command("config path", "config:show_path", DOCUMENT,
            "Print the path of the config file.",
            usage=("[--json]",),
            options=(Option("--json", '{"path", "exists"}.'),)),
    Command("config edit", "config:edit_file", DOCUMENT,
            "Edit the config in $VISUAL or $EDITOR; an invalid result is never saved.",
            usage=("",)),
    Command("telemetry push", "telemetry:push", DOCUMENT,
            "Send the calls not sent yet to an OpenTelemetry collector, one span each (for cron).",
            usage=("[--dry-run] [--json]",),
            options=(Option("--dry-run", "Print what would be sent as JSON ({endpoint, wouldSend, pruned, "
                                         "prunedBySkill, spans}); send nothing, move no cursor."),
                     Option("--json", 'Print {"endpoint", "sent", "pruned", "prunedBySkill"}.'))),
    Command("profiles", "profiles:list_profiles", DOCUMENT,
            "Each profile: what it allows and denies, and the skills an agent given it may see and run.",
            usage=("[--json]",),
            options=(Option("--json", 'An array of {"name", "default", "allow", "deny", "skills"}: `skills` names '
                                      "every skill in the profile's scope, whatever its status."),)),
    Command("status", "skills:status", DOCUMENT,
            "One line: how many skills are ready, need setup, are not installed, disabled.",
            usage=("[--check] [--json]",),
            options=(Option("--check", "For cron and monitoring: print one line per skill that is degraded or has "
                                       "drifted, and per SKILL.md that is invalid, and exit 1 when there is one; "
                                       "print nothing and exit 0 when all is well."),
                     Option("--json", 'Print {"ready", "needsSetup", "notInstalled", "disabled", "invalid", '
                                      '"unsupported", "degraded", "drifted"}, each a count; with --check, also '
                                      '"unhealthy": [[name, flag, why]]; and "sandbox": {"mode", "landlock" (its '
                                      'ABI, 0: none), "netns", "text", "problem"}.'))),
    Command("capabilities", "capabilities:list_capabilities", DOCUMENT,
            "Every capability: the skills that provide and need it, and the provider chosen.",
            usage=("[--json]",),
            options=(Option("--json", 'An array of {"name", "providers": [{"name", "status", "verified"}], '
                                      '"consumers", "chosen"}.'),)),
    Command("capability resolve", "capabilities:resolve", DOCUMENT,
            "The ready provider of a capability to use, for scripts; --explain ranks them all.",
            usage=("CAPABILITY [--explain] [--json]",),
            options=(Option("--explain", "Print the ranking of every provider, with the reasons for its place."),
                     Option("--json", 'Print {"capability", "chosen", "ranking": [{"name", "status", "ready", '
                                      '"verified", "successRate", "why"}]}.')),
            arguments={"CAPABILITY": CAPABILITY}),
    Command("connectors", "capabilities:list_connectors", DOCUMENT,
            "The accounts skills need connected (google, github, ...): connected, or the step that unlocks.",
            usage=("[--json]",),
            options=(Option("--json", 'An array of {"name", "skills", "connected", "connectedBy"} or, when locked, '
                                      '{"name", "skills", "connected": false, "unlock": {"skill", "step"}}.'),)),
    Command("sessions", "sessions:list_sessions", DOCUMENT,
            "Each session in the usage logs: its calls, skills, failures, refusals, first and last call.",
            usage=("[--days N] [--limit N | --all] [--json]",),
            options=(Option("--days N", "Only calls of the past N days (default: every call the logs hold).", DAYS),
                     Option("--limit N", "Show the newest N sessions (default: 20; --json: every one).", COUNT),
                     Option("--all", "Show every session."),
                     Option("--json", 'An array of {"id", "first", "last", "calls", "skills", "failures", "refused", '
                                      '"clients", "profiles"}, newest first.'))),
    Command("session show", "sessions:show", DOCUMENT,
            "One session's calls across every skill, in time order.",
            usage=("ID [--json]",),
            options=(Option("--json", "An array of the session's calls in time order: {\"n\", \"ts\", \"skill\", "
                                      '"type", "args", "exit", "ms", "error", "refused"} (args masked as logged).'),),
            arguments={"ID": SESSION}),
    Command("session new", "sessions:new", TEXT,
            "A fresh session id, for NEXUS_SESSION_ID.",
            usage=("",)),
    Command("session crystallize", "sessions:crystallize", DOCUMENT,
            "Turn a session's successful calls into a script skill that replays them.",
            usage=("ID --name NAME [--calls N-M] [--var NAME=VALUE]... [--dry-run] [--force] [--json]",),
            options=(Option("--name NAME", "The new skill's name (a folder in the workspace)."),
                     Option("--calls N-M", "Only these calls (their numbers in `nexus session show`)."),
                     Option("--var NAME=VALUE", "Make VALUE, wherever it occurs in the recorded arguments, a "
                                                "parameter of the new skill: --NAME VALUE, or in order. Repeat for "
                                                "more. VALUE *** stands for a secret that was masked in the "
                                                "log.", repeat=True),
                     Option("--dry-run", "Print the SKILL.md and the script; write nothing."),
                     Option("--force", "Take a name a skill already has: replace it in the workspace, or hide one "
                                       "of another source."),
                     Option("--json", '{"name", "path", "calls", "requires", "env", "skillMd", "script", '
                                      '"dryRun"}.')),
            arguments={"ID": SESSION}),
    Command("report", "usage:usage_report", DOCUMENT,
            "The usage report: one self-contained HTML file of charts and tables (-o FILE to write it).",
            usage=("[--days N] [-o FILE] [--json]",),
            options=(Option("--days N", "The window: the past N days.", DAYS, default=30),
                     Option("-o FILE", "Write the report to FILE (atomically) and print its path. Without it, the "
                                       "report goes to stdout, or, when stdout is a terminal, to nexus-report.html "
                                       "in the current folder.", FILE),
                     Option("--json", "The figures the report shows, as JSON, instead of the report."))),
    Command("jobs", "jobs:list_jobs", DOCUMENT,
            "Background runs (skill run --background): running and ended.",
            usage=("[--json]",),
            options=(Option("--json", 'An array of jobs: {"id", "skill", "args", "status", "started", "ended", '
                                      '"exit", "ms", ...}.'),)),
    Command("job show", "jobs:show", DOCUMENT,
            "One background run: its status, exit, times and output files.",
            usage=("ID [--json]",),
            options=(Option("--json", "The job's record (job.json), as JSON."),),
            arguments={"ID": JOB}),
    Command("job logs", "jobs:logs", PROCESS,
            "What a background run wrote; --follow until it ends.",
            usage=("ID [--follow]",),
            options=(Option("--follow", "Keep printing what the job writes until it ends."),),
            arguments={"ID": JOB}),
    Command("job wait", "jobs:wait", PROCESS,
            "Wait for a background run to end; exit with its status.",
            usage=("ID [--timeout SECONDS]",),
            options=(Option("--timeout SECONDS", "Stop waiting after SECONDS (the job goes on).", SECONDS),),
            arguments={"ID": JOB}),
    Command("job kill", "jobs:kill", DOCUMENT,
            "End a background run's whole process group.",
            usage=("ID [--json]",),
            options=(Option("--json", "The job's record once it has ended."),),
            arguments={"ID": JOB}),
    Command("mcp", MCP, PROCESS, "Serve the ready skills to an agent over MCP (the same as nexus-mcp).",
            usage=MCP_USAGE, options=MCP_OPTIONS),
    Command("mcp config", "mcp:config", TEXT,
            "The entry that registers nexus with an MCP client; --write adds it.",
            usage=("--client CLIENT [--scope SCOPE] [--command PATH] [--dir DIR]",
                   "--client CLIENT --write [--force] [--scope SCOPE] [--command PATH] [--dir DIR]",
                   "--client CLIENT --url URL [--token-env VAR] [--write [--force]] [--scope SCOPE] [--dir DIR]",
                   "--client CLIENT --remove [--force] [--scope SCOPE] [--command PATH] [--url URL] [--token-env VAR] "
                   "[--dir DIR]",
                   "--list-clients [--json]"),
            options=(Option("--client CLIENT", "claude-code, claude-desktop, cursor, vscode, windsurf, zed, codex, "
                                               "gemini, goose, cline, roo-code, kiro, copilot-cli, opencode or "
                                               "continue (--list-clients says where each keeps its "
                                               "servers).", CLIENTS),
                     Option("--scope SCOPE", "project: the client's file in the project, which people commit; "
                                             "user: the client's own file in your home folder, for every project. "
                                             "By default the project, or the user for a client that has no project "
                                             "file.", SCOPES),
                     Option("--command PATH", "The command the client starts, instead of the absolute path of the "
                                              "nexus-mcp installed with this nexus.", FILE),
                     Option("--url URL", "An entry that reaches nexus-mcp --http at this URL, for claude-code, "
                                         "cursor, vscode, windsurf, gemini, codex or opencode.", STRING),
                     Option("--token-env VAR", "The environment variable the client reads the bearer token from "
                                               "as it starts (the token is never written in the file).", STRING),
                     Option("--write", "Put the entry in the client's file and print the file's path."),
                     Option("--force", "Replace or remove a nexus entry that differs from this one (--write "
                                       "and --remove keep it otherwise, and show the difference)."),
                     Option("--remove", "Take the nexus entry out of the client's file."),
                     Option("--dir DIR", "The project folder.", DIR, default="."),
                     Option("--list-clients", "Every client, its format and where its project and user files are."),
                     Option("--json", "The list of clients as JSON."))),
    Command("mcp token", "mcp:token", TEXT,
            "Bearer tokens for nexus-mcp --http: add one (printed once), list them, revoke one.",
            usage=("add TOKEN [--profile PROFILE] [--expires DAYS] [--max-calls N] [--json]", "list [--json]",
                   "revoke TOKEN"),
            options=(Option("--profile PROFILE", "Bind the token to a profile (see `nexus profiles`): its sessions "
                                                 "see and run only that profile's skills.", STRING),
                     Option("--expires DAYS", "The token stops working DAYS days from now.", DAYS),
                     Option("--max-calls N", "The most tool calls the token may make in all; a call the gateway "
                                            "refuses (disabled, outside the profile, ...) is not counted.", COUNT),
                     Option("--json", 'add: {"name", "token", "profile", "expires", "maxCalls"}; list: an array of '
                                      "{name, profile, created, expires, expired, maxCalls, calls}.")),
            arguments={"TOKEN": STRING}),
    Command("help", "nexus.tools.commands:help_text", TEXT, "Show the help of a command, a group, or of nexus.",
            usage=("[COMMAND...]",), arguments={"COMMAND": COMMAND}),
)

PLUMBING_TOOLS = (
    Command("nexus-discover", "nexus.tools.plumbing.discover:discover", STREAM,
            "find skills and print one JSON object per skill (JSON Lines).",
            usage=("[--shadowed] [--valid] [--invalid] [--] [DIR...]",),
            options=(Option("--shadowed", "Also print skills hidden by a higher source, with `shadowedBy`."),
                     Option("--valid", "Leave the broken skills out."),
                     Option("--invalid", "Print the broken skills (the default; kept for scripts written before it "
                                         "was).")),
            arguments={"DIR": DIR},
            category=PLUMBING),
    Command("nexus-manifest", "nexus.tools.plumbing.manifest:manifest", STREAM,
            "write, read or check the skills manifest (manifest.json).",
            usage=("write", "read [--invalid]", "check"),
            options=(Option("--invalid", "With read, also print the broken skills the manifest records."),),
            category=PLUMBING),
    Command("nexus-verify", "nexus.tools.plumbing.verify:verify_skills", STREAM,
            "check that skills work, and record the outcome in their state.",
            usage=("[--timeout SECONDS] [--jobs N] NAME...",
                   "--all [--stale HOURS] [--timeout SECONDS] [--jobs N]",
                   "--static"),
            options=(Option("--all", "Every tool and script skill that could pass (ready, or its last verification "
                                     'failed); the others are printed with "skipped": true and the reason.'),
                     Option("--stale HOURS", "With --all, only skills never verified, or last verified over HOURS "
                                             "ago.", HOURS),
                     Option("--timeout SECONDS", "How long one verify command may run.", SECONDS, default=30),
                     Option("--jobs N", "How many verify commands run at once (default: one per CPU); the outcomes "
                                        "are printed in the order of the skills all the same.", JOBS),
                     Option("--static", "Requirement checks only, for the entries on stdin.")),
            arguments={"NAME": SKILL},
            category=PLUMBING),
    NEXUS_RUN,
    Command("nexus-stats", "nexus.tools.plumbing.stats:usage_stats", DOCUMENT,
            "usage statistics from the per-skill usage logs, or from usage entries on stdin.",
            usage=("[NAME] [--days N] [--session ID] [--stdin] [--json]", "--otlp [--dry-run] [--json]"),
            options=(Option("--days N", "The window: the past N days.", DAYS, default=30),
                     Option("--session ID", "Only the calls of one session (NEXUS_SESSION_ID; see `nexus "
                                            "sessions`).", SESSION),
                     Option("--stdin", "Read usage entries (JSON Lines) from stdin instead of every "
                                       "$NEXUS_HOME/state/nexus/skills/NAME/usage.log."),
                     Option("--otlp", "Send the entries not sent yet to the OpenTelemetry collector (OTLP/HTTP), "
                                      "as `nexus telemetry push` does."),
                     Option("--dry-run", "With --otlp: print what would be sent as JSON, send nothing."),
                     Option("--json", "One JSON document: totalInvocations, successRate (0 to 1), avgDurationMs, "
                                      "lastUsed, skills, recentFailures, categories, skippedLines; with NAME, that "
                                      "skill's figures with daily, commonCommands and recentErrors.")),
            arguments={"NAME": SKILL},
            category=PLUMBING),
    Command("nexus-mcp", MCP, PROCESS, "serve the ready skills to an agent over MCP, every call through the gateway.",
            usage=MCP_USAGE, options=MCP_OPTIONS, category=PLUMBING),
)

TABLE = COMMANDS + PLUMBING_TOOLS

GROUPS = {  # the first word of a command -> what its commands are about
    "skills": "Every skill at once: list, check, verify, keep, hand to agents, add and link.",
    "skill": "One skill: show, run, verify, install, its usage statistics, and its config.",
    "config": "The config file (nexus.toml): get, set, unset, list, path, edit.",
    "capability": "A capability: which ready skill provides it.",
    "session": "One agent session: its calls, a fresh id, and a skill made from it.",
    "job": "One background run: show it, read its output, wait for it, end it.",
    "mcp": "The ready skills over the Model Context Protocol, for the agents that speak it.",
    "telemetry": "Every call as a span in the team's tracing backend (OpenTelemetry).",
}


def _nothing(command, argv):
    return {}


def _hidden(words, target, summary):
    return Command(words, target, TEXT, summary, usage=("",), parser=_nothing)


# Hidden commands, as git completes with --list-cmds: names for the shell completions, read from the
# manifest, the config, the usage logs and the jobs, never rescanning or parsing YAML.
HIDDEN = (
    _hidden("--list-skills", "agents:skill_names", "Every skill name in the manifest (for completion)."),
    _hidden("--list-keys", "config:key_names", "Every config key (for completion)."),
    _hidden("--list-sessions", "sessions:session_ids", "Every session id in the usage logs (for completion)."),
    _hidden("--list-jobs", "jobs:job_ids", "Every background run's id (for completion)."),
    _hidden("--list-capabilities", "capabilities:capability_names",
            "Every capability a skill in the manifest implements or requires (for completion)."),
)

PORCELAIN_PACKAGE = "nexus.tools.porcelain"  # where a row's short target ("skill:verify_skill") lives
for _row in TABLE + HIDDEN:  # the records take whole module paths: the library names no module of the tools
    if not _row.target.startswith("nexus."):
        _row.target = f"{PORCELAIN_PACKAGE}.{_row.target}"


def find(words):
    """The row of the table whose words are `words` (a string), or None."""
    return next((c for c in TABLE + HIDDEN if c.words == words), None)


def script(name):
    """The main(argv=None) -> int of the console script `name`, a plumbing row of the table (its script in
    tools/bin/ calls it: the tool's module never imports the table that names it). nexus-mcp takes --profile
    NAME before anything else (see prepared); nexus-run's script starts from tools/plumbing/run.py, which does too."""
    command = find(name)
    prepare = scope.take_option if name == "nexus-mcp" else None

    def main(argv=None):
        argv, failed = sys.argv[1:] if argv is None else list(argv), None
        if prepare:
            argv, failed = prepared(name, argv, prepare)
        return failed if failed is not None else call(command, argv)

    return main


# -- help: `nexus --help`, a group's, `nexus help` (here, since it reads the table the help row is in) ---------

ABOUT = """nexus: the skill gateway for AI agents.

Finds the skills an agent can use right now, runs them, and records every run."""

OPTIONS = """\
Options:
  -h --help       Show this help; after a command, that command's help.
  --version       Print the version.
  --profile NAME  Before the command: only the skills of profile NAME (see `nexus profiles`).
"""

ENVIRONMENT = """\
Environment:
  NEXUS_HOME          The nexus root (default ~/nexus): workspace skills, config, state.
  NEXUS_CONFIG        The config file (default $NEXUS_HOME/nexus.toml); it must exist when named.
  MANAGED_SKILLS_DIR  The managed skills folder (default ~/.nexus/skills).
                      These three are absolute paths, or start with ~; a relative one is refused.
  NEXUS_SESSION_ID    Recorded with each call of a skill, so an agent's calls can be grouped.
  SOURCE_DATE_EPOCH   The time a manifest says it was generated (for reproducible output).
  NO_COLOR            Plain output even on a terminal.
  NEXUS_DEBUG=1       Show tracebacks.
"""

EXIT_STATUS = """\
Exit status:
  0  success
  1  the gateway refused: not found, disabled, not installed, not configured, verification failed
  2  usage error or unreadable input
  N  skill run: the tool's own exit status (128+N when it was killed by signal N, 124 after --timeout)
"""

TOOLS = "Each command is also a composable tool (nexus-discover, nexus-manifest, ...); see their --help.\n"


def _command_lines(commands, prefix=""):
    """`  words  summary` lines, the summary wrapped under itself to fit the width of --help."""
    width = max(len(c.words) - len(prefix) for c in commands)
    return [line for c in commands for line in definition(c.words[len(prefix):], c.summary, width)]


def overview():
    """`nexus --help`: every command with its summary, by group."""
    lines = [ABOUT, "", "Usage:", "  nexus COMMAND [ARGS...]", "  nexus COMMAND --help",
             "  nexus help [COMMAND...]", "  nexus (-h | --help | --version)", "", "Commands:"]
    lines += _command_lines(COMMANDS)
    lines += ["", reflow(OPTIONS + "\n" + ENVIRONMENT + "\n" + EXIT_STATUS + "\n" + TOOLS)]
    return "\n".join(lines) + "\n"


def short_overview():
    """What `nexus` alone says: the groups of commands, and where to read more."""
    singles = [c for c in COMMANDS if " " not in c.words and c.words not in GROUPS]  # `mcp` is listed as a group
    lines = ["usage: nexus COMMAND [ARGS...]", "", "Commands, by group (nexus GROUP --help lists a group's):"]
    width = max(len(w) for w in list(GROUPS) + [c.words for c in singles])
    lines += [line for group, about in GROUPS.items() for line in definition(group, about, width)]
    lines += [line for c in singles for line in definition(c.words, c.summary, width)]
    lines += ["", "See 'nexus --help' for every command, 'nexus help COMMAND' for one."]
    return "\n".join(lines) + "\n"


def not_a_command(argv):
    """What nexus says to a first word that is no command, group or option: the one meant, if it is close."""
    if argv[0].startswith("-"):
        flags = ["--help", "--version", *(c.words for c in HIDDEN)]
        return f"nexus: unknown option {argv[0]}{meant(argv[0], flags)}"
    guess = suggestion(argv)
    return f"nexus: '{' '.join(argv[:2])}' is not a nexus command" + (f". Did you mean 'nexus {guess}'?" if guess else "")


def suggestion(argv):
    """The command a mistyped one was likely meant to be, or None."""
    import difflib  # a typo's hint: never on the way of a command that runs

    typed = " ".join(argv[:2])
    # A command's last word alone (`nexus run X`, `nexus list`, `nexus stats`): that command, the rest kept.
    ending = [c.words for c in COMMANDS if " " in c.words and c.words.split()[-1] == argv[0]]
    if ending:
        return " ".join([ending[0], *argv[1:]])
    words = [c.words for c in COMMANDS] + list(GROUPS)
    close = difflib.get_close_matches(typed, words, n=1, cutoff=0.75) or difflib.get_close_matches(
        argv[0], list(GROUPS) + [c.words for c in COMMANDS if " " not in c.words], n=1, cutoff=0.6)
    return close[0] if close else None


def group_help(group):
    """`nexus skills --help`: the commands of one group, with their summaries."""
    commands = [c for c in COMMANDS if c.words.startswith(group + " ")]
    own = [c for c in COMMANDS if c.words == group]
    lines = [*wrap(f"nexus {group}: {GROUPS[group]}", WIDTH), ""]
    if own:  # the group is a command too (`nexus mcp`): its help first, without its title
        lines.append(own[0].help().partition("\n\n")[2])
    else:
        lines += ["Usage:", f"  nexus {group} COMMAND [ARGS...]", f"  nexus {group} COMMAND --help", ""]
    lines += ["Commands:", *_command_lines(commands, group + " ")]
    return "\n".join(lines) + "\n"


def named(argv):
    """The command named by the first words of argv (the longest match: `mcp config` before `mcp`),
    and the rest of argv."""
    found = [c for c in COMMANDS if argv[:len(c.words.split())] == c.words.split()]
    command = max(found, key=lambda c: len(c.words.split()), default=None)
    return command, argv[len(command.words.split()):] if command else argv


def help_text(ctx):
    """`nexus help` is `nexus --help`; `nexus help GROUP` is `nexus GROUP --help`; `nexus help COMMAND`
    is `nexus COMMAND --help`, as `git help` is."""
    words = ctx.args["COMMAND"]
    if not words:
        return overview()
    if words[0] in GROUPS and len(words) == 1 and words[0] not in [c.words for c in COMMANDS]:
        return group_help(words[0])
    command, rest = named(words)
    if command is None or rest:
        guess = suggestion(words)
        raise UsageError(f"'{' '.join(words)}' is not a nexus command" + (f": did you mean '{guess}'?" if guess else ""))
    return group_help(command.words) if command.words in GROUPS else command.help()
