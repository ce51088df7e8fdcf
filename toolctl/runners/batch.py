"""``run --batch``: one call per JSON line, up to N in flight, results in input order.

A runner that pipelines by itself (it has ``submit``, returning a Future at once: the Pulsar
runner) gets its calls sent from this thread with N Futures in flight; any other runner gets
a pool of N threads, each making one blocking ``run`` at a time.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from toolctl import arguments as tool_args
from toolctl.errors import ToolctlError
from toolctl.runners import Event, execute
from toolctl.runners.base import Pipelined, RunContext, Runner, ToolResult, ToolSpec

Pending = Future[ToolResult] | ToolResult


def run_batch(
    runner: Runner,
    tool: ToolSpec,
    lines: Iterable[str],
    context: RunContext,
    *,
    concurrency: int = 1,
    on_event: Callable[[Event], None] | None = None,
) -> Iterator[ToolResult]:
    """Yield one result per non-blank line, in input order, with a bounded window in flight.

    A line that is not a JSON object, or whose arguments are invalid, yields a failed
    result without running anything; the batch goes on.
    """
    quiet = replace(context, stream=None, forward_stderr=False, stderr=None, wait=None)
    if isinstance(runner, Pipelined):
        yield from _pipelined(runner, tool, lines, quiet, concurrency, on_event)
        return
    window: deque[tuple[int, Pending]] = deque()
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="toolctl-batch") as pool:
        for number, line in _numbered(lines):
            window.append((number, pool.submit(_one, runner, tool, number, line, quiet, on_event)))
            if len(window) >= concurrency * 2:
                yield _settle(tool, *window.popleft(), None)
        while window:
            yield _settle(tool, *window.popleft(), None)


def _pipelined(
    runner: Pipelined,
    tool: ToolSpec,
    lines: Iterable[str],
    context: RunContext,
    concurrency: int,
    on_event: Callable[[Event], None] | None,
) -> Iterator[ToolResult]:
    emit = on_event or (lambda event: None)
    window: deque[tuple[int, Pending]] = deque()
    for number, line in _numbered(lines):
        arguments = _arguments(tool, number, line)
        if isinstance(arguments, ToolResult):
            window.append((number, arguments))
        else:
            emit({"event": "start", "tool": tool.name, "transport": tool.runtime})
            try:
                window.append((number, runner.submit(tool, arguments, context)))
            except ToolctlError as exc:
                window.append((number, _failed(tool, f"line {number}: {exc}")))
        if len(window) >= concurrency:
            yield _settle(tool, *window.popleft(), on_event)
    while window:
        yield _settle(tool, *window.popleft(), on_event)


def _numbered(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    return ((n, line) for n, line in enumerate(lines, start=1) if line.strip())


def _arguments(tool: ToolSpec, number: int, line: str) -> dict[str, Any] | ToolResult:
    """A line's validated arguments, or the failed result that stands for the line."""
    try:
        given = json.loads(line)
        if not isinstance(given, dict):
            raise ValueError("not a JSON object")
        arguments = tool_args.build(tool.data["schema"], given, [])
        tool_args.validate(tool.name, tool.data["schema"], arguments)
        return arguments
    except ValueError as exc:
        return _failed(tool, f"line {number}: not a JSON object of arguments ({exc})")
    except ToolctlError as exc:
        return _failed(tool, f"line {number}: {exc}")


def _one(
    runner: Runner,
    tool: ToolSpec,
    number: int,
    line: str,
    context: RunContext,
    on_event: Callable[[Event], None] | None,
) -> ToolResult:
    arguments = _arguments(tool, number, line)
    if isinstance(arguments, ToolResult):
        return arguments
    try:
        return execute(runner, tool, arguments, replace(context), on_event)
    except ToolctlError as exc:
        return _failed(tool, f"line {number}: {exc}")


def _settle(
    tool: ToolSpec, number: int, pending: Pending, on_event: Callable[[Event], None] | None
) -> ToolResult:
    """The result of a pending call; a Future of a pipelined call also reports its end."""
    if isinstance(pending, ToolResult):
        return pending
    try:
        result = pending.result()
    except ToolctlError as exc:
        result = _failed(tool, f"line {number}: {exc}")
    if on_event:
        on_event(
            {
                "event": "done",
                "tool": tool.name,
                "transport": tool.runtime,
                "success": result.success,
                "duration_ms": result.duration_ms,
            }
        )
    return result


def _failed(tool: ToolSpec, message: str) -> ToolResult:
    return ToolResult(False, error=message, transport=tool.runtime)
