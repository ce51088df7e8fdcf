"""A call ends when its HTTP client goes away, and a client gone mid-body is one log line.

Starlette runs a route to its end whatever the client does, and a body cut short raises
``ClientDisconnect`` out of the route, which uvicorn logs as a traceback. Here a POST's
body is read whole first (bounded); a client gone before it is complete is one log line
and nothing runs. Then the app runs beside a watcher of the connection: when the client
disconnects before the response is complete the app is cancelled, which cancels the REST
call (its processes killed, a container removed), and ``gone`` is told, which cancels an
MCP ``tools/call`` (that runs in its session's task, not the request's).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

Gone = Callable[[bytes], Awaitable[None]]
"""Told the body of a request whose client went away before its answer."""

INCOMPLETE = object()
"""What ``read_body`` returns for a body its client stopped sending."""


async def read_body(receive: Receive, limit: int) -> bytes | object | None:
    """The whole body; None once it passes ``limit``; INCOMPLETE when the client left."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return INCOMPLETE
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def run_watched(
    app: ASGIApp, scope: Scope, body: bytes, receive: Receive, send: Send, gone: Gone
) -> None:
    """Run ``app`` on ``body``; cancel it and tell ``gone`` if the client disconnects first."""
    disconnected = anyio.Event()
    answered = False
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        await disconnected.wait()  # what a streaming response listens for
        return {"type": "http.disconnect"}

    async def sending(message: Message) -> None:
        nonlocal answered
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            answered = True
        await send(message)

    async with anyio.create_task_group() as group:

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            disconnected.set()
            if not answered:
                group.cancel_scope.cancel()
                with anyio.CancelScope(shield=True):
                    await gone(body)

        group.start_soon(watch)
        await app(scope, replay, sending)
        group.cancel_scope.cancel()


def mcp_call_id(body: bytes) -> str | None:
    """The id of a ``tools/call`` request in a body, as a string; else None."""
    import json

    try:
        message: Any = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if isinstance(message, dict) and message.get("method") == "tools/call":
        request_id = message.get("id")
        if isinstance(request_id, (str, int)) and not isinstance(request_id, bool):
            return str(request_id)
    return None
