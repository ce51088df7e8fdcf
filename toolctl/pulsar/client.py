"""Reaching a Pulsar broker: opening a client, probing it, and the response channel.

``open_client`` probes TCP first, so a dead broker fails at once (exit 5), then opens a
client that logs nowhere. ``translate`` is the one place that maps pulsar-client's
exceptions into toolctl's error tree. A ``Channel`` is a request producer plus a response
consumer subscribed under a unique name *before* anything is sent (a non-persistent topic
drops what nobody listens to); its dispatcher thread routes each answer to the pending
call with the same ``id`` and ignores the rest, so many threads share one channel. When
its connection drops and the broker's port no longer answers, every pending call fails at
once ("lost the Pulsar broker"), and so does every call sent until the broker is back.
"""

from __future__ import annotations

import math
import queue
import socket
import threading
import time
import uuid
from contextlib import suppress
from typing import Any, Protocol
from urllib.parse import urlsplit

from toolctl.errors import (
    Interrupted,
    ToolctlError,
    TransportLost,
    TransportUnavailable,
    UsageError,
    stopped_by,
)
from toolctl.pulsar.wire import fresh_id, request_properties

BROKER_HINT = "start one with 'toolctl broker start --detach', or pass --pulsar-url"
"""What a caller is told of a broker on this machine it cannot reach."""
REMOTE_HINT = "check that the broker runs and this machine may reach it, or pass --pulsar-url"
"""The same, of a broker elsewhere (which `toolctl broker start` would not start)."""


def broker_hint(url: str) -> str:
    """The hint for a broker ``url`` that cannot be reached: start one here, when it is
    on this machine; else look at the one named."""
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(url.split(",")[0]).hostname or "").lower()
    except ValueError:
        host = ""
    local = host in ("", "localhost", "127.0.0.1", "::1") or host.startswith("127.")
    return BROKER_HINT if local else REMOTE_HINT


MAX_PENDING = 10_000
"""Requests (or answers) in flight per queue; above ``run --concurrency``'s maximum."""
SWEEP_S = 0.1
"""How often the dispatcher expires pending calls that are past their deadline."""
PROBE_S = 0.5
"""How often a disconnected channel probes the broker's port to tell a restart from a loss."""


def open_client(url: str, timeout: float) -> Any:
    """A pulsar.Client for ``url`` after a TCP probe, so a dead broker fails fast (exit 5)."""
    import os

    import pulsar

    require_reachable(url, timeout)
    bounded = min(max(timeout, 0.1), 30.0)
    try:
        return pulsar.Client(
            url,
            operation_timeout_seconds=max(1, math.ceil(bounded)),
            connection_timeout_ms=max(100, int(bounded * 1000)),
            # the C++ client logs to stdout by default, which is where tool output goes
            logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull),
        )
    except pulsar.PulsarException as exc:
        raise TransportUnavailable(f"bad Pulsar URL {shown(url)}: {exc}") from exc
    except ValueError:  # a host it cannot read: a user or password in it, a bad port
        raise bad_url(url) from None


def bad_url(url: str) -> UsageError:
    """The error for a Pulsar URL that is not one (its password, if any, as ``***``)."""
    return UsageError(f"bad Pulsar URL {shown(url)!r}: expected pulsar://HOST:PORT")


def refuse_query(url: str) -> None:
    """UsageError for a Pulsar URL with a query or a fragment (``?token=...``): toolctl
    sends no credentials to Pulsar, so one there was never used, and it went on a
    detached worker's command line, its process record and its log, raw."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return  # said as a bad URL where it is read
    if parts.query or parts.fragment or url.rstrip().endswith(("?", "#")):
        raise UsageError(
            f"bad Pulsar URL {shown(url)!r}: a Pulsar URL takes no query or fragment",
            hint="toolctl sends no credentials to Pulsar: give pulsar://HOST:PORT",
        )


def shown(url: str) -> str:
    """A broker's URL as every message says it: its password, if any, as ``***`` (the
    message also goes into `run --json`'s result and the MCP doors' answers)."""
    from toolctl.urls import hide_passwords

    return hide_passwords(url)


def _host(host: str) -> tuple[str, str] | None:
    """(name, port) of one ``HOST[:PORT]`` of a broker URL, or None when it is not one."""
    name, _, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
    if port and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        return None
    return (name, port) if name else None


def require_reachable(url: str, timeout: float) -> None:
    """Raise TransportUnavailable unless some host of a ``pulsar://`` URL accepts TCP."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed [IPv6 address
        parts = urlsplit("")
    defaults = {"pulsar": 6650, "pulsar+ssl": 6651, "http": 80, "https": 443}
    if parts.scheme not in defaults:
        raise bad_url(url)
    refuse_query(url)
    default_port = defaults[parts.scheme]  # http(s): a lookup service, probed the same way
    hosts = [_host(host) for host in parts.netloc.split(",")]
    if "@" in parts.netloc or not all(hosts):  # a user or password the client cannot read,
        raise bad_url(url)  # a port of letters or out of range: the same answer, reached or not
    reason = "no host"
    for name, port in filter(None, hosts):
        try:
            with socket.create_connection(
                (name, int(port or default_port)), timeout=min(max(timeout, 0.1), 5.0)
            ):
                return
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    raise TransportUnavailable(
        f"cannot reach the Pulsar broker at {shown(url)}: {reason.lower()}",
        hint=broker_hint(url),
    )


def needs_acknowledging(topic: str) -> bool:
    """Whether consumed messages must be acknowledged: not on a non-persistent topic.

    There an acknowledgement changes nothing, yet costs a blocking call (and a GIL round
    trip) per message, about a third of a pipelined call's cost in the client.
    """
    return not topic.startswith("non-persistent://")


def translate(exc: Exception, url: str, doing: str) -> ToolctlError:
    """A pulsar-client exception as toolctl's error: the one place that maps them."""
    import pulsar

    if isinstance(exc, pulsar.Interrupted):
        from toolctl.processes.lifetime import received

        signum = received()
        if signum is not None:  # told as that signal: SIGTERM is "terminated" (143)
            return stopped_by(signum)
        # no signal came: the client's operation was cut off by the broker (a restart
        # resets the connection under a pending lookup or subscribe)
        return TransportUnavailable(
            f"the Pulsar broker at {shown(url)} reset the connection while {doing}",
            hint=broker_hint(url),
        )
    if isinstance(exc, (pulsar.Timeout, pulsar.ConnectError)):
        return TransportUnavailable(
            f"the Pulsar broker at {shown(url)} did not answer while {doing}",
            hint=broker_hint(url),
        )
    name = type(exc).__name__
    hint = None
    if name == "TopicNotFound":  # the broker answers; the topic's namespace is not there
        hint = (
            "create the topic's tenant and namespace on the broker (pulsar-admin namespaces "
            "create TENANT/NAMESPACE; TrustGraph's tg-init-trustgraph makes tg/request, "
            "tg/response and tg/flow, not tg/config)"
        )
    elif name == "LookupError" and url.startswith("http"):
        hint = "an http:// URL is a broker's HTTP lookup service; pulsar://HOST:6650 is its own"
    return TransportUnavailable(
        f"Pulsar broker at {shown(url)}: {doing} failed: {name}: {exc}", hint=hint
    )


class PendingCall(Protocol):
    """A sent request waiting for its answers, as the channel's dispatcher sees it."""

    deadline: float | None
    """When the dispatcher gives up on it (``expire``); None: its caller times out itself."""

    def deliver(self, body: bytes) -> bool:
        """Take one response body; True once the call is complete (the channel forgets it)."""
        ...

    def fail(self, error: ToolctlError) -> None:
        """The request could not be sent, or the channel closed."""
        ...

    def expire(self) -> None:
        """Its deadline passed without a complete answer."""
        ...


class Waited:
    """A call whose caller blocks on ``box``: response bodies, or the error that ended it."""

    __slots__ = ("box", "deadline")

    def __init__(self) -> None:
        self.deadline: float | None = None
        self.box: queue.SimpleQueue[bytes | ToolctlError] = queue.SimpleQueue()

    def deliver(self, body: bytes) -> bool:
        self.box.put(body)
        return False  # the waiter forgets the call itself

    def fail(self, error: ToolctlError) -> None:
        self.box.put(error)

    def expire(self) -> None:  # pragma: no cover - a waiter has no deadline here
        pass


class Channel:
    """A request producer and a response consumer; a dispatcher thread routes by ``id``."""

    def __init__(
        self, client: Any, url: str, request_queue: str, response_queue: str, timeout: float
    ) -> None:
        """Subscribe, then open the producer; pulsar-client errors come out translated."""
        import pulsar

        self._pulsar = pulsar
        self.url, self.request_queue = url, request_queue
        self._pending: dict[str, PendingCall] = {}
        self._closed = False
        self._lost = False
        self._probed = -math.inf
        self._acknowledge = needs_acknowledging(response_queue)
        try:
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
        except pulsar.PulsarException as exc:
            raise translate(exc, url, f"subscribing to {response_queue}") from exc
        self._thread = threading.Thread(
            target=self._dispatch, name=f"toolctl-pulsar {response_queue}", daemon=True
        )
        self._thread.start()

    def send(
        self,
        body: bytes,
        call: PendingCall,
        timeout: float,
        traceparent: str | None = None,
        progress: bool = False,
    ) -> str:
        """Send one request, due in ``timeout`` s; its answers go to ``call``. Returns its id.

        ``progress``: the request asks its worker for progress partials."""
        call_id = fresh_id()
        if self._lost and not self._reachable():
            call.fail(self.lost())
            return call_id
        self._pending[call_id] = call
        try:
            # no send callback: a Python callback per message costs a GIL round trip; a
            # lost send shows as no answer, told apart from a slow worker by probing
            self._producer.send_async(
                body,
                None if len(body) < 64 * 1024 else self._sent(call_id),
                properties=request_properties(call_id, timeout, traceparent, progress),
            )
        except self._pulsar.PulsarException as exc:
            self._pending.pop(call_id, None)
            reason = f"could not send to {self.request_queue} at {self.url}"
            call.fail(
                TransportUnavailable(
                    f"{reason}: {type(exc).__name__}: {exc}", hint=broker_hint(self.url)
                )
            )
        return call_id

    def _sent(self, call_id: str) -> Any:
        """A callback for a big request: one over the broker's size limit fails its call."""

        def sent(result: Any, _message_id: Any) -> None:
            if result == self._pulsar.Result.MessageTooBig:
                call = self._pending.pop(call_id, None)
                if call is not None:
                    call.fail(
                        UsageError(
                            f"the request is larger than the Pulsar broker at {self.url} takes "
                            "in one message (its maxMessageSize, 5 MiB by default)"
                        )
                    )

        return sent

    def forget(self, call_id: str) -> None:
        self._pending.pop(call_id, None)

    def lost(self) -> ToolctlError:
        return TransportLost(
            f"lost the Pulsar broker at {self.url} (asked {self.request_queue})",
            hint=broker_hint(self.url),
        )

    def _reachable(self) -> bool:
        """Probe the broker's port (at most every PROBE_S); remembers a loss in ``_lost``."""
        now = time.monotonic()
        if now - self._probed >= PROBE_S:
            self._probed = now
            try:
                require_reachable(self.url, 0.5)
                self._lost = False
            except ToolctlError:
                self._lost = True
        return not self._lost

    def _check_connection(self) -> None:
        """Fail every pending call at once when the broker is gone (not merely restarting)."""
        if self._consumer.is_connected() and not self._lost:
            return
        if self._pending and not self._reachable():
            error = self.lost()
            for call_id in list(self._pending):
                call = self._pending.pop(call_id, None)
                if call is not None:
                    call.fail(error)

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
                    try:
                        consumer.acknowledge(message)
                    except pulsar.PulsarException:  # closed meanwhile (AlreadyClosed): the
                        if self._closed:  # broker redelivers it to the next consumer
                            return
                        continue
            if time.monotonic() >= sweep:
                sweep = time.monotonic() + SWEEP_S
                self._expire()
                self._check_connection()

    def _expire(self) -> None:
        """Expire the pending calls past their deadline (waiters time out by themselves)."""
        now = time.monotonic()
        for call_id, call in list(self._pending.items()):
            if call.deadline is not None and call.deadline <= now:
                self._pending.pop(call_id, None)
                call.expire()

    def close(self) -> None:
        self._closed = True
        if self._acknowledge:  # a persistent topic keeps a subscription: remove this one's
            with suppress(self._pulsar.PulsarException):
                self._consumer.unsubscribe()
        for endpoint in (self._producer, self._consumer):
            with suppress(self._pulsar.PulsarException):
                endpoint.close()  # closing the consumer wakes the dispatcher's receive()
        self._thread.join(timeout=2)
        for call in self._pending.values():
            if call.deadline is not None:
                call.fail(Interrupted("the Pulsar runner was closed"))
        self._pending.clear()
