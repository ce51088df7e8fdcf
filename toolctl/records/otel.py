"""Spans exported over OTLP (HTTP/protobuf) with the OpenTelemetry SDK.

Imported only when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``) is set (see
``toolctl.records.tracing``): the SDK and its exporter take ~100 ms to import. toolctl
keeps a TracerProvider of its own rather than the global one, so a program using toolctl
as a library keeps whatever it has set up. Spans follow the OpenTelemetry GenAI
conventions for a tool execution (``execute_tool {tool}``, kind INTERNAL); the standard
variables are honoured (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_TRACES_SAMPLER``, ...).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

from toolctl import __version__
from toolctl.records.tracing import TraceContext

EXPORT_TIMEOUT_S = 5.0
"""How long one export request may take."""
FLUSH_WAIT_S = 1.0
"""How long a command waits at exit for its spans to go out: an endpoint that is down
costs a run this much, once, not the exporter's retries."""
LOGGERS = ("opentelemetry",)


def traces_endpoint(environ: Mapping[str, str]) -> str:
    """Where spans go: the traces endpoint as given, else ``{endpoint}/v1/traces``."""
    specific = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if specific:
        return specific
    return environ["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/") + "/v1/traces"


class _OtelSpan:
    __slots__ = ("context", "span")

    def __init__(self, span: Any) -> None:
        self.span = span
        ids = span.get_span_context()
        self.context = TraceContext(
            f"{ids.trace_id:032x}", f"{ids.span_id:016x}", bool(ids.trace_flags & 1)
        )

    def end(self, attributes: Mapping[str, Any], error: str | None = None) -> None:
        self.span.set_attributes({k: v for k, v in attributes.items() if v is not None})
        if error is not None:
            self.span.set_status(Status(StatusCode.ERROR, error))
        self.span.end()


class OtlpTracer:
    """Starts spans under a caller's context and sends them in batches to the endpoint."""

    def __init__(
        self, environ: Mapping[str, str], warn: Callable[[str], None] | None = None
    ) -> None:
        self.endpoint = traces_endpoint(environ)
        _quiet_sdk_logs(self.endpoint, warn)
        protocol = (
            environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or "http/protobuf"
        ).strip()
        if protocol != "http/protobuf" and warn is not None:  # grpc: sent over HTTP all the same
            warn(
                f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol} is not taken: spans go over http/protobuf"
            )
        resource = Resource.create(
            {
                "service.name": environ.get("OTEL_SERVICE_NAME") or "toolctl",
                "service.version": __version__,
            }
        )
        self.provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self.exporter = OTLPSpanExporter(endpoint=self.endpoint, timeout=EXPORT_TIMEOUT_S)
        self.provider.add_span_processor(
            BatchSpanProcessor(self.exporter, export_timeout_millis=EXPORT_TIMEOUT_S * 1000)
        )
        self.tracer = self.provider.get_tracer("toolctl", __version__)

    def start(
        self, name: str, parent: TraceContext | None, attributes: Mapping[str, Any]
    ) -> _OtelSpan:
        context = None
        if parent is not None:
            remote = SpanContext(
                int(parent.trace_id, 16),
                int(parent.span_id, 16),
                is_remote=True,
                trace_flags=TraceFlags(TraceFlags.SAMPLED if parent.sampled else 0),
            )
            context = trace.set_span_in_context(NonRecordingSpan(remote))
        span = self.tracer.start_span(
            name,
            context=context,
            kind=SpanKind.INTERNAL,
            attributes={k: v for k, v in attributes.items() if v is not None},
        )
        return _OtelSpan(span)

    def shutdown(self) -> None:
        # force_flush waits out an export's retries whatever its timeout says: wait for it
        # FLUSH_WAIT_S at most; still going, shut the exporter (that ends a retry at once)
        # and leave an export that hangs (a collector that never answers) to its daemon
        # thread rather than wait out its EXPORT_TIMEOUT_S. The exporter is shut once:
        # shut twice, the SDK warns "already shutdown", told as spans not sent.
        flushing = threading.Thread(target=self.provider.force_flush, daemon=True)
        flushing.start()
        flushing.join(FLUSH_WAIT_S)
        if flushing.is_alive():
            self.exporter.shutdown()  # type: ignore[no-untyped-call]
            flushing.join(FLUSH_WAIT_S)
            if flushing.is_alive():  # told as the SDK's own failures are (_quiet_sdk_logs)
                logging.getLogger("opentelemetry.toolctl").warning(
                    "no answer within %g s", 2 * FLUSH_WAIT_S
                )
                return
        self.provider.shutdown()


def _reason(message: str) -> str:
    """The gist of an SDK log line: the OS error when there is one, else its first words."""
    import re

    found = re.search(r"\[Errno -?\d+\] [^\"')]+", message)
    if found:
        return found.group(0).strip()
    return message.split(" encountered while", 1)[0][:200]


def _told(text: str, endpoint: str) -> tuple[str, str]:
    """What an SDK log line says, in one line, and its kind (each told once): an export
    that failed, a setting the SDK could not read (never quoting it: a header's value is a
    token), or anything else it warns of."""
    import re

    if "Header format invalid" in text:  # the SDK quotes the whole variable: never shown
        return "headers", (
            "OTEL_EXPORTER_OTLP_HEADERS is not a comma-separated list of name=value pairs "
            "(URL-encoded); spans are sent without its headers"
        )
    if re.search(r"(?i)recogni[sz]e|invalid|unknown|not supported", text):
        return "setting", f"OpenTelemetry: {_reason(text)}"  # a sampler, a resource pair
    return "export", f"spans could not be sent to {endpoint}: {_reason(text)}"


def _quiet_sdk_logs(endpoint: str, warn: Callable[[str], None] | None) -> None:
    """The SDK logs export failures (and retries) through logging, which would reach stderr
    as several raw lines per batch: they become one warning, once per process."""
    import logging

    class Once(logging.Handler):
        told: ClassVar[set[str]] = set()

        def emit(self, record: logging.LogRecord) -> None:
            kind, message = _told(record.getMessage(), endpoint)
            if record.levelno < logging.WARNING or kind in Once.told:
                return
            Once.told.add(kind)
            if warn is not None:
                warn(message)

    for name in LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers = [Once()]
        logger.propagate = False
