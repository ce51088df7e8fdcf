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
import contextlib
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from toolctl.runners.base import Event, Sink, WaitIndicator

if TYPE_CHECKING:
    from mcp.server.session import ServerSession

ASK_SECONDS = 600.0
"""How long a forwarded request waits for the client (a person answering a form)."""
ASKED = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}
"""The upstream requests forwarded, and the client capability each needs."""


def _answer_types() -> dict[str, Any]:
    from mcp import types

    return {
        "sampling/createMessage": types.CreateMessageResult,
        "elicitation/create": types.ElicitResult,
        "roots/list": types.ListRootsResult,
    }


class _Answers(dict[str, Any]):
    def __missing__(self, method: str) -> Any:
        self.update(_answer_types())
        return self[method]


ANSWERS = _Answers()


def _related(request_id: Any) -> Any:
    from mcp.shared.message import ServerMessageMetadata

    return ServerMessageMetadata(related_request_id=request_id)


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

    def waiting(self, message: str, delay: float = 0.2) -> WaitIndicator:
        return self._base.waiting(message, delay)

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

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """Put an upstream server's request to this call's client and wait for its answer
        (on the thread the request came in on); None when the client cannot answer it
        (it declared no such capability)."""
        from mcp import types

        from toolctl.mcp.asks import Refused

        capability = ASKED.get(method)
        declared = self._session.client_params
        if capability is None or declared is None:
            return None
        if getattr(declared.capabilities, capability, None) is None:
            return None
        request = types.ServerRequest.model_validate({"method": method, "params": params})
        answer_type = ANSWERS[method]
        sent = asyncio.run_coroutine_threadsafe(
            self._session.send_request(request, answer_type, metadata=_related(self._request_id)),
            self._loop,
        )
        try:
            answer = sent.result(ASK_SECONDS)
        except TimeoutError:
            sent.cancel()
            raise Refused(
                -32001, f"the client did not answer {method} in {ASK_SECONDS:g} s"
            ) from None
        except Exception as exc:
            error = getattr(exc, "error", None)
            code = getattr(error, "code", -32603)
            raise Refused(int(code), str(getattr(error, "message", exc))) from exc
        dumped: dict[str, Any] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    def _send(self, notification: Coroutine[Any, Any, None]) -> None:
        self._sent.append(asyncio.run_coroutine_threadsafe(notification, self._loop))

    async def flush(self) -> None:
        """Wait until every notification scheduled so far has gone out (or failed)."""
        for sent in self._sent:
            with contextlib.suppress(Exception):  # a client gone away: its result fails too
                await asyncio.wrap_future(sent)
