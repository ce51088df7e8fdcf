"""W3C traceparent: parsing by the specification's rules, ids for every call."""

from __future__ import annotations

from toolctl.records.tracing import (
    ID_TRACER,
    TraceContext,
    exporting,
    parse_traceparent,
)

VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_a_valid_header_is_read() -> None:
    assert parse_traceparent(VALID) == TraceContext(
        "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", True
    )
    assert parse_traceparent(VALID[:-2] + "00") == TraceContext(
        "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", False
    )
    # a later version may add fields: read what this version knows
    assert parse_traceparent("cc" + VALID[2:] + "-what-comes-later") is not None


def test_invalid_headers_are_ignored() -> None:
    for bad in (
        None,
        "",
        "garbage",
        "ff" + VALID[2:],
        VALID.upper(),
        "00-" + "0" * 32 + "-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-" + "0" * 16 + "-01",
        VALID + "-extra",
        VALID[:-1],
    ):
        assert parse_traceparent(bad) is None, bad


def test_a_span_continues_its_parents_trace_or_starts_one() -> None:
    parent = parse_traceparent(VALID)
    child = ID_TRACER.start("execute_tool x", parent, {}).context
    assert child.trace_id == parent.trace_id if parent else False
    assert child.span_id != "00f067aa0ba902b7" and len(child.span_id) == 16
    root = ID_TRACER.start("execute_tool x", None, {}).context
    assert len(root.trace_id) == 32 and root.trace_id != child.trace_id
    assert parse_traceparent(root.traceparent) == root


def test_spans_are_exported_only_when_the_standard_variables_say_so() -> None:
    assert not exporting({})
    assert exporting({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert exporting({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"})
    disabled = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}
    assert not exporting(disabled)
    assert not exporting(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}
    )
