"""Running a tool by name: resolve it, pick its runner, and the one execution entry point.

``execute`` is where every call passes (WeKnora's ExecuteTool): it times the call and
reports start and done through ``on_event``, whatever the runtime.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolctl.errors import ToolctlError
from toolctl.registry.index import Registry
from toolctl.runners.base import RunContext, Runner, ToolResult, ToolSpec

Event = dict[str, Any]


def resolve_tool(registry: Registry, name: str, *, allow_staging: bool = False) -> ToolSpec:
    """The tool in force under ``name``, with its service's descriptor if it has one.

    A tool whose ``state`` is not "active" is refused unless ``allow_staging``.
    """
    from toolctl.tool_state import check_runnable

    tool = registry.resolve("tool", name)
    check_runnable(tool.data, allow_staging)
    service = None
    if tool.data.get("service"):
        service = registry.resolve("service", tool.data["service"]).data
    runtime = tool.data.get("runtime")
    if not runtime:
        raise ToolctlError(
            f"tool '{name}' has no runtime: its service is missing", hint="run 'toolctl check'"
        )
    return ToolSpec(
        name=tool.name, runtime=runtime, data=tool.data, service=service, source=Path(tool.file)
    )


def execute(
    runner: Runner,
    tool: ToolSpec,
    arguments: dict[str, Any],
    context: RunContext,
    on_event: Callable[[Event], None] | None = None,
) -> ToolResult:
    """Run one call through ``runner``, reporting start and done (never the arguments)."""
    emit = on_event or (lambda event: None)
    emit({"event": "start", "tool": tool.name, "transport": tool.runtime})
    started = time.perf_counter()
    try:
        result = runner.run(tool, arguments, context)
    except ToolctlError as exc:
        emit(
            {
                "event": "done",
                "tool": tool.name,
                "transport": tool.runtime,
                "success": False,
                "duration_ms": _ms(started),
                "error": type(exc).__name__,
            }
        )
        raise
    emit(
        {
            "event": "done",
            "tool": tool.name,
            "transport": tool.runtime,
            "success": result.success,
            "duration_ms": result.duration_ms,
        }
    )
    return result


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
