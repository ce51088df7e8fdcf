"""What a call reports while it runs, forwarded to the MCP client that made it.

A call runs on a worker thread (or, for a process tool, its stderr is read on another);
its progress and log messages are scheduled onto the server's event loop as
``notifications/progress`` (when the request carried a ``progressToken``) and
``notifications/message`` (at or above the level the session set with
``logging/setLevel``), tied to the request so that over HTTP they ride on its stream.
``flush`` waits for every one of them before the result goes out, so none arrives after it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from toolctl.runners.base import Event, Sink, WaitIndicator

if TYPE_CHECKING:
    from mcp.server.session import ServerSession

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class CallSink(Sink):
    """One MCP request's sink: warnings to the server's log, the rest to its client."""

    def __init__(
        self,
        base: Sink,
        session: ServerSession,
        *,
        request_id: Any,
        progress_token: Any,
        logger: str,
        level: str | None,
    ) -> None:
        self._base, self._session = base, session
        self._loop = asyncio.get_running_loop()
        self._request_id, self._token, self._logger = request_id, progress_token, logger
        self._least = LEVELS.index(level) if level in LEVELS else 0
        self._sent: list[Future[None]] = []

    def event(self, event: Event) -> None:
        self._base.event(event)

    def warning(self, message: str) -> None:
        self._base.warning(message)

    def waiting(self, message: str) -> WaitIndicator:
        return self._base.waiting(message)

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self._token is None:
            return
        self._send(
            self._session.send_progress_notification(
                self._token, progress, total, message, related_request_id=self._request_id
            )
        )

    def log(self, level: str, message: str) -> None:
        if level not in LEVELS or LEVELS.index(level) < self._least:
            return
        self._send(
            self._session.send_log_message(
                level,  # type: ignore[arg-type]  # one of LEVELS
                message,
                logger=self._logger,
                related_request_id=self._request_id,
            )
        )

    def _send(self, notification: Coroutine[Any, Any, None]) -> None:
        self._sent.append(asyncio.run_coroutine_threadsafe(notification, self._loop))

    async def flush(self) -> None:
        """Wait until every notification scheduled so far has gone out (or failed)."""
        for sent in self._sent:
            try:
                await asyncio.wrap_future(sent)
            except Exception:  # a client gone away: its result fails too
                pass
