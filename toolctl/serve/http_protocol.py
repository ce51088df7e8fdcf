"""uvicorn's httptools protocol with a response's writes sent together, and a deadline for
a request's headers.

uvicorn writes a response in two pieces, the status line and headers, then the body: two
send() calls and two segments on the wire (the socket has Nagle off), each waking the
client. Here the writes made in one turn of the event loop leave as one send() at the end
of that turn: the same bytes, in the same order, a syscall and a wake-up fewer per call.

uvicorn bounds the wait between requests (its keep-alive timeout) but not a connection
that sends nothing, nor headers sent a byte at a time: a client could hold connections
(and file descriptors) for as long as it likes, before any token is read (slowloris). A
connection's first request, and each request from its first byte, must have its headers
in within ``HEADERS_SECONDS``; else the connection is closed. And a connection past
``max_connections()`` open at once is closed as it comes, so that clients can never take
every file descriptor the server has (its tools' pipes, its registry and history need
some): the server comes back as soon as they stop.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEADERS_SECONDS = 10.0
"""The longest a request's headers may take to arrive (see the module docstring)."""


@functools.cache
def max_connections() -> int:
    """Connections open at once: half the file descriptors the process may have."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft < 0:
        soft = 1 << 20
    return max(8, min(soft, 1 << 20) // 2)


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol over a transport whose writes in one loop turn are joined, which
    closes a connection whose request headers do not come in time."""

    _headers_due: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_JoinedWrites(transport))  # type: ignore[arg-type]
        if len(self.connections) > max_connections():
            transport.close()
            return
        self._expect_headers()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._expect_headers()

    def on_headers_complete(self) -> None:
        self._headers_arrived()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._headers_arrived()
        super().connection_lost(exc)

    def _expect_headers(self) -> None:
        self._headers_arrived()
        self._headers_due = self.loop.call_later(HEADERS_SECONDS, self._headers_late)

    def _headers_arrived(self) -> None:
        if self._headers_due is not None:
            self._headers_due.cancel()
            self._headers_due = None

    def _headers_late(self) -> None:
        self._headers_due = None
        if not self.transport.is_closing():
            self.transport.close()


class _JoinedWrites:
    """A transport that holds what is written until the current loop turn ends."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def _flush(self) -> None:
        data, self._pending = b"".join(self._pending), []
        if data and not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
