"""A tool declaring ``output = "mcp"``: its answer read as an MCP ``tools/call`` result."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from toolctl.mcp.results import map_result
from toolctl.runners.base import ToolResult

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future


def declared_content(result: ToolResult) -> ToolResult:
    """The result of a tool declaring ``output = "mcp"``: its JSON answer is a list of MCP
    content blocks, or a whole ``tools/call`` result (``content``, ``structuredContent``,
    ``isError``). It is kept as ``mcp`` for the MCP doors, and read as an MCP server's
    result is for everyone else; any other answer is left as it was."""
    answer = result.data
    if isinstance(answer, list):
        answer = {"content": answer}
    if not (
        result.success
        and isinstance(answer, dict)
        and isinstance(answer.get("content"), list)
        and all(
            isinstance(item, dict) and isinstance(item.get("type"), str)
            for item in answer["content"]
        )
    ):
        return result
    mapped = map_result(answer)
    error = (mapped.output or "the tool reported an error") if mapped.is_error else None
    return result._replace(
        success=not mapped.is_error,
        output=mapped.output,
        data=mapped.data,
        error=error,
        mcp=answer,
    )


def declared_future(sent: Future[ToolResult]) -> Future[ToolResult]:
    """A Future of ``sent``'s result read as a tool declaring ``output = "mcp"`` (its
    content blocks kept for the MCP doors); cancelling it cancels ``sent``."""
    return mapped_future(sent, declared_content)


def mapped_future(
    sent: Future[ToolResult], read: Callable[[ToolResult], ToolResult]
) -> Future[ToolResult]:
    """A Future of ``read(result)`` once ``sent`` settles (its error as it is); cancelling
    it cancels ``sent``."""
    from concurrent.futures import Future, InvalidStateError

    mapped: Future[ToolResult] = Future()

    def settle(done: Future[ToolResult]) -> None:
        with contextlib.suppress(InvalidStateError):  # cancelled meanwhile
            if done.cancelled():
                mapped.cancel()
            elif (error := done.exception()) is not None:
                mapped.set_exception(error)
            else:
                mapped.set_result(read(done.result()))

    def forward(done: Future[ToolResult]) -> None:
        if done.cancelled():
            sent.cancel()

    sent.add_done_callback(settle)
    mapped.add_done_callback(forward)
    return mapped
