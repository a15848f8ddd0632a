"""OpenTelemetry (issue 31): an OTLP/HTTP receiver on loopback decodes what arrives with opentelemetry-proto;
`nexus telemetry push` sends each call once, as a span derived from its log line, across rotation, and
nexus-mcp exports live, its attributes on the MCP SDK's own span of each call."""

import hashlib
import http.server
import json
import os
import subprocess
import threading

import pytest
from helpers import make_tool, read_log, write_config, write_skill

pytest.importorskip("opentelemetry.proto", reason="the otel extra is not installed")
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

SECRET = "s3cr3t-value-42"


class Receiver(http.server.ThreadingHTTPServer):
    """An OTLP/HTTP collector on loopback: every span and metric it is sent, decoded."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.spans, self.metrics, self.lock = [], [], threading.Lock()
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        kind = ExportTraceServiceRequest if self.path == "/v1/traces" else ExportMetricsServiceRequest
        message = kind()
        message.ParseFromString(body)
        with self.server.lock:
            if self.path == "/v1/traces":
                self.server.spans += [(rs.resource, span) for rs in message.resource_spans for ss in rs.scope_spans
                                      for span in ss.spans]
            else:
                self.server.metrics += [m for rm in message.resource_metrics for sm in rm.scope_metrics
                                        for m in sm.metrics]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def receiver():
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def collector(receiver, monkeypatch):
    """The receiver, emptied, named by the standard variables."""
    receiver.spans.clear()
    receiver.metrics.clear()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "team-gateway")
    return receiver


@pytest.fixture
def say(workspace, bindir, nexus_home, monkeypatch):
    write_config(nexus_home, "[skills]\nallowBundled = []\n[skills.log]\nmaxEntries = 3\n")
    make_tool(bindir, "say", '#!/bin/sh\nprintf "%s\\n" "$*"\n')
    write_skill(workspace, "say", "Say the words.", meta={"tool": "say", "requires": {"env": ["SAY_KEY"]},
                                                          "primaryEnv": "SAY_KEY"})
    monkeypatch.setenv("SAY_KEY", SECRET)
    return workspace


def attributes(span):
    return {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in span.attributes}


def test_push_sends_each_call_once_as_a_span_derived_from_its_line_with_secrets_masked(say, collector, nexus_home,
                                                                                       script_runner):
    for word in ("one", SECRET):
        assert script_runner.run(["nexus", "skill", "run", "say", word]).returncode == 0
    pushed = script_runner.run(["nexus", "telemetry", "push", "--json"])
    assert pushed.returncode == 0, pushed.stderr
    assert json.loads(pushed.stdout)["sent"] == 2
    lines = (nexus_home / "state" / "nexus" / "skills" / "say" / "usage.log").read_bytes().splitlines()
    assert len(collector.spans) == 2
    for line, (resource, span) in zip(lines, collector.spans):
        digest = hashlib.sha256(line).digest()
        assert (span.trace_id, span.span_id) == (digest[:16], digest[16:24])
        found = attributes(span)
        assert found["gen_ai.operation.name"] == "execute_tool" and found["gen_ai.tool.name"] == "say"
        assert found["gen_ai.tool.call.id"] == json.loads(line)["call"] and found["process.exit.code"] == 0
        assert span.end_time_unix_nano - span.start_time_unix_nano == json.loads(line)["ms"] * 1_000_000
        assert attributes(resource)["service.name"] == "team-gateway"
    assert SECRET not in str(collector.spans) and "***" in attributes(collector.spans[1][1])["gen_ai.tool.call.arguments"]
    again = script_runner.run(["nexus-stats", "--otlp", "--json"])
    assert json.loads(again.stdout)["sent"] == 0 and len(collector.spans) == 2  # nothing resent


def test_entries_rotation_pruned_before_they_were_sent_are_counted_and_the_rest_sent(say, collector, nexus_home,
                                                                                    script_runner):
    script_runner.run(["nexus", "skill", "run", "say", "first"])
    assert json.loads(script_runner.run(["nexus", "telemetry", "push", "--json"]).stdout)["sent"] == 1
    for n in range(6):  # maxEntries 3: the log is pruned to 2 lines twice meanwhile
        script_runner.run(["nexus", "skill", "run", "say", str(n)])
    pushed = script_runner.run(["nexus", "telemetry", "push", "--json"])
    report = json.loads(pushed.stdout)
    assert (report["sent"], report["pruned"], report["prunedBySkill"]) == (3, 3, {"say": 3})
    assert "3 usage log entries were pruned by rotation before they were sent" in pushed.stderr
    sent = [json.loads(attributes(span)["gen_ai.tool.call.arguments"]) for _, span in collector.spans]
    assert sent == [["first"], ["3"], ["4"], ["5"]]
    assert json.loads(script_runner.run(["nexus", "telemetry", "push", "--json"]).stdout)["sent"] == 0


def test_dry_run_prints_the_spans_as_json_and_sends_nothing(say, collector, script_runner):
    script_runner.run(["nexus", "skill", "run", "say", "dry"])
    dry = script_runner.run(["nexus", "telemetry", "push", "--dry-run"])
    report = json.loads(dry.stdout)
    assert [s["attributes"]["gen_ai.tool.name"] for s in report["spans"]] == ["say"] and collector.spans == []
    assert report["wouldSend"] == 1 and "sent" not in report  # it sent nothing, and says what it would send
    assert json.loads(script_runner.run(["nexus", "telemetry", "push", "--json"]).stdout)["sent"] == 1
    assert collector.spans[0][1].span_id.hex() == report["spans"][0]["spanId"]


@pytest.mark.parametrize("argv", [["telemetry", "push", "--bogus"], ["mcp", "token", "add", "bad name!"],
                                  ["mcp", "token", "add", "x", "--expires", "soon"],
                                  ["mcp", "token", "add", "x", "--max-calls", "0"], ["mcp", "token", "revoke"]])
def test_bad_input_to_the_new_commands_is_a_usage_error(script_runner, argv):
    done = script_runner.run(["nexus", *argv])
    assert done.returncode == 2 and done.stdout == "" and done.stderr.startswith("nexus: ")


def test_without_an_endpoint_push_says_how_to_name_one(say, script_runner, monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    done = script_runner.run(["nexus", "telemetry", "push"])
    assert done.returncode == 2 and "OTEL_EXPORTER_OTLP_ENDPOINT" in done.stderr


@pytest.mark.once  # a server process of its own
def test_nexus_mcp_exports_one_span_per_call_the_sdks_with_nexus_attributes_and_metrics(say, collector, nexus_home):
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "say", "arguments": {"args": [SECRET]}}}]
    server = subprocess.Popen(["nexus-mcp", "--watch", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env=dict(os.environ))
    for request in requests:
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        if "id" in request:
            while json.loads(server.stdout.readline()).get("id") != request["id"]:
                pass
    server.stdin.close()
    assert server.wait(30) == 0
    calls = [span for _, span in collector.spans if attributes(span).get("gen_ai.operation.name") == "execute_tool"]
    assert len(calls) == 1  # the SDK's span of the call, never a second one
    found = attributes(calls[0])
    [line] = read_log(nexus_home, "say")
    assert found["gen_ai.tool.name"] == "say" and found["gen_ai.tool.call.id"] == line["call"]
    assert found["session.id"] == line["session"] and found["nexus.client"] == "probe/1"
    assert SECRET not in str(collector.spans)
    metrics = {m.name: m for m in collector.metrics}
    assert metrics["nexus.calls"].sum.data_points[0].as_int == 1
    assert metrics["nexus.call.duration"].histogram.data_points[0].count == 1


def test_a_call_nexus_mcp_exported_live_is_not_pushed_again(say, collector, nexus_home, script_runner):
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    test_nexus_mcp_exports_one_span_per_call_the_sdks_with_nexus_attributes_and_metrics(say, collector, nexus_home)
    [line] = read_log(nexus_home, "say")
    assert line["exported"] is True  # the line says it went live
    before = len(collector.spans)
    assert script_runner.run(["nexus", "skill", "run", "say", "later"]).returncode == 0
    pushed = script_runner.run(["nexus", "telemetry", "push", "--json"])
    assert json.loads(pushed.stdout)["sent"] == 1 and len(collector.spans) == before + 1  # the shell's call alone


def test_two_pushes_at_once_send_each_line_once(say, collector, nexus_home, script_runner):
    write_config(nexus_home, "[skills]\nallowBundled = []\n")
    for n in range(40):
        assert script_runner.run(["nexus", "skill", "run", "say", str(n)]).returncode == 0
    pushes = [subprocess.Popen(["nexus", "telemetry", "push", "--json"], stdout=subprocess.PIPE, text=True)
              for _ in range(2)]
    sent = [json.loads(p.communicate(timeout=60)[0])["sent"] for p in pushes]
    assert sorted(sent) == [0, 40] and len(collector.spans) == 40
