"""OpenTelemetry: every call as a span of a tool execution with the GenAI conventions' attributes
(`execute_tool`, gen_ai.tool.name, ...), made from its usage log entry, whose arguments and error are
masked already; call counts and a duration histogram as metrics.

Two ways out, both opt in (the standard OTEL_EXPORTER_OTLP_* variables, or `telemetry.enabled` and
`telemetry.endpoint` in the config), both needing the extra `nexus-skills[otel]`:
- `Live`: nexus-mcp exports as it serves, in batches. The MCP SDK makes a span of its own for each
  request (tools/call NAME, with execute_tool and the tool's name); nexus puts its attributes on that
  span, so a call is one span, never two.
- `push` (`nexus telemetry push`, `nexus-stats --otlp`): the usage log entries not sent yet, for the
  command-line gateway, which imports nothing of this. A cursor per skill (the timestamp, the SHA-256 and
  the number of the last line sent; usage_log numbers each line it appends) survives rotation; a span's
  ids are derived from its line, so a resend after a crash is the same span to the backend; entries
  pruned by rotation before they were sent are counted and reported. A line nexus-mcp exported live says
  so (`exported`) and is not sent again; a push holds a lock, so that two at once send each line once.
"""

import hashlib
import os

from .. import __version__, config as configlib, fastjson, fileio, paths, schema, urls
from ..errors import NexusError, UsageError
from ..state import skill_state, usage_log

ENDPOINT_ENV, TRACES_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
INSTALL_HINT = ("OpenTelemetry needs the extra nexus-skills[otel] (the OpenTelemetry SDK and its OTLP exporter): "
                "pip install 'nexus-skills[otel]'")
BATCH = 512  # spans a request, as the SDK's batch processor sends them
SCOPE = "nexus"
TOOL_TYPE = "extension"  # GenAI's gen_ai.tool.type: a tool the agent's side runs for it


def endpoint(config):
    """The OTLP/HTTP traces URL in force (the standard variables, then telemetry.endpoint), or None."""
    if os.environ.get(TRACES_ENV):
        return os.environ[TRACES_ENV]
    base = os.environ.get(ENDPOINT_ENV) or configlib.get(config, "telemetry.endpoint")
    return base.rstrip("/") + "/v1/traces" if base else None


def wanted(config):
    """True when telemetry is turned on: an OTLP endpoint in the environment, or telemetry.enabled."""
    return bool(os.environ.get(ENDPOINT_ENV) or os.environ.get(TRACES_ENV)
                or configlib.get(config, "telemetry.enabled", False))


def attributes(entry):
    """The span attributes of a usage log entry (GenAI conventions where they name one, nexus.* else)."""
    found = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": entry.get("skill"),
             "gen_ai.tool.type": TOOL_TYPE, "gen_ai.tool.call.id": entry.get("call"),
             "nexus.skill.type": entry.get("type"), "process.exit.code": entry.get("exit"),
             "error.type": error_type(entry), "nexus.error": entry.get("error"), "nexus.duration_ms": entry.get("ms"),
             "session.id": entry.get("session"), "nexus.client": entry.get("client"),
             "nexus.profile": entry.get("profile"), "nexus.token": entry.get("token"),
             "nexus.refused": entry.get("refused"), "nexus.sandbox": entry.get("sandbox")}
    if isinstance(entry.get("args"), list):
        import json  # a span's arguments only (as the log has them: secrets masked)

        found["gen_ai.tool.call.arguments"] = json.dumps(entry["args"], ensure_ascii=False)
    return {k: v for k, v in found.items() if v is not None}


def error_type(entry):
    """What kind of failure a call was (the conventions' error.type), or None for a success."""
    if entry.get("refused"):
        return "refused:" + entry["refused"]
    if entry.get("error") == "cancelled":
        return "cancelled"
    code = entry.get("exit")
    if code in (None, 0):
        return None
    return "timeout" if code == 124 else "tool_error"


def line_digest(line):
    """The SHA-256 of a log line without its newline: its span's ids, and the cursor's mark of it."""
    return hashlib.sha256(line.rstrip(b"\n"))


def span_ids(line):
    """(trace id, span id) of a log line: derived from its bytes, so a line sent twice is one span."""
    digest = line_digest(line).digest()
    return digest[:16], digest[16:24]


def _pairs(variable):
    """{key: value} of an environment variable of the OTLP form k=v,k=v."""
    found = {}
    for pair in os.environ.get(variable, "").split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            found[key.strip()] = value.strip()
    return found


def resource_attributes():
    """service.name (OTEL_SERVICE_NAME, else nexus) and OTEL_RESOURCE_ATTRIBUTES (k=v,k=v)."""
    found = _pairs("OTEL_RESOURCE_ATTRIBUTES")
    found["service.name"] = os.environ.get("OTEL_SERVICE_NAME") or found.get("service.name") or "nexus"
    return found


# -- push: the log entries not sent yet --------------------------------------------------------------


def read_cursors():
    found = fileio.read_json(paths.telemetry_cursor())
    return found if isinstance(found, dict) else {}


def pending(name, cursor):
    """(lines not sent yet, as bytes; how many entries rotation pruned before they were sent, None when that
    cannot be told; the number of the last line): one skill's log against its cursor, read under its lock."""
    with fileio.Lock(paths.skill_lock(name)):
        state = skill_state.read(name)
        try:
            with open(paths.usage_log(name), "rb") as f:
                lines = [line for line in f if line.strip()]
        except FileNotFoundError:
            lines = []
    logged = state.get("logged")
    first = logged - len(lines) + 1 if isinstance(logged, int) and logged >= len(lines) else None
    last = first + len(lines) - 1 if first is not None else None
    if not cursor:
        return lines, 0, last
    digests = [line_digest(line).hexdigest() for line in lines]
    if cursor.get("sha256") in digests:  # the line last sent is still there: what follows it
        return lines[len(digests) - digests[::-1].index(cursor["sha256"]):], 0, last
    # Rotation keeps the newest lines, so the line last sent is gone with every line before it: what is
    # left came after it (a line timestamped earlier is skipped all the same); what fell between is lost.
    kept = [line for line in lines if _ts(line) >= cursor.get("ts", "")]
    number = cursor.get("number")
    pruned = max(0, first - number - 1) if first is not None and isinstance(number, int) else None
    return kept, pruned, last


def _ts(line):
    try:
        found = fastjson.loads(line)
    except ValueError:
        return ""
    return found.get("ts", "") if isinstance(found, dict) and isinstance(found.get("ts"), str) else ""


def span(line):
    """The span of one log line, as plain data (what --dry-run prints); None for a line that is no entry."""
    try:
        entry = fastjson.loads(line)
    except ValueError:
        return None
    start = schema.parse_iso(entry.get("ts")) if isinstance(entry, dict) else None
    if start is None or not isinstance(entry.get("ms"), int):
        return None
    trace, ident = span_ids(line)
    started = int(start.timestamp() * 1000) * 1_000_000
    return {"traceId": trace.hex(), "spanId": ident.hex(), "name": f"execute_tool {entry.get('skill')}",
            "startTimeUnixNano": started, "endTimeUnixNano": started + entry["ms"] * 1_000_000,
            "error": error_type(entry) is not None, "attributes": attributes(entry),
            "exported": entry.get("exported") is True}


def request(spans):
    """An OTLP ExportTraceServiceRequest (protobuf) of spans as span() makes them."""
    try:  # the otel extra's: only a push imports it
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
        from opentelemetry.proto.resource.v1.resource_pb2 import Resource
        from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status
    except ImportError:
        raise UsageError(INSTALL_HINT) from None

    def value(v):
        if isinstance(v, bool):
            return AnyValue(bool_value=v)
        if isinstance(v, int):
            return AnyValue(int_value=v)
        return AnyValue(string_value=str(v))

    def pairs(found):
        return [KeyValue(key=k, value=value(v)) for k, v in found.items()]

    made = [Span(trace_id=bytes.fromhex(s["traceId"]), span_id=bytes.fromhex(s["spanId"]), name=s["name"],
                 kind=Span.SpanKind.SPAN_KIND_INTERNAL, start_time_unix_nano=s["startTimeUnixNano"],
                 end_time_unix_nano=s["endTimeUnixNano"], attributes=pairs(s["attributes"]),
                 status=Status(code=Status.StatusCode.STATUS_CODE_ERROR if s["error"] else
                               Status.StatusCode.STATUS_CODE_OK)) for s in spans]
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(
        resource=Resource(attributes=pairs(resource_attributes())),
        scope_spans=[ScopeSpans(scope=InstrumentationScope(name=SCOPE, version=__version__), spans=made)])])


def send(url, body):
    """POST one OTLP/HTTP protobuf request; NexusError when the collector does not take it."""
    import urllib.error  # a push only
    import urllib.request

    headers = {"Content-Type": "application/x-protobuf", **_pairs("OTEL_EXPORTER_OTLP_HEADERS")}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, body, headers, method="POST"), timeout=30) as answer:
            answer.read()
    except urllib.error.HTTPError as e:
        raise NexusError(f"{urls.shown(url)}: the collector answered {e.code} {e.reason}: nothing more sent") from None
    except (urllib.error.URLError, OSError, ValueError) as e:  # ValueError: a URL urllib cannot use
        reason = str(getattr(e, "reason", e)).replace(url, urls.shown(url))  # credentials are never shown
        raise NexusError(f"{urls.shown(url)}: cannot send: {reason}: nothing more sent") from None


def push(config, dry_run=False, url=None, warn=print):
    """Send every usage log entry not sent yet as a span, a batch at a time, each skill's cursor moved once
    its batch is taken. Returns {"sent", "pruned", "prunedBySkill", "endpoint"} (dry_run: "wouldSend" for
    "sent", and "spans": what a push would send; nothing is sent or moved)."""
    url = url or endpoint(config)
    if not url and not dry_run:
        raise UsageError(f"no OTLP endpoint: set {ENDPOINT_ENV} (or {TRACES_ENV}), or telemetry.endpoint in the config")
    if dry_run:
        return _push(url, True, warn)
    fileio.private_dirs(paths.state_root(), paths.home())
    with fileio.Lock(paths.telemetry_lock()):  # two pushes at once: the second sends what the first did not
        return _push(url, False, warn)


def _push(url, dry_run, warn):
    cursors = read_cursors()
    counted = "wouldSend" if dry_run else "sent"  # a dry run sends nothing, and never says it did
    report = {"endpoint": url and urls.shown(url), counted: 0, "pruned": 0, "prunedBySkill": {},
              **({"spans": []} if dry_run else {})}
    for name in usage_log.logged_skills():
        lines, pruned, last = pending(name, cursors.get(name))
        if pruned:
            report["pruned"] += pruned
            report["prunedBySkill"][name] = pruned
        elif pruned is None:
            report["prunedBySkill"][name] = "unknown"
        for at in range(0, len(lines), BATCH):
            batch = lines[at:at + BATCH]
            spans = [s for s in map(span, batch) if s and not s.pop("exported")]  # nexus-mcp sent those live
            if dry_run:
                report["spans"] += spans
            else:
                if spans:
                    send(url, request(spans).SerializeToString())
                number = last - (len(lines) - at - len(batch)) if last is not None else None
                cursors[name] = {"ts": _ts(batch[-1]), "sha256": line_digest(batch[-1]).hexdigest(),
                                 "number": number}
                fileio.private_dirs(paths.state_root(), paths.home())
                fileio.write_json(paths.telemetry_cursor(), cursors, indent=2)
            report[counted] += len(spans)
    if report["pruned"]:
        warn(f"{report['pruned']} usage log entries were pruned by rotation before they were sent (push more "
             "often than the logs rotate, or raise skills.log.maxEntries)")
    return report


# -- live: nexus-mcp -----------------------------------------------------------------------------


class Live:
    """The OpenTelemetry SDK set up for nexus-mcp: traces and metrics exported over OTLP/HTTP in batches."""

    def __init__(self, config):
        try:  # the otel extra's: only a server that exports imports it
            from opentelemetry import metrics, trace
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            raise UsageError(INSTALL_HINT) from None
        url = endpoint(config)
        resource = Resource.create(resource_attributes())
        self.tracer_provider = TracerProvider(resource=resource)
        self.tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
        metrics_url = url[:-len("/v1/traces")] + "/v1/metrics" if url and url.endswith("/v1/traces") else None
        reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=metrics_url) if metrics_url
                                               else OTLPMetricExporter())
        self.meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        trace.set_tracer_provider(self.tracer_provider)
        metrics.set_meter_provider(self.meter_provider)
        self.trace = trace
        meter = self.meter_provider.get_meter(SCOPE)
        self.calls = meter.create_counter("nexus.calls", "{call}", "Tool calls through the nexus gateway")
        self.duration = meter.create_histogram("nexus.call.duration", "s", "How long a tool call took")

    def call(self, entry):
        """A call logged as `entry`: its attributes on the span in force (the SDK's tools/call span), counted."""
        found = attributes(entry)
        span = self.trace.get_current_span()
        span.set_attributes(found)
        if found.get("error.type"):
            span.set_status(self.trace.StatusCode.ERROR, found.get("nexus.error") or found["error.type"])
        labels = {k: found[k] for k in ("gen_ai.tool.name", "error.type", "nexus.token") if k in found}
        self.calls.add(1, labels)
        self.duration.record((entry.get("ms") or 0) / 1000, labels)

    def shutdown(self):
        """Send what is batched, then stop."""
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
