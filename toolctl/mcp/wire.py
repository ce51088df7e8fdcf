"""JSON-RPC 2.0 framing for MCP: bounded line and SSE readers, messages, and their errors.

Everything a server sends passes through ``decode`` here, so garbage from the wire becomes
one ``ProtocolError`` (never a ValueError, KeyError or a memory blow-up) in one place.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, NamedTuple

from toolctl.errors import ToolFailed, TransportUnavailable

MAX_MESSAGE = 16 * 1024 * 1024
"""The largest message (one stdio line, one SSE event) a server may send; then it is an error."""

METHOD_NOT_FOUND = -32601
INVALID_REQUEST = -32600


class ProtocolError(TransportUnavailable):
    """The server does not speak JSON-RPC 2.0 as MCP requires (garbage, oversized, misshapen)."""


class ServerError(ToolFailed):
    """The server answered a request with a JSON-RPC error object."""

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"MCP server refused {method}: {message} (JSON-RPC error {code})")
        self.method, self.code, self.server_message, self.data = method, code, message, data


Message = dict[str, Any]


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: dict[str, Any] | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def error_response(request_id: Any, code: int, text: str) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}


def encode(message: Message) -> bytes:
    """One message as compact UTF-8 JSON (no newline: stdio adds it, HTTP does not need it)."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


def decode(raw: bytes | str) -> Message:
    """Parse one message from the server; anything but a JSON-RPC 2.0 object is an error."""
    try:
        message = json.loads(raw)
    except RecursionError:
        raise ProtocolError(
            f"MCP server sent JSON nested too deep to read: {_excerpt(raw)}"
        ) from None
    except ValueError as exc:
        raise ProtocolError(f"MCP server sent something that is not JSON: {_excerpt(raw)}") from exc
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise ProtocolError(f"MCP server sent a message that is not JSON-RPC 2.0: {_excerpt(raw)}")
    has_id, has_method = "id" in message, isinstance(message.get("method"), str)
    is_answer = "result" in message or "error" in message
    if not (has_method or (has_id and is_answer)):
        raise ProtocolError(f"MCP server sent a malformed JSON-RPC message: {_excerpt(raw)}")
    if "error" in message and not _is_error_object(message["error"]):
        raise ProtocolError(f"MCP server sent a malformed JSON-RPC error: {_excerpt(raw)}")
    if "result" in message and not isinstance(message["result"], dict):
        raise ProtocolError(f"MCP server sent a result that is not an object: {_excerpt(raw)}")
    return message


def _is_error_object(error: Any) -> bool:
    return (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and not isinstance(error.get("code"), bool)
        and isinstance(error.get("message", ""), str)
    )


def _excerpt(raw: bytes | str, limit: int = 120) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    text = text.strip()
    return repr(text[:limit] + ("…" if len(text) > limit else ""))


class LineSplitter:
    """Newline-delimited messages from a byte stream, each at most ``limit`` bytes."""

    def __init__(self, limit: int = MAX_MESSAGE) -> None:
        self.limit = limit
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The complete lines in ``chunk`` (plus what came before); blank lines are skipped."""
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            self._buffer += chunk[start:end]
            line, self._buffer = bytes(self._buffer), bytearray()
            start = end + 1
            self._check(len(line))
            if line.strip():
                yield line
        self._buffer += chunk[start:]
        self._check(len(self._buffer))

    def _check(self, size: int) -> None:
        if size > self.limit:
            self._buffer = bytearray()
            raise ProtocolError(
                f"MCP server sent a message over {self.limit // (1024 * 1024)} MiB: a tool's "
                "result that large, or logs it writes to stdout"
            )


class Event(NamedTuple):
    """One server-sent event: its type, joined data, and the id and retry it carried."""

    event: str
    data: str
    id: str | None
    retry_ms: int | None


class SseParser:
    """Incremental text/event-stream parser (the WHATWG rules), bounded like LineSplitter."""

    def __init__(self, limit: int = MAX_MESSAGE) -> None:
        self.limit = limit
        self._pending = b""
        self._data: list[str] = []
        self._size = 0
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> Iterator[Event]:
        buffer = self._pending + chunk
        start = 0
        while True:
            cut = _line_end(buffer, start)
            if cut is None:
                break
            end, after = cut
            yield from self._line(buffer[start:end])
            start = after
        self._pending = buffer[start:]
        if len(self._pending) + self._size > self.limit:
            raise ProtocolError(f"MCP server sent an event over {self.limit // 1048576} MiB")

    def _line(self, raw: bytes) -> Iterator[Event]:
        line = raw.decode("utf-8", "replace")
        if not line:
            if self._data:
                yield Event(self._event or "message", "\n".join(self._data), self._id, self._retry)
            self._data, self._size, self._event, self._retry = [], 0, "", None
            return
        if line.startswith(":"):
            return
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self._data.append(value)
            self._size += len(raw)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)

    @property
    def last_event_id(self) -> str | None:
        return self._id


def _line_end(buffer: bytes, start: int) -> tuple[int, int] | None:
    """Where the next line ends (CRLF, LF or CR) and where the one after it starts."""
    lf, cr = buffer.find(b"\n", start), buffer.find(b"\r", start)
    if cr == -1 and lf == -1:
        return None
    if cr == -1 or (lf != -1 and lf < cr):
        return lf, lf + 1
    if cr + 1 == len(buffer):
        return None  # a CR at the end of a chunk may be the first half of CRLF
    return cr, cr + 2 if buffer[cr + 1 : cr + 2] == b"\n" else cr + 1
