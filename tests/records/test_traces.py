"""Spans of real calls, received as real OTLP protobuf; the traceparent a tool is given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import Toolctl, write_files
from tests.records.otlp_receiver import otlp_receiver

ENV_TOOL = """
[[tool]]
name = "traced"
description = "Prints the TRACEPARENT it was given"
[tool.local]
command = ["{python}", "-c", "import os, sys; sys.stdin.read(); print(os.environ.get('TRACEPARENT', 'none'))"]
[[tool.arguments]]
name = "text"
required = false
"""


def registry(tmp_path: Path) -> Path:
    write_files(tmp_path, {"reg/traced.toml": ENV_TOOL.format(python=sys.executable)})
    return tmp_path / "reg"


def test_a_run_exports_one_execute_tool_span_and_the_tool_gets_its_traceparent(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "cli-test"}
        done = toolctl_process("run", "traced", "-r", str(registry(tmp_path)), env=env)
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""  # not "spans could not be sent ... already shutdown"
        (span,) = receiver.wait_for(1)
    assert span.name == "execute_tool traced" and span.service == "cli-test"
    assert span.attributes["gen_ai.operation.name"] == "execute_tool"
    assert span.attributes["gen_ai.tool.name"] == "traced"
    assert span.attributes["toolctl.caller"] == "cli"
    assert span.attributes["toolctl.outcome"] == "ok" and span.parent_id == ""
    assert done.stdout.strip() == f"00-{span.trace_id}-{span.span_id}-01"
    history = toolctl_process("history", "--json")
    (call,) = json.loads(history.stdout)["calls"]
    assert (call["trace_id"], call["span_id"]) == (span.trace_id, span.span_id)


def test_a_protocol_toolctl_does_not_speak_is_said_and_spans_still_sent(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    """OTEL_EXPORTER_OTLP_PROTOCOL=grpc was ignored without a word."""
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
        done = toolctl_process("run", "traced", "-r", str(registry(tmp_path)), env=env)
        assert done.returncode == 0, done.stderr
        assert done.stderr == (
            "toolctl: warning: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not taken: spans go over "
            "http/protobuf\n"
        )
        (span,) = receiver.wait_for(1)
    assert span.name == "execute_tool traced"


def test_the_traceparent_of_toolctls_environment_is_continued(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    """A process started inside a trace (a tool toolctl runs, which runs toolctl) carries
    TRACEPARENT: the call's span is its child, in the same trace."""
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "TRACEPARENT": parent}
        done = toolctl_process("run", "traced", "-r", str(registry(tmp_path)), env=env)
        assert done.returncode == 0, done.stderr
        missing = toolctl_process("run", "nothere", "-r", str(registry(tmp_path)), env=env)
        assert missing.returncode == 4
        spans = receiver.wait_for(2, timeout=3)
    (span,) = spans  # an unknown tool is no call: no span
    assert (span.trace_id, span.parent_id) == (
        "0af7651916cd43dd8448eb211c80319c",
        "b7ad6b7169203331",
    )
    assert done.stdout.strip() == f"00-{span.trace_id}-{span.span_id}-01"


def test_without_an_endpoint_nothing_of_opentelemetry_is_imported(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    reg = str(registry(tmp_path))
    toolctl_process("run", "traced", "-r", reg)  # builds the index
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "toolctl", "run", "traced", "-r", reg],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0
    imported = [line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line]
    assert "toolctl.records.tracing" in imported
    assert not [m for m in imported if m.startswith(("opentelemetry", "google.protobuf"))]
    assert done.stdout.startswith("00-")  # the tool still gets a traceparent


def test_without_opentelemetry_installed_the_warning_names_what_to_install(
    tmp_path: Path,
) -> None:
    """An endpoint set where OpenTelemetry is not installed: the call still runs, and the
    one warning names the packages to install (never 'toolctl[otel]': `toolctl` on PyPI is
    another project)."""
    reg = str(registry(tmp_path))
    blocked = "import sys; sys.modules['opentelemetry'] = None; "  # as if not installed
    code = blocked + "from toolctl.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "run", "traced", "-r", reg],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        env={**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        "toolctl: warning: OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not "
        "installed: spans are not exported (pip install opentelemetry-sdk "
        "opentelemetry-exporter-otlp-proto-http, where toolctl is installed)\n"
    )


def test_a_failed_call_is_an_error_span(tmp_path: Path, toolctl_process: Toolctl) -> None:
    write_files(
        tmp_path,
        {
            "reg/bad.toml": f"""
            [[tool]]
            name = "bad"
            description = "fails"
            [tool.local]
            command = ["{sys.executable}", "-c", "import sys; sys.exit(3)"]
            input = "none"
            """
        },
    )
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
        done = toolctl_process("run", "bad", "-r", str(tmp_path / "reg"), env=env)
        assert done.returncode == 1
        (span,) = receiver.wait_for(1)
    assert span.error and span.attributes["error.type"] == "tool_failed"
    assert span.attributes["toolctl.outcome"] == "failed"


MCP_FRONT = """
[[service]]
name = "inner"
description = "toolctl's own MCP server over stdio, serving the inner registry"
[service.mcp]
command = ["{python}", "-m", "toolctl", "mcp", "serve", "--registry", "{inner}"]

[[tool]]
name = "inner.traced"
description = "traced, through MCP"
service = "inner"
[tool.mcp]
name = "traced"
parameters = {{ type = "object", properties = {{ text = {{ type = "string" }} }} }}
"""


def test_an_mcp_call_carries_the_traceparent_in_meta(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    """CLI → an MCP server (toolctl's own `mcp serve`, which reads ``_meta.traceparent``) →
    a local tool: the tool's TRACEPARENT is in the CLI span's trace, under the server's
    own span. (The server is a child of the call: the call's end reaps it, spans and all,
    so only the CLI's span reaches the receiver; a kept session would export its own.)"""
    inner = registry(tmp_path)
    write_files(tmp_path, {"outer/mcp.toml": MCP_FRONT.format(python=sys.executable, inner=inner)})
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
        done = toolctl_process("run", "inner.traced", "-r", str(tmp_path / "outer"), env=env)
        assert done.returncode == 0, done.stderr
        (outer,) = receiver.wait_for(1)
    assert outer.attributes["toolctl.runtime"] == "mcp"
    _, trace_id, span_id, flags = done.stdout.strip().split("-")
    assert (trace_id, flags) == (outer.trace_id, "01") and span_id != outer.span_id


def test_a_collector_that_never_answers_is_one_warning_not_the_export_timeout(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    """It accepts connections and says nothing: the run waited out the exporter's 5 s
    timeout at exit; now it gives the export FLUSH_WAIT_S twice and says so."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        done = toolctl_process(
            "run", "traced", "-r", str(registry(tmp_path)),
            env={"OTEL_EXPORTER_OTLP_ENDPOINT": url},
        )  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("00-"), done.stderr
    assert done.stderr == (
        f"toolctl: warning: spans could not be sent to {url}/v1/traces: no answer within 2 s\n"
    )


def test_an_endpoint_that_is_down_costs_one_warning_and_about_a_second(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
    done = toolctl_process("run", "traced", "-r", str(registry(tmp_path)), env=env)
    assert done.returncode == 0 and done.stdout.startswith("00-")
    (line,) = done.stderr.splitlines()
    assert line == (
        f"toolctl: warning: spans could not be sent to http://127.0.0.1:{port}/v1/traces: "
        "[Errno 111] Connection refused"
    )


def test_an_sdk_setting_it_cannot_read_is_told_as_that_and_never_quoted(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    """Every SDK warning was told as "spans could not be sent", though they were, and a bad
    OTEL_EXPORTER_OTLP_HEADERS was quoted whole, its token with it."""
    with otlp_receiver() as receiver:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_EXPORTER_OTLP_HEADERS": "authorization:Bearer-Sekr3tT0k",
            "OTEL_TRACES_SAMPLER": "bogus",
        }
        done = toolctl_process("run", "traced", "-r", str(registry(tmp_path)), env=env)
        assert done.returncode == 0, done.stderr
        assert len(receiver.wait_for(1)) == 1  # the span was sent
    assert "Sekr3tT0k" not in done.stderr and "could not be sent" not in done.stderr
    assert "OTEL_EXPORTER_OTLP_HEADERS is not a comma-separated list" in done.stderr
    assert "toolctl: warning: OpenTelemetry: Couldn't recognize sampler bogus" in done.stderr


def test_a_concurrent_batch_exports_a_span_for_every_call(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    """`run --batch --concurrency 32`: each thread of the first wave made a tracer of its
    own, with its exporter, and only the last one was flushed at exit (69 spans of 100)."""
    lines = "".join(json.dumps({"text": str(n)}) + "\n" for n in range(100))
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
        done = toolctl_process("run", "traced", "-r", str(registry(tmp_path)), "--batch", "-",
                               "--concurrency", "32", input=lines, env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr
        spans = receiver.wait_for(100)
    assert len({span.span_id for span in spans}) == 100
