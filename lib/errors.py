"""The small family of errors a tool maps to an exit code and a one-line message."""


class NexusError(Exception):
    """The gateway refuses: not found, not installed, not configured (exit 1)."""

    exit_code = 1


class Refused(NexusError):
    """The gateway refuses to run a skill, for a reason its usage log records as `refused`: one of
    schema.REFUSALS. gateway.call.Call.refuse records it as a call of the skill. `unseen`: the skill is
    not the caller's to know of (one kept from models, for a model): answered as an unknown one."""

    def __init__(self, code, message, unseen=False):
        super().__init__(message)
        self.code, self.unseen = code, unseen


class UsageError(NexusError):
    """The call's words are off (exit 2)."""

    exit_code = 2


class BadInput(NexusError):
    """Input that cannot be read: bad JSON on stdin, a malformed config file (exit 2)."""

    exit_code = 2
