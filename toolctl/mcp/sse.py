"""The old HTTP+SSE transport (MCP 2024-11-05), which many deployed servers still speak.

The client opens one ``GET`` event stream; its first event, ``endpoint``, names the URL to
which each message is then POSTed (the server answers 202), and every answer comes back as
a ``message`` event on the stream. One reader thread routes the answers to the callers
waiting for them, as the stdio transport does. The endpoint must be on the same origin as
the stream (scheme, host and port): the POSTs carry the same headers, a token among them,
and a server must not be able to send them elsewhere.

:func:`connect_remote` is how a ``url`` service is reached: streamable HTTP, the old
transport, or (when the service does not say) streamable HTTP first and, when the server
refuses that with a 4xx, the old transport, as the specification's backwards
compatibility section tells a client to do.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from toolctl.errors import TimedOut, TransportUnavailable
from toolctl.imports import skip_httpx_cli
from toolctl.mcp.http import safe_url
from toolctl.mcp.wire import MAX_MESSAGE, Message, ProtocolError, SseParser, decode, encode

if TYPE_CHECKING:
    import httpx

    from toolctl.mcp.session import Session

Inbound = Callable[[Message], "Message | None"]


class _Slot:
    __slots__ = ("answer", "done")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer: Message | None = None


class SseTransport:
    """One HTTP+SSE session; ``request`` may be called from several threads at once."""

    remote = True
    """Closing it leaves the server running (it is not ours to stop)."""

    def __init__(
        self,
        url: str,
        *,
        inbound: Inbound,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        limit: int = MAX_MESSAGE,
        shown: str | None = None,
    ) -> None:
        skip_httpx_cli()
        import httpx

        self._httpx = httpx
        self.url, self.name = url, shown or safe_url(url)
        self._inbound, self._limit = inbound, limit
        self._pending: dict[Any, _Slot] = {}
        self._lock = threading.Lock()
        self._failure: TransportUnavailable | None = None
        self._ready = threading.Event()
        self.endpoint: str | None = None
        self._client = httpx.Client(headers=dict(headers or {}), follow_redirects=False)
        deadline = time.monotonic() + timeout
        self._stream = self._open(deadline)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(max(deadline - time.monotonic(), 0)):
            self.close()
            raise TimedOut(f"MCP server at {self.name} sent no endpoint event in {timeout:g} s")
        if self._failure is not None:
            self.close()
            raise self._failure

    def _open(self, deadline: float) -> httpx.Response:
        left = max(deadline - time.monotonic(), 0.01)
        request = self._client.build_request(
            "GET", self.url, headers={"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        )
        request.extensions["timeout"] = self._httpx.Timeout(left, read=None).as_dict()
        try:
            response = self._client.send(request, stream=True)
        except self._httpx.TimeoutException as exc:
            self._client.close()
            raise TimedOut(f"MCP server at {self.name} did not answer in time") from exc
        except self._httpx.HTTPError as exc:
            self._client.close()
            raise TransportUnavailable(
                f"cannot reach MCP server at {self.name}: {type(exc).__name__}",
                hint="is the server running, and is the URL right?",
            ) from exc
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if response.status_code != 200 or kind != "text/event-stream":
            status = f"HTTP {response.status_code} {response.reason_phrase}".strip()
            response.close()
            self._client.close()
            hint = "check the headers (a token?)" if response.status_code in (401, 403) else None
            raise TransportUnavailable(
                f"MCP server at {self.name} answered {status} ({kind or 'no content type'}), "
                "not an SSE stream",
                hint=hint,
            )
        return response

    # -- the event stream ------------------------------------------------------------------

    def _read(self) -> None:
        parser = SseParser(self._limit)
        try:
            for chunk in self._stream.iter_bytes():
                for event in parser.feed(chunk):
                    self._event(event.event, event.data)
        except ProtocolError as error:
            self._fail(error)
            return
        except (self._httpx.HTTPError, OSError, ValueError, RuntimeError):
            pass
        self._fail(TransportUnavailable(f"MCP server at {self.name} closed its event stream"))

    def _event(self, kind: str, data: str) -> None:
        if kind == "endpoint":
            endpoint = urljoin(self.url, data.strip())
            if _origin(endpoint) != _origin(self.url):
                raise ProtocolError(
                    f"MCP server at {self.name} named a message endpoint on another origin "
                    f"({safe_url(endpoint)}); toolctl does not send its headers there"
                )
            self.endpoint = endpoint
            self._ready.set()
            return
        if kind != "message" or not data.strip():
            return
        message = decode(data)
        if "method" not in message:
            with self._lock:
                slot = self._pending.get(message["id"])
            if slot is not None:
                slot.answer = message
                slot.done.set()
            return
        reply = self._inbound(message)
        if reply is not None and "id" in message:
            threading.Thread(target=self._quietly, args=(reply,), daemon=True).start()

    def _quietly(self, message: Message) -> None:
        with contextlib.suppress(TransportUnavailable, TimedOut):
            self.notify(message)

    def _fail(self, error: TransportUnavailable) -> None:
        with self._lock:
            if self._failure is None:
                self._failure = error
            waiting = list(self._pending.values())
        self._ready.set()
        for slot in waiting:
            slot.done.set()

    # -- messages --------------------------------------------------------------------------

    def request(self, message: Message, timeout: float) -> Message:
        """POST ``message`` and wait for its answer on the stream; TimedOut after ``timeout``."""
        deadline = time.monotonic() + timeout
        slot = _Slot()
        with self._lock:
            self._pending[message["id"]] = slot
        try:
            self._post(message, deadline)
            if not slot.done.wait(max(deadline - time.monotonic(), 0)):
                raise TimedOut(
                    f"MCP server at {self.name} did not answer within {round(timeout, 1):g} s"
                )
        finally:
            with self._lock:
                self._pending.pop(message["id"], None)
        if slot.answer is None:
            raise self._failure or TransportUnavailable(f"MCP server at {self.name} went away")
        return slot.answer

    def notify(self, message: Message, timeout: float = 5.0) -> None:
        self._post(message, time.monotonic() + timeout)

    def _post(self, message: Message, deadline: float) -> None:
        if self._failure is not None:
            raise self._failure
        assert self.endpoint is not None
        left = max(deadline - time.monotonic(), 0.01)
        try:
            response = self._client.post(
                self.endpoint,
                content=encode(message),
                headers={"Content-Type": "application/json"},
                timeout=left,
            )
        except self._httpx.TimeoutException as exc:
            raise TimedOut(f"MCP server at {self.name} did not take a message in time") from exc
        except self._httpx.HTTPError as exc:
            raise TransportUnavailable(
                f"lost the connection to MCP server at {self.name}: {type(exc).__name__}"
            ) from exc
        if response.status_code >= 400:
            status = f"HTTP {response.status_code} {response.reason_phrase}".strip()
            raise TransportUnavailable(f"MCP server at {self.name} refused a message: {status}")

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the event stream (the server ends the session with it) and the connections."""
        self._fail(TransportUnavailable(f"the session with MCP server at {self.name} was closed"))
        with contextlib.suppress(Exception):  # the reader may be mid-read on another thread
            self._stream.close()
        self._client.close()

    def kill(self) -> None:
        self.close()


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


def connect_sse(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    shown: str | None = None,
) -> Session:
    """A session over the old HTTP+SSE transport, handshake done within ``timeout``;
    ``shown`` is how messages name the server (default: the URL without query)."""
    from toolctl.mcp.connect import finish_handshake
    from toolctl.mcp.session import Session

    deadline = time.monotonic() + timeout
    session = Session()
    session.transport = SseTransport(
        url, inbound=session.inbound, headers=headers, timeout=timeout, shown=shown
    )
    return finish_handshake(session, max(deadline - time.monotonic(), 0.01), False)


def _connect_http(
    url: str, headers: Mapping[str, str] | None, timeout: float, shown: str | None
) -> Session:
    """``session.connect_http``, naming the server ``shown`` in every message."""
    from toolctl.mcp.connect import finish_handshake
    from toolctl.mcp.http import HttpTransport
    from toolctl.mcp.session import Session

    session = Session()
    session.transport = HttpTransport(url, inbound=session.inbound, headers=headers)
    if shown:
        session.transport.name = shown
    return finish_handshake(session, timeout, False)


REFUSED = re.compile(r"answered HTTP 4\d\d\b")


def connect_remote(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    transport: str | None = None,
    shown: str | None = None,
) -> Session:
    """A session with a ``url`` server: ``transport`` "http" (streamable HTTP), "sse" (the
    old transport), or None: streamable HTTP, then the old transport if that is refused
    with a 4xx (the error of the first attempt is the one raised when both fail).
    ``shown`` names the server in messages: a URL whose path holds a secret is shown
    with ``***`` there."""
    if transport == "sse":
        return connect_sse(url, headers=headers, timeout=timeout, shown=shown)
    deadline = time.monotonic() + timeout
    try:
        return _connect_http(url, headers, timeout, shown)
    except TransportUnavailable as exc:
        if (
            transport == "http"
            or getattr(exc, "status", None) == 401
            or not REFUSED.search(exc.message)
        ):
            raise
        try:
            left = max(deadline - time.monotonic(), 0.01)
            return connect_sse(url, headers=headers, timeout=left, shown=shown)
        except (TransportUnavailable, TimedOut):
            raise exc from None
