"""W3C Trace Context for every call, and spans exported only when someone listens.

Every call gets a span id, and a trace id: its caller's (a ``traceparent`` it was given)
or a new one. The call's ``traceparent`` travels on with it (an HTTP header, a Pulsar
message property, MCP ``_meta``, ``TRACEPARENT`` for a process), and the history keeps
the trace id, so a call can be followed with or without a tracing backend.

Spans are exported over OTLP (HTTP/protobuf) when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set and ``OTEL_SDK_DISABLED`` is not true; only
then is OpenTelemetry imported (``toolctl.records.otel``). Otherwise a span is two random
numbers and costs nothing.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # Protocols cost a `toolctl run` ~0.2 ms each to define: checkers only
    from typing import Protocol

    from toolctl.settings import Settings

    class Span(Protocol):
        """One call's span: its context (to pass on), then ``end`` with what came of it."""

        context: TraceContext

        def end(self, attributes: Mapping[str, Any], error: str | None = None) -> None: ...

    class Tracer(Protocol):
        def start(
            self, name: str, parent: TraceContext | None, attributes: Mapping[str, Any]
        ) -> Span: ...

        def shutdown(self) -> None: ...


TRACEPARENT = "traceparent"
"""The header, message property and ``_meta`` key; ``TRACEPARENT`` in a process's environment."""
_HEADER = r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$"
"""Compiled on the first header read (re caches it): most runs are given none."""


class TraceContext(NamedTuple):
    """A span's place in a trace: trace id (32 hex digits), span id (16), sampled flag."""

    trace_id: str
    span_id: str
    sampled: bool = True

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{'01' if self.sampled else '00'}"


def parse_traceparent(header: str | None) -> TraceContext | None:
    """The context a ``traceparent`` value carries, or None when it is missing or invalid
    (version ff, all-zero ids, wrong lengths, upper case: the W3C rules)."""
    if not header or len(header) > 512:
        return None
    match = re.match(_HEADER, header.strip())
    if match is None:
        return None
    version, trace_id, span_id, flags, rest = match.groups()
    if version == "ff" or (version == "00" and rest):
        return None
    if trace_id == "0" * 32 or span_id == "0" * 16:
        return None
    return TraceContext(trace_id, span_id, bool(int(flags, 16) & 1))


def new_trace_id() -> str:
    """16 random bytes (``os.urandom``: importing ``random`` costs a run ~1 ms)."""
    return f"{int.from_bytes(os.urandom(16)) or 1:032x}"


def new_span_id() -> str:
    return f"{int.from_bytes(os.urandom(8)) or 1:016x}"


class _IdSpan:
    """A span nobody exports: just its ids."""

    __slots__ = ("context",)

    def __init__(self, context: TraceContext) -> None:
        self.context = context

    def end(self, attributes: Mapping[str, Any], error: str | None = None) -> None:
        pass


class IdTracer:
    """The tracer when no endpoint is set: ids only, nothing imported, nothing sent."""

    def start(self, name: str, parent: TraceContext | None, attributes: Mapping[str, Any]) -> Span:
        if parent is None:
            return _IdSpan(TraceContext(new_trace_id(), new_span_id()))
        return _IdSpan(TraceContext(parent.trace_id, new_span_id(), parent.sampled))

    def shutdown(self) -> None:
        pass


ID_TRACER = IdTracer()


def exporting(environ: Mapping[str, str]) -> bool:
    """Whether spans go to an OTLP endpoint (the standard variables say so)."""
    if (environ.get("OTEL_SDK_DISABLED") or "").strip().lower() == "true":
        return False
    if (environ.get("OTEL_TRACES_EXPORTER") or "").strip().lower() == "none":
        return False
    return bool(
        environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    )


_tracers: dict[tuple[str, ...], Tracer] = {}
_making = threading.Lock()
"""Held while a tracer is made: each thread of a batch's first wave made its own, with its
exporter, and only the last was flushed at exit (up to concurrency - 1 spans lost)."""


def tracer_for(settings: Settings, warn: Callable[[str], None] | None = None) -> Tracer:
    """The process's tracer: exporting over OTLP when the variables say so, else ids only.
    ``warn`` hears, once, that spans could not be sent."""
    environ = settings.environ
    if not exporting(environ):
        return ID_TRACER
    key = tuple(
        environ.get(name) or ""
        for name in (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_SERVICE_NAME",
        )
    )
    tracer = _tracers.get(key)
    if tracer is None:
        with _making:  # the first calls of a batch come at once: one exporter, not one each
            tracer = _tracers.get(key)
            if tracer is None:
                from toolctl.records.otel import OtlpTracer

                tracer = _tracers[key] = OtlpTracer(environ, warn)
    return tracer


def shutdown_all() -> None:
    """Send the spans still held (a command about to exit) and stop the exporters."""
    for tracer in list(_tracers.values()):
        tracer.shutdown()
    _tracers.clear()


def now_ns() -> int:
    return time.time_ns()
