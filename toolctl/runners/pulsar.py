"""The Pulsar runtime: a TrustGraph tool-service call, request queue in, response queue out.

The envelope is ``toolctl.pulsar.wire``; the connection, the probe and the response
channel are ``toolctl.pulsar.client``. One runner keeps one client and one channel per
(request, response) queue pair, whose dispatcher routes answers by id: ``run`` is safe
from many threads, and ``submit`` keeps many calls in flight for ``run --batch``.
"""

from __future__ import annotations

import atexit
import math
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from contextlib import suppress
from typing import Any

from toolctl.errors import (
    TimedOut,
    ToolctlError,
    TransportLost,
    TransportUnavailable,
    UsageError,
    interruption,
)
from toolctl.pulsar.client import Channel, Waited, broker_hint, open_client, require_reachable
from toolctl.pulsar.wire import (
    STOPPED_TYPE,
    TIMED_OUT_TYPE,
    Response,
    decode_response,
    encode_request,
)
from toolctl.runners.base import Call, Sink, ToolResult, ToolSpec
from toolctl.settings import Settings

RUNTIME = "pulsar"
WORKER_PATIENCE = 2.0
"""Seconds a call waits for its first answer before the terminal says no worker has
answered yet (a worker answers in milliseconds when one is there)."""


class _Submitted:
    """A call nobody waits on (``submit``): the dispatcher collects it into a Future."""

    __slots__ = ("chunks", "deadline", "future", "on_timeout", "sink", "started")

    def __init__(self, deadline: float, on_timeout: Callable[[], ToolctlError], sink: Sink) -> None:
        self.started = time.monotonic()
        self.deadline: float | None = deadline
        self.on_timeout = on_timeout
        self.sink = sink
        self.chunks: list[str] = []
        self.future: Future[ToolResult] = Future()

    def deliver(self, body: bytes) -> bool:
        response = decode_response(body)
        if _reported(response, self.sink):
            return False
        self.chunks.append(response.text)
        if not response.end_of_stream:
            return False
        text = "".join(self.chunks)
        took = round((time.monotonic() - self.started) * 1000, 3)
        try:
            result = _result(text, response.error, took, RUNTIME)
        except TimedOut as exc:
            self.fail(exc)
            return True
        with suppress(InvalidStateError):  # the caller cancelled it meanwhile
            self.future.set_result(result)
        return True

    def fail(self, error: ToolctlError) -> None:
        with suppress(InvalidStateError):
            self.future.set_exception(error)

    def expire(self) -> None:
        self.fail(self.on_timeout())


class PulsarRunner:
    """Calls TrustGraph tool services; one connection for all calls of this runner."""

    runtime = RUNTIME

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.url = settings.pulsar_url
        self._lock = threading.Lock()
        self._client: Any = None
        self._channels: dict[tuple[str, str], Channel] = {}
        self._probed = (-math.inf, True)

    def describe(self, call: Call) -> dict[str, Any]:
        tool, arguments = call.tool, call.arguments
        request_queue, response_queue = service_queues(tool)
        return {
            "transport": self.runtime,
            "url": self.url,
            "service": tool.data.get("service"),
            "request_queue": request_queue,
            "response_queue": response_queue,
            "user": call.user,
            "config": service_config(tool),
            "arguments": arguments,
            "timeout": call.timeout,
        }

    def run(self, call: Call) -> ToolResult:
        tool, timeout = call.tool, call.timeout
        started = time.monotonic()
        channel = self._channel(tool, timeout)
        waited = Waited()
        call_id = ""
        try:  # from the send on: a signal a busy machine delivers at once is told the same
            call_id = channel.send(
                _request(call), waited, timeout, call.traceparent, progress=call.sink.reports
            )
            waiting = call.sink.waiting(
                f"no worker has answered on {channel.request_queue} yet…", delay=WORKER_PATIENCE
            )
            with waiting:
                answer = _collect(waited.box, started + timeout, call.sink, waiting.stop)
        except _Late as late:  # an answer began: the call ran past its time, said so
            raise self._late(tool, channel, timeout, late.output) from None
        except TimeoutError:
            raise self._unanswered(tool, channel, timeout) from None
        except KeyboardInterrupt as exc:
            raise interruption(
                exc, f"interrupted while waiting for an answer on {channel.request_queue}"
            ) from None
        finally:
            channel.forget(call_id)
        text, error = answer
        took = round((time.monotonic() - started) * 1000, 3)
        return _result(text, error, took, self.runtime)

    def submit(self, call: Call) -> Future[ToolResult]:
        """Send one call and return at once; what ``run --batch`` pipelines with.

        The Future holds the call's ToolResult, or TimedOut (TransportUnavailable when the
        broker is gone) once its timeout has passed; no output is streamed, but progress
        and log partials go to the call's sink (from the dispatcher's thread) when it
        takes them.
        """
        tool, timeout = call.tool, call.timeout
        channel = self._channel(tool, timeout)
        submitted = _Submitted(
            time.monotonic() + timeout, lambda: self._unanswered(tool, channel, timeout), call.sink
        )
        channel.send(
            _request(call), submitted, timeout, call.traceparent, progress=call.sink.reports
        )
        return submitted.future

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
            client, self._client = self._client, None
        for channel in channels:
            channel.close()
        if client is not None:
            atexit.unregister(self.close)
            with suppress(Exception):  # pulsar-client may say AlreadyClosed: closed is closed
                client.close()

    def _channel(self, tool: ToolSpec, timeout: float) -> Channel:
        queues = service_queues(tool)
        channel = self._channels.get(queues)
        if channel is not None:
            return channel
        with self._lock:
            if queues not in self._channels:
                if self._client is None:
                    self._client = open_client(self.url, timeout)
                    # a process that exits with a live client aborts (std::bad_weak_ptr)
                    atexit.register(self.close)
                self._channels[queues] = Channel(self._client, self.url, *queues, timeout)
            return self._channels[queues]

    def _late(self, tool: ToolSpec, channel: Channel, timeout: float, output: str) -> TimedOut:
        """A stream still coming at the timeout: TimedOut with what came (a local tool's
        timeout keeps its output too), never "no answer ... or none is subscribed"."""
        service = tool.data.get("service") or tool.name
        late = TimedOut(
            f"service '{service}' was still answering at its {timeout:g} s timeout "
            f"(asked {channel.request_queue})"
        )
        late.output = output  # type: ignore[attr-defined]
        return late

    def _unanswered(self, tool: ToolSpec, channel: Channel, timeout: float) -> ToolctlError:
        """Why a call got no answer: the broker went away (exit 5), or no worker answered."""
        service = tool.data.get("service") or tool.name
        now = time.monotonic()
        if now - self._probed[0] > 1.0:  # many calls may expire at once: probe once a second
            try:
                require_reachable(self.url, 0.5)
                self._probed = (now, True)
            except ToolctlError:
                self._probed = (now, False)
        if not self._probed[1]:
            return TransportLost(
                f"lost the Pulsar broker at {self.url} while waiting for service '{service}'",
                hint=broker_hint(self.url),
            )
        handled = ((tool.service or {}).get("pulsar") or {}).get("handler")
        start = f"'toolctl worker {service}'" if handled else "the worker that serves it"
        return TimedOut(
            f"no answer from service '{service}' within {timeout:g} s "
            f"(asked {channel.request_queue})",
            hint="every worker may be busy (a handler that hangs holds its slot), or none is "
            f"subscribed (a non-persistent topic then drops requests): start {start}",
        )


def _request(call: Call) -> bytes:
    return encode_request(call.user, service_config(call.tool), call.arguments)


def service_config(tool: ToolSpec) -> dict[str, Any]:
    """The tool's config values for the params its service declares, and only those: as in
    TrustGraph's agent, other keys (its own ``group``, ``state``...) are never sent."""
    section = (tool.service or {}).get("pulsar") or {}
    declared = {param["name"] for param in section.get("config_params") or []}
    return {k: v for k, v in (tool.data.get("config") or {}).items() if k in declared}


def service_queues(tool: ToolSpec) -> tuple[str, str]:
    """(request queue, response queue) of the Pulsar service a tool runs through."""
    section = (tool.service or {}).get("pulsar")
    if not section:
        raise UsageError(f"tool '{tool.name}' does not run through a Pulsar service")
    return section["request_queue"], section["response_queue"]


class _Late(TimeoutError):
    """The deadline came while an answer was streaming: what came of it."""

    def __init__(self, output: str) -> None:
        super().__init__(output)
        self.output = output


def _collect(
    box: queue.SimpleQueue[bytes | ToolctlError],
    deadline: float,
    sink: Sink,
    answered: Callable[[], None] = lambda: None,
) -> tuple[str, str | None]:
    """Read one call's answers until ``end_of_stream``; TimeoutError past the deadline.

    A one-message answer is left for the caller to print; the chunks of a longer stream
    go to the sink as they arrive, and so do progress and log partials.
    """
    chunks: list[str] = []
    stream, streamed = sink.output, False
    while True:
        remaining = deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise queue.Empty
            item = box.get(timeout=remaining)
        except queue.Empty:
            raise (_Late("".join(chunks)) if chunks else TimeoutError()) from None
        answered()  # the wait is over: take its indicator down before any output
        if isinstance(item, ToolctlError):
            raise item
        response = decode_response(item)
        if _reported(response, sink):
            continue
        chunks.append(response.text)
        if response.text and (streamed or not response.end_of_stream):
            stream(response.text if streamed else "".join(chunks))
            streamed = True
        if response.end_of_stream:
            text = "".join(chunks)
            if streamed and not text.endswith("\n"):
                stream("\n")  # leave the terminal on a fresh line
            return text, response.error


def _result(text: str, error: str | None, took: float, runtime: str) -> ToolResult:
    """The result of an answer; TimedOut for a hosted tool that ran past the timeout its
    worker's descriptor sets (a tool that timed out, not one that failed)."""
    if error is None:
        return ToolResult.from_answer(text, runtime=runtime, duration_ms=took)
    timed_out = f"{TIMED_OUT_TYPE}: "
    if error.startswith(timed_out):
        late = TimedOut(
            error[len(timed_out) :],
            hint="its timeout there is the one its worker's descriptor sets (`toolctl worker "
            "--tool`); --timeout gives this call longer, not that tool",
        )
        late.duration_ms = took
        raise late
    stopped = f"{STOPPED_TYPE}: "
    if error.startswith(stopped):  # its worker went away: not the tool failing (exit 5)
        gone = TransportUnavailable(
            error[len(stopped) :], hint="call again: another worker may take it"
        )
        gone.duration_ms = took
        raise gone
    return ToolResult(False, text, None, error, None, took, runtime)


def _reported(response: Response, sink: Sink) -> bool:
    """Pass a progress or log partial to the sink; False when the response is neither."""
    if response.progress is not None:
        sink.progress(*response.progress)
        return True
    if response.log is not None:
        sink.log(*response.log)
        return True
    return False
