"""The ``start`` and ``done`` events every call reports to its sink, and the pipelined
call (``Submitted``) whose ``done`` is reported when its Future settles."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from toolctl.runners.base import Call, Event, ToolResult, ToolSpec

if TYPE_CHECKING:
    from concurrent.futures import Future


def start_event(tool: ToolSpec) -> Event:
    return {"event": "start", "tool": tool.name, "transport": tool.runtime}


def done_event(
    tool: ToolSpec, result: ToolResult | None, started: float, error: BaseException | None = None
) -> Event:
    """The one ``done`` event: how the call ended and how long it took (never arguments)."""
    event: Event = {"event": "done", "tool": tool.name, "transport": tool.runtime}
    if result is not None:
        event.update(success=result.success, duration_ms=result.duration_ms)
    else:
        event.update(success=False, duration_ms=elapsed_ms(started), error=type(error).__name__)
    return event


def elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


class Submitted:
    """A pipelined call on its way: ``finish`` reports how it ended (its done event)."""

    __slots__ = ("call", "future", "started")

    def __init__(self, call: Call, future: Future[ToolResult], started: float) -> None:
        self.call, self.future, self.started = call, future, started

    def finish(self, result: ToolResult | None, error: BaseException | None = None) -> None:
        self.call.sink.event(done_event(self.call.tool, result, self.started, error))
