"""``run --batch``: one call per JSON line, up to N in flight, results in input order."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from toolctl import arguments as tool_args
from toolctl.errors import ToolctlError
from toolctl.runners import Event, execute
from toolctl.runners.base import RunContext, Runner, ToolResult, ToolSpec


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
    window: list[Future[ToolResult]] = []
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="toolctl-batch") as pool:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            window.append(pool.submit(_one, runner, tool, number, line, quiet, on_event))
            if len(window) >= concurrency * 2:
                yield window.pop(0).result()
        for future in window:
            yield future.result()


def _one(
    runner: Runner,
    tool: ToolSpec,
    number: int,
    line: str,
    context: RunContext,
    on_event: Callable[[Event], None] | None,
) -> ToolResult:
    try:
        given = json.loads(line)
        if not isinstance(given, dict):
            raise ValueError("not a JSON object")
        arguments = tool_args.build(tool.data["schema"], given, [])
        tool_args.validate(tool.name, tool.data["schema"], arguments)
        return execute(runner, tool, arguments, replace(context), on_event)
    except ValueError as exc:
        return _failed(tool, f"line {number}: not a JSON object of arguments ({exc})")
    except ToolctlError as exc:
        return _failed(tool, f"line {number}: {exc}")


def _failed(tool: ToolSpec, message: str, **extra: Any) -> ToolResult:
    return ToolResult(False, error=message, transport=tool.runtime, **extra)
