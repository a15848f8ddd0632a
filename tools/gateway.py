"""The gateway's two rows of the command table, `nexus skill run` and `nexus-run`, kept apart from it
(tools/commands.py lists them): an agent calls the gateway hundreds of times a session, and building the
table's other rows was about a fifth of what nexus adds to a call's start (tests/bench/bench_run.py)."""

import sys

from nexus.catalog import scope
from nexus.cli.command import call, leave, options_first, prepared
from nexus.cli.output import PROCESS
from nexus.cli.records import FILE, PLUMBING, SKILL, Command, Option, number

SECONDS = number()
RUN = "nexus.tools.plumbing.run:run"
RUN_SUMMARY = "The gateway: run a skill's tool or script, or print its prompt; every call is logged."
RUN_USAGE = ("NAME [--dry-run] [--no-verify] [--no-log] [--json] [--background] [--no-sandbox] [--timeout SECONDS] "
             "[--var NAME=VALUE]... [-- ARGS...]",)
RUN_ARGUMENTS = {"NAME": SKILL, "ARGS": FILE}
RUN_OPTIONS = (Option("--dry-run", "Print the exact argv, working directory and injected env names; run nothing."),
               Option("--no-verify", "Skip the verification a first run would do."),
               Option("--no-log", "Leave this call out of the usage log (the state counters still count it)."),
               Option("--json", "Capture the tool's output into one JSON object: skill, type, exit, ms, stdout, "
                                "stderr."),
               Option("--background", "Verify, then start the tool detached and print its job id at once (see "
                                      "`nexus jobs`): stdin /dev/null, stdout and stderr kept in files, the call "
                                      "recorded when it ends."),
               Option("--no-sandbox", "Run a skill that would run confined (see skills.sandbox.mode) with all your "
                                      "rights: for a person at a terminal; refused elsewhere, and from inside a "
                                      "gateway call."),
               Option("--timeout SECONDS", "End the tool after SECONDS as timeout(1) does: SIGTERM to its process "
                                           "group, SIGKILL 5 s later; the exit status is then 124.", SECONDS),
               Option("--var NAME=VALUE", "A variable the skill declares (metadata.nexus.variables): filled in for "
                                          "${NAME} in a prompt skill's text, and in the environment of a tool or "
                                          "script skill. A variable not given comes from the environment, else its "
                                          "default; one still missing is a refusal that names it.", repeat=True))

SKILL_RUN = Command("skill run", RUN, PROCESS, RUN_SUMMARY, usage=RUN_USAGE, options=RUN_OPTIONS,
                    arguments=RUN_ARGUMENTS, parser=options_first)
NEXUS_RUN = Command("nexus-run", RUN, PROCESS,
                    "the gateway. Run a skill's tool or script, or print its prompt; log every call.",
                    usage=RUN_USAGE, options=RUN_OPTIONS, arguments=RUN_ARGUMENTS, parser=options_first,
                    category=PLUMBING)


def main(argv=None):
    """nexus-run's: --profile NAME before anything else (catalog.scope.take_option), then the row; run as its
    script (argv None), it leaves at once (cli.command.leave)."""
    words, failed = prepared("nexus-run", sys.argv[1:] if argv is None else list(argv), scope.take_option)
    status = failed if failed is not None else call(NEXUS_RUN, words)
    return leave(status) if argv is None else status
