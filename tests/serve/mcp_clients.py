"""The official MCP SDK client, connected to `toolctl mcp serve` (stdio) or `toolctl serve`
(streamable HTTP), for tests that drive a session with plain async functions."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError


class Changes:
    """Counts notifications/tools/list_changed a session receives."""

    def __init__(self) -> None:
        self.count = 0
        self.seen = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            self.count += 1
            self.seen.set()


@asynccontextmanager
async def stdio_session(
    registry: Path,
    *extra: str,
    changes: Changes | None = None,
    cwd: Path | None = None,
    stderr: Path | None = None,
) -> AsyncIterator[ClientSession]:
    """``stderr``: a file for the server's stderr (else the test's own)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolctl", "mcp", "serve", "--registry", str(registry), *extra],
        env=dict(os.environ),
        cwd=str(cwd) if cwd else None,
    )
    with contextlib.ExitStack() as files:
        errlog = files.enter_context(open(stderr, "w")) if stderr else sys.stderr
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, message_handler=changes) as session,
        ):
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(
    url: str, changes: Changes | None = None, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=300)) as client,
        streamable_http_client(f"{url}/mcp", http_client=client) as (read, write, _),
        ClientSession(read, write, message_handler=changes) as session,
    ):
        await session.initialize()
        yield session


async def cancel_next_call(
    session: ClientSession, name: str, arguments: dict[str, Any], after: Any
) -> None:
    """Call ``name``; once ``after()`` is true, send notifications/cancelled for that call.

    The SDK 1.x client does not send the notification itself when a call is abandoned,
    so the test sends it, with the id the session is about to use.
    """
    request_id = session._request_id  # the id the next request gets

    async def call() -> None:
        with contextlib.suppress(McpError):  # the SDK server answers "Request cancelled"
            await session.call_tool(name, arguments)

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        while not after():
            await anyio.sleep(0.05)
        notification = types.CancelledNotification(
            params=types.CancelledNotificationParams(requestId=request_id, reason="test")
        )
        await session.send_notification(types.ClientNotification(notification))
        await anyio.sleep(0.5)
        group.cancel_scope.cancel()


def texts(result: types.CallToolResult) -> Sequence[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]
