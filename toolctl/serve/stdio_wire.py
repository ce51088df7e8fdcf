"""MCP's stdio transport for `toolctl mcp serve`: bounded lines, and an answer to each bad one.

The SDK's own transport (``mcp.server.stdio``) reads lines of any length, drops a line
that is not a JSON-RPC message without a word, and dies on text it cannot encode. Here:

* a line is at most ``MAX_LINE`` bytes (16 MiB); a longer one is read through and dropped
  in pieces, never held, and answered ``-32600`` (id null);
* a line that is not JSON (or not UTF-8) is answered ``-32700`` Parse error, id null;
* a JSON array is answered with one ``-32600`` (MCP 2025-06-18 dropped JSON-RPC batches);
* JSON that is not a JSON-RPC message, or holds text that is not Unicode (a lone
  surrogate, ``"\\ud800"``), is answered ``-32600`` with its id (a notification: nothing);
* a request of a method no client sends (the 2026-07-28 revision's ``server/discover``
  probe, a typo) is refused ``-32601`` Method not found here: the SDK answered ``-32602``
  Invalid params, and logged a long validation warning;
* what goes out is always UTF-8: a lone surrogate is written as its JSON escape;
* when stdin closes, the requests already read get ``EOF_GRACE`` seconds to be answered
  before the session ends (and the SDK cancels what is still running): a client that
  writes its requests and closes (``printf ... | toolctl mcp serve``) gets every quick
  answer, and one that closes stdin to shut the server down waits at most that long.

A message is serialised as the model it holds, not through the ``JSONRPCMessage`` union
around it (the bytes are the same; the union costs ~7x more, which for a 10,000-tool list
is ~240 ms of the server's ~300); a line is read, and a message written, on a thread the
server may abandon, so a signal stops it without waiting for stdin, or for a client that
does not read what it was sent. A message of at most a page, while the pipe has a page
free, is written on the event loop's own thread: it cannot block there, and skipping the
hand-off to a thread made a `tools/call` 1.58 ms against 1.65 (p50, side by side).
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import AsyncIterator
from typing import IO, TYPE_CHECKING, Any

import anyio
from mcp import types

from toolctl.arguments import DuplicateKey, json_problem, unique_keys, value_problem

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

    Incoming = MemoryObjectReceiveStream[SessionMessage | Exception]
    Outgoing = MemoryObjectSendStream[SessionMessage]

MAX_LINE = 16 * 1024 * 1024
"""The longest line `mcp serve` reads from stdin, in bytes (newline excluded)."""

EOF_GRACE = 3.0
"""Seconds the requests read before stdin closed get to be answered (see above)."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


class Line:
    """One line read: its bytes, or None when it was over MAX_LINE (read through)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes | None) -> None:
        self.data = data


def read_line(stdin: IO[bytes], limit: int = MAX_LINE) -> Line | None:
    """The next line (None at end of input); past ``limit`` bytes the rest of the line
    is read and dropped in pieces of ``limit``, so memory stays bounded."""
    data = stdin.readline(limit + 1)
    if not data:
        return None
    if len(data) <= limit or data.endswith(b"\n"):
        return Line(data)
    while (more := stdin.readline(limit)) and not more.endswith(b"\n"):
        pass
    return Line(None)


def triage(line: Line) -> tuple[Any, dict[str, Any] | None]:
    """A line as (message, None) for the session, or (None, error answer) to send back;
    (None, None) for a blank line or a bad notification (nothing to answer)."""
    if line.data is None:
        return None, _error(None, INVALID_REQUEST, f"the line is over {MAX_LINE} bytes")
    if not line.data.strip():
        return None, None
    try:
        # UTF-8, as MCP's stdio is: json.loads of bytes guesses UTF-16 or UTF-32 from the
        # first bytes (`\xff\xfe` was "'utf-16-le' codec can't decode")
        text = line.data.decode("utf-8-sig")
        value = json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKey as exc:  # answered with its id (read the lenient way) if it has one
        lenient = json.loads(text)
        request_id = usable_id(lenient.get("id") if isinstance(lenient, dict) else None)
        return None, _error(request_id, INVALID_REQUEST, f"Invalid Request: it gives {exc} twice")
    except UnicodeDecodeError as exc:
        where = f"byte 0x{exc.object[exc.start]:02x} at {exc.start}"
        return None, _error(None, PARSE_ERROR, f"Parse error: the line is not UTF-8 ({where})")
    except (ValueError, RecursionError) as exc:
        return None, _error(None, PARSE_ERROR, f"Parse error: {json_problem(exc)[:200]}")
    if isinstance(value, list):
        return None, _error(None, INVALID_REQUEST, "batches (JSON arrays) are not supported")
    request_id = usable_id(value.get("id") if isinstance(value, dict) else None)
    if isinstance(value, dict) and "method" in value and "id" in value and request_id is None:
        return None, _error(None, INVALID_REQUEST, "Invalid Request: " + BAD_ID)
    problem = value_problem(value)
    if problem is None:
        try:
            message = types.JSONRPCMessage.model_validate(value)
        except ValueError as exc:
            problem = f"not a JSON-RPC message ({str(exc).splitlines()[0][:200]})"
        else:
            if isinstance(message.root, types.JSONRPCNotification) and not _known(message.root):
                return None, None  # never answered, and ignored (MCP): no SDK warning either
            return message, None
    if isinstance(value, dict) and "method" in value and "id" not in value:
        return None, None  # a notification is never answered
    return None, _error(request_id, INVALID_REQUEST, f"Invalid Request: {problem}")


BAD_ID = "its id is neither a string nor an integer (MCP allows no other, null neither)"


def _known(notification: types.JSONRPCNotification) -> bool:
    """Whether a notification is one a client sends, with its params (the SDK logged a
    validation warning of some thirty lines for any other, and dropped it)."""
    try:
        types.ClientNotification.model_validate(
            notification.model_dump(by_alias=True, exclude_none=True, exclude={"jsonrpc"})
        )
    except ValueError:
        return False
    return True


DISCOVER_REFUSAL = {"code": types.METHOD_NOT_FOUND, "message": "Method not found"}
"""The answer to a method no client sends, ``server/discover`` (the 2026-07-28 revision's
probe: this server speaks the handshake revisions, so the probing client falls back to
``initialize``) among them."""


def unknown_method(method: str) -> bool:
    """Whether ``method`` is none of the requests a client sends (``types.ClientRequest``)."""
    return method not in _client_methods()


def params_problem(method: str, params: Any) -> str | None:
    """Why a known request's params are not its own (``tools/call`` without ``name``,
    ``arguments`` that are not an object), naming the field; None when they are. The SDK
    answered such a request -32602 "Invalid request parameters", naming nothing, after a
    validation warning of up to a hundred lines on stderr."""
    import pydantic

    model = _client_requests().get(method)
    if model is None:
        return None
    try:
        model.model_validate({"method": method, "params": params})
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        return f"Invalid params: {where}: {error['msg']}"
    return None


def _client_methods() -> frozenset[str]:
    return frozenset(_client_requests())


@functools.cache
def _client_requests() -> dict[str, Any]:
    """Each request a client sends, by its method: the SDK's model of it."""
    import typing

    union = types.ClientRequest.model_fields["root"].annotation
    return {
        method: request
        for request in typing.get_args(union)
        for method in typing.get_args(request.model_fields["method"].annotation)
    }


def _cancelled_id(notification: types.JSONRPCNotification) -> list[str | int]:
    """The request id a ``notifications/cancelled`` names (none for other notifications)."""
    if notification.method != "notifications/cancelled":
        return []
    request_id = (notification.params or {}).get("requestId")
    usable = usable_id(request_id)
    return [] if usable is None else [usable]


def _discover_refusal(request_id: str | int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": DISCOVER_REFUSAL}


def usable_id(request_id: Any) -> str | int | None:
    """A request id an answer can carry: a string of valid Unicode or an integer."""
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        return None
    return None if isinstance(request_id, str) and value_problem(request_id) else request_id


def _error(request_id: str | int | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


_ATOMIC = 4096
"""PIPE_BUF on Linux: a write of at most this many bytes to a pipe is whole."""


def _room(stream: IO[bytes]) -> bool:
    """Whether ``stream`` takes a write of at most _ATOMIC bytes without blocking: a pipe
    polls writable when a whole page is free."""
    import select

    try:
        return bool(select.select([], [stream.fileno()], [], 0)[1])
    except (OSError, ValueError):
        return False


def encoded(text: str) -> bytes:
    """JSON text as UTF-8; a lone surrogate (only ever inside a string) as its escape."""
    return text.encode("utf-8", "backslashreplace") + b"\n"


@contextlib.asynccontextmanager
async def stdio_transport(
    stdin: IO[bytes], stdout: IO[bytes]
) -> AsyncIterator[tuple[Incoming, Outgoing]]:
    """The session's read and write streams over ``stdin`` and ``stdout`` (see above)."""
    from mcp.shared.message import SessionMessage

    read_writer, read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writing = anyio.Lock()
    unanswered: set[str | int] = set()  # the ids of requests read and not yet answered
    cancelled: set[str | int] = set()  # the ids notifications/cancelled named
    asked: set[str | int] = set()  # the ids of the server's own requests not yet answered

    def put(data: bytes) -> None:
        stdout.write(data)
        stdout.flush()

    async def send(data: bytes) -> None:
        async with writing:  # abandoned when the session is cancelled (see above)
            if len(data) <= _ATOMIC and _room(stdout):
                put(data)  # cannot block: the pipe has room for it whole (see _room)
            else:
                await anyio.to_thread.run_sync(put, data, abandon_on_cancel=True)

    async def reader() -> None:
        async with read_writer:
            while line := await anyio.to_thread.run_sync(read_line, stdin, abandon_on_cancel=True):
                message, answer = triage(line)
                if answer is not None:
                    await send(encoded(json.dumps(answer)))
                if message is None:
                    continue
                probe = message.root
                if isinstance(probe, types.JSONRPCRequest) and unknown_method(probe.method):
                    await send(encoded(json.dumps(_discover_refusal(probe.id))))
                    continue
                if isinstance(probe, types.JSONRPCRequest) and (
                    problem := params_problem(probe.method, probe.params)
                ):
                    await send(encoded(json.dumps(_error(probe.id, INVALID_PARAMS, problem))))
                    continue
                if isinstance(probe, types.JSONRPCRequest):
                    unanswered.add(probe.id)
                elif isinstance(probe, types.JSONRPCNotification):
                    cancelled.update(_cancelled_id(probe))
                elif probe.id not in asked:  # an answer to nothing the server asked: ignored
                    continue  # (the SDK sent the client an error-level log of it, and warned)
                else:
                    asked.discard(probe.id)
                try:
                    await read_writer.send(SessionMessage(message))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return  # the session is over: what is still sent goes unread
            with anyio.move_on_after(EOF_GRACE):  # stdin closed: answer what was read
                while unanswered:
                    await anyio.sleep(0.005)

    async def writer() -> None:
        async with write_reader:
            async for outgoing in write_reader:
                root = outgoing.message.root
                if isinstance(root, types.JSONRPCResponse | types.JSONRPCError):
                    unanswered.discard(root.id)
                elif isinstance(root, types.JSONRPCRequest):
                    asked.add(root.id)  # sampling, elicitation, roots, ping: the client answers
                if isinstance(root, types.JSONRPCError) and root.id in cancelled:
                    cancelled.discard(root.id)  # the SDK's "Request cancelled" (code 0): MCP
                    continue  # says a cancelled request gets no answer
                await send(encoded(root.model_dump_json(by_alias=True, exclude_none=True)))

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        group.start_soon(writer)
        yield read, write
