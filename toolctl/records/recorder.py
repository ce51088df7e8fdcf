"""One call's record from start to end: a span, a history row, the metrics.

``Recorder.begin`` is called as a call starts (after its arguments are validated): it
starts the span, under the caller's ``traceparent`` if there is one, and counts the call
in flight; the call carries ``Recording.traceparent`` on to the tool. ``Recorder.end``
closes the span with the GenAI tool-execution attributes, counts the outcome, and queues
the history row (``toolctl.records.journal``: written later, off the call's path).
Nothing here raises into a call: a recorder that breaks says so once and goes quiet.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from toolctl.records import Origin, outcome_of
from toolctl.records.history import CallRecord
from toolctl.records.journal import journal_for
from toolctl.records.tracing import ID_TRACER, parse_traceparent, tracer_for

if TYPE_CHECKING:  # Protocols cost a `toolctl run` ~0.2 ms each to define: checkers only
    from typing import Protocol

    from toolctl.records.metrics import Metrics
    from toolctl.records.tracing import Span, Tracer
    from toolctl.settings import Settings

    class Tool(Protocol):
        """What a record needs of a resolved tool (a ``ToolSpec``)."""

        @property
        def name(self) -> str: ...
        @property
        def runtime(self) -> str: ...
        @property
        def data(self) -> Mapping[str, Any]: ...
        @property
        def service(self) -> Mapping[str, Any] | None: ...

    class Result(Protocol):
        """What a record needs of a call's result (a ``ToolResult``)."""

        @property
        def success(self) -> bool: ...
        @property
        def output(self) -> str: ...
        @property
        def error(self) -> str | None: ...
        @property
        def exit_code(self) -> int | None: ...
        @property
        def truncated(self) -> int: ...


MAX_STORED = 64 * 1024
"""Characters of arguments or output a history row keeps (with --record-arguments)."""


class Recording:
    """A call under way: its span and what its history row will say."""

    __slots__ = ("arguments", "bytes_in", "clock", "origin", "span", "started", "tool")

    def __init__(
        self, tool: Tool, origin: Origin, span: Span, arguments: Mapping[str, Any]
    ) -> None:
        self.tool, self.origin, self.span, self.arguments = tool, origin, span, arguments
        self.started = time.time()
        self.clock = time.perf_counter()
        self.bytes_in = _size(arguments)

    @property
    def traceparent(self) -> str:
        """The header to pass to the tool: this call's span is its parent."""
        return self.span.context.traceparent


class Recorder:
    """Records the calls of one front door (`run`, a server, a worker)."""

    def __init__(
        self,
        settings: Settings,
        *,
        metrics: Metrics | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        from toolctl.records.journal import defer_warning

        self.settings = settings
        self.metrics = metrics
        self.warn = warn or defer_warning  # told when the command writes its records
        self.journal = journal_for(settings, warn)
        self.store = settings.records.record_arguments
        self._tracer: Tracer | None = None
        self._broken = False

    @property
    def tracer(self) -> Tracer:
        if self._tracer is None:
            try:
                self._tracer = tracer_for(self.settings, self.warn)
            except ImportError:
                self._complain(
                    "OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed: "
                    "spans are not exported (pip install opentelemetry-sdk "
                    "opentelemetry-exporter-otlp-proto-http, where toolctl is installed)"
                )
                self._tracer = ID_TRACER
            except Exception as exc:  # a broken OpenTelemetry install must not fail calls
                self._complain(f"traces are not exported: {type(exc).__name__}: {exc}")
                self._tracer = ID_TRACER
        return self._tracer

    def begin(self, tool: Tool, arguments: Mapping[str, Any], origin: Origin) -> Recording:
        """Start a call's record (its span begins now)."""
        parent = parse_traceparent(origin.traceparent)
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool.name,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": origin.call_id,
            "gen_ai.tool.description": str(tool.data.get("description") or "")[:300] or None,
            "toolctl.runtime": tool.runtime,
            "toolctl.caller": origin.caller,
            "toolctl.session": self.session(origin),
        }
        try:
            span = self.tracer.start(f"execute_tool {tool.name}", parent, attributes)
        except Exception as exc:  # never into the call: the ids still travel
            self._complain(f"a call's span was not made: {type(exc).__name__}: {exc}")
            span = ID_TRACER.start("", parent, {})
        if self.metrics is not None:
            self.metrics.started(tool.name, tool.runtime)
        return Recording(tool, origin, span, arguments)

    def session(self, origin: Origin) -> str | None:
        return origin.session or self.settings.records.session

    def end(
        self,
        recording: Recording,
        result: Result | None = None,
        error: BaseException | None = None,
        *,
        sent_bytes: int | None = None,
    ) -> None:
        """Finish a call's record: ``result`` when it produced one, else the ``error``
        (a ToolctlError, or KeyboardInterrupt) that ended it. ``sent_bytes`` stands for
        the output's size when the output itself was streamed away."""
        try:
            self._end(recording, result, error, sent_bytes)
        except Exception as exc:  # never into the call
            self._complain(f"a call's record was lost: {type(exc).__name__}: {exc}")

    def _end(
        self,
        recording: Recording,
        result: Result | None,
        error: BaseException | None,
        sent_bytes: int | None,
    ) -> None:
        seconds = time.perf_counter() - recording.clock
        tool = recording.tool
        if result is not None:
            code = 0 if result.success else 1
            kind = None if result.success else "tool_failed"
            output, message = result.output, result.error
        else:
            code = int(
                getattr(error, "exit_code", 130 if isinstance(error, KeyboardInterrupt) else 70)
            )
            kind, output, message = type(error).__name__, "", str(error or "")
        outcome = outcome_of(code)
        stored = self._stored(tool, recording.arguments, output, message) if self.store else None
        recording.span.end(self._span_attributes(outcome, code, kind, stored), kind)
        if self.metrics is not None:
            self.metrics.finished(
                tool.name, tool.runtime, recording.origin.caller, outcome, seconds
            )
        if self.journal is None:
            return
        context = recording.span.context
        self.journal.add(
            CallRecord(
                recording.started,
                tool.name,
                tool.runtime,
                recording.origin.caller,
                self.session(recording.origin),
                outcome,
                code,
                round(seconds * 1000, 3),
                recording.bytes_in,
                _text_size(output) if sent_bytes is None else sent_bytes,
                int(getattr(result, "truncated", 0) or 0),
                context.trace_id,
                context.span_id,
                recording.origin.call_id,
                f"{kind}: {stored[2]}" if stored and stored[2] and kind else kind,
                stored[0] if stored else None,
                stored[1] if stored else None,
            )
        )

    def _span_attributes(
        self, outcome: str, code: int, kind: str | None, stored: tuple[str, str, str | None] | None
    ) -> dict[str, Any]:
        attributes: dict[str, Any] = {"toolctl.outcome": outcome, "toolctl.exit_code": code}
        if kind is not None:
            attributes["error.type"] = kind
        if stored is not None:  # opt-in content, as the conventions have it
            attributes["gen_ai.tool.call.arguments"] = stored[0]
            attributes["gen_ai.tool.call.result"] = stored[1]
        return attributes

    def _stored(
        self, tool: Tool, arguments: Mapping[str, Any], output: str, message: str | None
    ) -> tuple[str, str, str | None]:
        """(arguments JSON, output, error message), masked and cut to MAX_STORED."""
        from toolctl.descriptor_env import descriptor_secrets
        from toolctl.records.masking import mask_text, mask_value, masked_start, secret_values

        secrets = descriptor_secrets((tool.data, tool.service), self.settings.environ)
        secrets |= secret_values(dict(arguments))
        masked = json.dumps(mask_value(dict(arguments), secrets), sort_keys=True)
        return (
            masked[:MAX_STORED],
            masked_start(output, MAX_STORED, secrets),
            mask_text(message, secrets)[:MAX_STORED] if message else None,
        )

    def _complain(self, message: str) -> None:
        if not self._broken:
            self._broken = True
            if self.warn is not None:
                self.warn(message)


def _size(arguments: Mapping[str, Any]) -> int:
    try:
        return _text_size(json.dumps(arguments, separators=(",", ":")))
    except (TypeError, ValueError):
        return 0


def _text_size(text: str) -> int:
    """Bytes of ``text`` as UTF-8 (``isascii`` is O(1): most outputs are never encoded)."""
    if not text:
        return 0
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
