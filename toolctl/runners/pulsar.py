"""The Pulsar runtime: a TrustGraph tool-service call, request queue in, response queue out.

Wire format, byte-compatible with TrustGraph's ``DynamicToolService`` (trustgraph-base
2.11), which serialises its dataclasses with ``json.dumps`` and its default separators:

* request body ``{"user": U, "config": "<JSON>", "arguments": "<JSON>"}`` (config and
  arguments are JSON *strings*), message property ``id`` = a fresh UUID;
* response body ``{"error": null | {"type": T, "message": M}, "response": "<text>",
  "end_of_stream": bool}`` with the request's ``id``; a stream is several responses, the
  last with ``end_of_stream`` true.

The caller subscribes to the response queue under a unique subscription *before* sending
(a non-persistent topic drops what nobody listens to) and ignores other ids. One runner
keeps one client, one producer per request queue and one response consumer per response
queue, whose dispatcher thread routes answers by id: ``run`` is safe from many threads.
"""

from __future__ import annotations

import atexit
import json
import math
import queue
import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future, InvalidStateError
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from toolctl.errors import Interrupted, TimedOut, ToolctlError, TransportUnavailable, UsageError
from toolctl.pulsar.broker import BROKER_HINT, needs_acknowledging, open_client, probe, translate
from toolctl.runners.base import RunContext, ToolResult, ToolSpec
from toolctl.settings import Settings

TRANSPORT = "pulsar"
ERROR_TYPE = "tool-service-error"
MAX_PENDING = 10_000
"""Requests (or answers) in flight per queue; above ``run --concurrency``'s maximum."""
SWEEP_S = 0.1
"""How often the dispatcher fails submitted calls that are past their deadline."""


# -- wire format --------------------------------------------------------------------------


def encode_request(user: str, config: Mapping[str, Any], arguments: Mapping[str, Any]) -> bytes:
    """The request body, byte for byte what TrustGraph's ToolServiceClient sends."""
    body = {"user": user, "config": json.dumps(dict(config)), "arguments": json.dumps(arguments)}
    return json.dumps(body).encode("utf-8")


def decode_request(body: bytes) -> tuple[dict[str, Any], dict[str, Any], str]:
    """(config, arguments, user) of a request body; ValueError says what is wrong with it.

    As in TrustGraph, an empty config or arguments is ``{}`` and a missing user is
    ``trustgraph``; an object where a JSON string belongs is accepted as it is.
    """
    try:
        request = json.loads(body)
    except ValueError as exc:
        raise ValueError(f"request is not JSON: {exc}") from exc
    if not isinstance(request, dict):
        raise ValueError("request is not a JSON object")
    config = _json_field(request, "config")
    arguments = _json_field(request, "arguments")
    return config, arguments, str(request.get("user") or "trustgraph")


def _json_field(request: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = request.get(key) or {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"request {key} is not a JSON string: {exc}") from exc
    if not isinstance(value, dict):
        raise ValueError(f"request {key} is not a JSON object")
    return value


def encode_response(
    text: str = "", *, error: tuple[str, str] | None = None, end_of_stream: bool = True
) -> bytes:
    """A response body, byte for byte what TrustGraph's DynamicToolService sends."""
    body = {
        "error": None if error is None else {"type": error[0], "message": error[1]},
        "response": text,
        "end_of_stream": end_of_stream,
    }
    return json.dumps(body).encode("utf-8")


@dataclass(frozen=True)
class Response:
    """One response message: a chunk of text, or an error, and whether the stream ended."""

    text: str
    error: str | None
    end_of_stream: bool


def decode_response(body: bytes) -> Response:
    """Read a response body; a non-string ``response`` is JSON, a malformed body an error."""
    try:
        parsed = json.loads(body)
        if not isinstance(parsed, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        return Response("", f"malformed response: {exc}", True)
    error, answer = parsed.get("error"), parsed.get("response")
    text = answer if isinstance(answer, str) else ("" if answer is None else json.dumps(answer))
    if error:
        kind, message = (
            (error.get("type") or "error", error.get("message") or "")
            if isinstance(error, dict)
            else ("error", str(error))
        )
        return Response(text, f"{kind}: {message}" if message else str(kind), True)
    return Response(text, None, bool(parsed.get("end_of_stream", True)))


def fresh_id() -> str:
    """A random (version 4) UUID for a request's ``id``.

    From a PRNG seeded once from the OS: ``uuid.uuid4()`` asks the kernel for 16 bytes per
    call, a system call that costs as much as the rest of a pipelined call under gVisor.
    """
    return str(uuid.UUID(int=_random.getrandbits(128), version=4))


_random = random.Random()


# -- the runner -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _SendFailed:
    reason: str


class _Waited:
    """A call whose caller waits in ``run``: its answers go to a queue, read there."""

    __slots__ = ("box",)

    def __init__(self) -> None:
        self.box: queue.SimpleQueue[bytes | _SendFailed] = queue.SimpleQueue()

    def deliver(self, body: bytes) -> bool:
        self.box.put(body)
        return False  # the waiter forgets the call itself

    def fail(self, reason: str) -> None:
        self.box.put(_SendFailed(reason))


class _Submitted:
    """A call nobody waits on (``submit``): the dispatcher collects it into a Future."""

    __slots__ = ("chunks", "deadline", "future", "on_timeout", "started")

    def __init__(self, deadline: float, on_timeout: Callable[[], ToolctlError]) -> None:
        self.started = time.monotonic()
        self.deadline, self.on_timeout = deadline, on_timeout
        self.chunks: list[str] = []
        self.future: Future[ToolResult] = Future()

    def deliver(self, body: bytes) -> bool:
        response = decode_response(body)
        self.chunks.append(response.text)
        if not response.end_of_stream:
            return False
        text = "".join(self.chunks)
        took = round((time.monotonic() - self.started) * 1000, 3)
        if response.error is not None:
            result = ToolResult(False, text, None, response.error, None, took, TRANSPORT)
        else:
            result = ToolResult.from_answer(text, transport=TRANSPORT, duration_ms=took)
        with suppress(InvalidStateError):  # the caller cancelled it meanwhile
            self.future.set_result(result)
        return True

    def fail(self, reason: str) -> None:
        with suppress(InvalidStateError):
            self.future.set_exception(TransportUnavailable(reason, hint=BROKER_HINT))


class _Channel:
    """A request producer and a response consumer; a dispatcher thread routes by ``id``."""

    def __init__(self, client: Any, request_queue: str, response_queue: str, timeout: float):
        import pulsar

        self._pulsar = pulsar
        self.request_queue = request_queue
        self._pending: dict[str, _Waited | _Submitted] = {}
        self._closed = False
        self._acknowledge = needs_acknowledging(response_queue)
        # subscribe first: a response sent before the subscription exists would be dropped
        self._consumer = client.subscribe(
            response_queue,
            f"toolctl-{uuid.uuid4().hex}",
            consumer_type=pulsar.ConsumerType.Exclusive,
            receiver_queue_size=MAX_PENDING,  # a non-persistent topic drops what overflows
        )
        self._producer = client.create_producer(
            request_queue,
            batching_enabled=False,  # a call is latency-bound: batching adds its delay
            block_if_queue_full=True,
            max_pending_messages=MAX_PENDING,
            send_timeout_millis=max(1000, int(min(timeout, 30.0) * 1000)),
        )
        self._thread = threading.Thread(
            target=self._dispatch, name=f"toolctl-pulsar {response_queue}", daemon=True
        )
        self._thread.start()

    def send(self, body: bytes, call: _Waited | _Submitted) -> str:
        """Send one request; its answers go to ``call``. Returns the request's id."""
        call_id = fresh_id()
        self._pending[call_id] = call
        try:
            # no send callback: a Python callback per message costs a GIL round trip; a
            # lost send shows as no answer, told apart from a slow worker by probing
            self._producer.send_async(body, None, properties={"id": call_id})
        except self._pulsar.PulsarException as exc:
            self._pending.pop(call_id, None)
            call.fail(f"could not send to {self.request_queue}: {type(exc).__name__}: {exc}")
        return call_id

    def forget(self, call_id: str) -> None:
        self._pending.pop(call_id, None)

    def _dispatch(self) -> None:
        consumer, pulsar, pending = self._consumer, self._pulsar, self._pending
        sweep = time.monotonic() + SWEEP_S
        while not self._closed:
            try:
                message = consumer.receive(timeout_millis=int(SWEEP_S * 1000))
            except pulsar.Timeout:
                message = None
            except pulsar.PulsarException:
                if self._closed:
                    return
                time.sleep(0.05)  # disconnected: the client reconnects by itself
                continue
            if message is not None:
                call_id = message.properties().get("id", "")
                call = pending.get(call_id)
                if call is not None and call.deliver(message.data()):
                    pending.pop(call_id, None)
                if self._acknowledge:
                    consumer.acknowledge(message)
            if time.monotonic() >= sweep:
                sweep = time.monotonic() + SWEEP_S
                self._expire()

    def _expire(self) -> None:
        """Fail the submitted calls past their deadline (waiters time out by themselves)."""
        now = time.monotonic()
        for call_id, call in list(self._pending.items()):
            if isinstance(call, _Submitted) and call.deadline <= now:
                self._pending.pop(call_id, None)
                with suppress(InvalidStateError):
                    call.future.set_exception(call.on_timeout())

    def close(self) -> None:
        self._closed = True
        for endpoint in (self._producer, self._consumer):
            with suppress(self._pulsar.PulsarException):
                endpoint.close()  # closing the consumer wakes the dispatcher's receive()
        self._thread.join(timeout=2)
        for call in self._pending.values():
            if isinstance(call, _Submitted):
                with suppress(InvalidStateError):
                    call.future.set_exception(Interrupted("the Pulsar runner was closed"))
        self._pending.clear()


class PulsarRunner:
    """Calls TrustGraph tool services; one connection for all calls of this runner."""

    transport = TRANSPORT

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.url = settings.pulsar_url
        self._lock = threading.Lock()
        self._client: Any = None
        self._channels: dict[tuple[str, str], _Channel] = {}
        self._probed = (-math.inf, True)

    def describe(
        self, tool: ToolSpec, arguments: dict[str, Any], context: RunContext
    ) -> dict[str, Any]:
        request_queue, response_queue = service_queues(tool)
        return {
            "transport": self.transport,
            "url": self.url,
            "service": tool.data.get("service"),
            "request_queue": request_queue,
            "response_queue": response_queue,
            "user": context.user,
            "config": dict(tool.data.get("config") or {}),
            "arguments": arguments,
            "timeout": context.timeout,
        }

    def run(self, tool: ToolSpec, arguments: dict[str, Any], context: RunContext) -> ToolResult:
        started = time.monotonic()
        channel = self._channel(tool, context.timeout)
        call = _Waited()
        call_id = channel.send(_request(tool, arguments, context), call)
        try:
            answer = _collect(call.box, started + context.timeout, context)
        except TimeoutError:
            raise self._unanswered(tool, channel, context.timeout) from None
        except KeyboardInterrupt:
            raise Interrupted(
                f"interrupted while waiting for an answer on {channel.request_queue}"
            ) from None
        finally:
            channel.forget(call_id)
        if isinstance(answer, _SendFailed):
            raise TransportUnavailable(f"{answer.reason} at {self.url}", hint=BROKER_HINT)
        text, error = answer
        took = round((time.monotonic() - started) * 1000, 3)
        if error is not None:
            return ToolResult(False, text, None, error, None, took, self.transport)
        return ToolResult.from_answer(text, transport=self.transport, duration_ms=took)

    def submit(
        self, tool: ToolSpec, arguments: dict[str, Any], context: RunContext
    ) -> Future[ToolResult]:
        """Send one call and return at once; what ``run --batch`` pipelines with.

        The Future holds the call's ToolResult, or TimedOut (TransportUnavailable when the
        broker is gone) once its timeout has passed; nothing is streamed.
        """
        channel = self._channel(tool, context.timeout)
        call = _Submitted(
            time.monotonic() + context.timeout,
            lambda: self._unanswered(tool, channel, context.timeout),
        )
        channel.send(_request(tool, arguments, context), call)
        return call.future

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
            client, self._client = self._client, None
        for channel in channels:
            channel.close()
        if client is not None:
            atexit.unregister(self.close)
            client.close()

    def _channel(self, tool: ToolSpec, timeout: float) -> _Channel:
        queues = service_queues(tool)
        channel = self._channels.get(queues)
        if channel is not None:
            return channel
        import pulsar

        with self._lock:
            if queues not in self._channels:
                if self._client is None:
                    self._client = open_client(self.url, timeout)
                    # a process that exits with a live client aborts (std::bad_weak_ptr)
                    atexit.register(self.close)
                try:
                    self._channels[queues] = _Channel(self._client, *queues, timeout)
                except pulsar.PulsarException as exc:
                    raise translate(exc, self.url, f"subscribing to {queues[1]}") from exc
            return self._channels[queues]

    def _unanswered(self, tool: ToolSpec, channel: _Channel, timeout: float) -> ToolctlError:
        """Why a call got no answer: the broker went away (exit 5), or no worker answered."""
        service = tool.data.get("service") or tool.name
        now = time.monotonic()
        if now - self._probed[0] > 1.0:  # many calls may expire at once: probe once a second
            try:
                probe(self.url, 0.5)
                self._probed = (now, True)
            except ToolctlError:
                self._probed = (now, False)
        if not self._probed[1]:
            return TransportUnavailable(
                f"lost the Pulsar broker at {self.url} while waiting for service '{service}'",
                hint=BROKER_HINT,
            )
        return TimedOut(
            f"no answer from service '{service}' within {timeout:g} s "
            f"(asked {channel.request_queue})",
            hint="a non-persistent topic drops requests while no worker is subscribed: "
            f"start one with 'toolctl worker {service}'",
        )


def _request(tool: ToolSpec, arguments: dict[str, Any], context: RunContext) -> bytes:
    return encode_request(context.user, tool.data.get("config") or {}, arguments)


def service_queues(tool: ToolSpec) -> tuple[str, str]:
    """(request queue, response queue) of the Pulsar service a tool runs through."""
    section = (tool.service or {}).get("pulsar")
    if not section:
        raise UsageError(f"tool '{tool.name}' does not run through a Pulsar service")
    return section["request_queue"], section["response_queue"]


def _collect(
    box: queue.SimpleQueue[bytes | _SendFailed], deadline: float, context: RunContext
) -> tuple[str, str | None] | _SendFailed:
    """Read one call's answers until ``end_of_stream``; TimeoutError past the deadline.

    A one-message answer is left for the caller to print; the chunks of a longer stream
    go to ``context.stream`` as they arrive.
    """
    chunks: list[str] = []
    stream, streamed = context.stream, False
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        try:
            item = box.get(timeout=remaining)
        except queue.Empty:
            raise TimeoutError from None
        if isinstance(item, _SendFailed):
            return item
        response = decode_response(item)
        chunks.append(response.text)
        if stream is not None and response.text and (streamed or not response.end_of_stream):
            stream(response.text if streamed else "".join(chunks))
            context.streamed = streamed = True
        if response.end_of_stream:
            text = "".join(chunks)
            if stream is not None and streamed and not text.endswith("\n"):
                stream("\n")  # leave the terminal on a fresh line
            return text, response.error
