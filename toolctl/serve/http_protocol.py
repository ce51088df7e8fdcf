"""uvicorn's httptools protocol with a response's writes sent together.

uvicorn writes a response in two pieces, the status line and headers, then the body: two
send() calls and two segments on the wire (the socket has Nagle off), each waking the
client. Here the writes made in one turn of the event loop leave as one send() at the end
of that turn: the same bytes, in the same order, a syscall and a wake-up fewer per call.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol over a transport whose writes in one loop turn are joined."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_JoinedWrites(transport))  # type: ignore[arg-type]


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
