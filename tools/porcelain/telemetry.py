"""`nexus telemetry push`: the usage log entries not sent yet, as spans, to an OpenTelemetry collector."""

from nexus.cli.command import renders
from nexus.usage import telemetry, text


@renders(text.render_push, {"--dry-run": text.render_dry})
def push(ctx):
    """Each call in the usage logs that was not sent yet becomes a span of a tool execution (execute_tool,
    gen_ai.tool.name, gen_ai.tool.call.id, process.exit.code, error.type, session.id, nexus.client,
    nexus.profile, nexus.token, the arguments as logged: secrets masked), sent over OTLP/HTTP to
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces, else the config's
    telemetry.endpoint; OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS are
    honoured. For cron: the command-line gateway itself never exports.

    A cursor per skill ($NEXUS_HOME/state/nexus/telemetry-cursor.json: the timestamp, SHA-256 and number of
    the last line sent) survives rotation; it moves once the collector took a batch. A span's ids are
    derived from its log line, so a batch sent again after a crash is the same spans to the backend.
    Entries that rotation pruned before they were sent are counted, said on stderr and in prunedBySkill,
    never lost in silence. Needs the extra nexus-skills[otel] (opentelemetry-proto), except --dry-run.

    Exit status:
      0  sent (or nothing to send)
      1  the collector did not take a batch (the cursor stays before it)
      2  usage error: no endpoint, or the extra is not installed

    Examples:
      nexus telemetry push --dry-run
      OTEL_EXPORTER_OTLP_ENDPOINT=http://HOST:4318 nexus telemetry push
    """
    return telemetry.push(ctx.config, ctx.args["--dry-run"], warn=ctx.warn)
