"""``run --batch``: one call per JSON line, up to N in flight, results in input order.

A runner that pipelines by itself (it has ``submit``, returning a Future at once: the Pulsar
runner) gets its calls sent from this thread with N Futures in flight; any other runner gets
N worker threads, each taking the next line and making one blocking ``run`` at a time. (Not
a ThreadPoolExecutor: a task and a Future per line cost a fifth of an HTTP call's CPU.)
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
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
    yield from _threaded(runner, tool, lines, quiet, concurrency, on_event)


class _Ordered:
    """Lines for worker threads, and their results handed out in input order.

    Workers take lines (so the input is read in order, at most ``4 x workers`` ahead of the
    output) and put results; the reader is woken only by the result it waits for.
    """

    def __init__(self, lines: Iterable[str], workers: int) -> None:
        self.source = _numbered(lines)
        self.window = workers * 4
        self.taken = self.emitted = 0
        self.wanted = -1
        self.finished: dict[int, ToolResult] = {}
        self.running = workers
        self.error: BaseException | None = None
        self.changed = threading.Condition()

    def take(self) -> tuple[int, int, str] | None:
        """The next line with its place in the output, or None when the input is done."""
        with self.changed:
            while self.taken - self.emitted >= self.window and not self.error:
                self.changed.wait()
            item = None if self.error else next(self.source, None)
            if item is None:
                return None
            self.taken += 1
            return self.taken - 1, *item

    def put(self, place: int, result: ToolResult) -> None:
        with self.changed:
            self.finished[place] = result
            if place == self.wanted:
                self.changed.notify_all()

    def stopped(self, error: BaseException | None) -> None:
        with self.changed:
            self.running -= 1
            self.error = self.error or error
            self.changed.notify_all()

    def results(self) -> Iterator[ToolResult]:
        while True:
            with self.changed:
                while self.emitted not in self.finished and self.running and not self.error:
                    self.wanted = self.emitted
                    self.changed.wait()
                if self.error:
                    raise self.error
                if self.emitted not in self.finished:
                    return
                result = self.finished.pop(self.emitted)
                self.emitted += 1
                if self.taken - self.emitted == self.window - 1:
                    self.changed.notify_all()  # room for the workers again
            yield result


def _threaded(
    runner: Runner,
    tool: ToolSpec,
    lines: Iterable[str],
    context: RunContext,
    concurrency: int,
    on_event: Callable[[Event], None] | None,
) -> Iterator[ToolResult]:
    ordered = _Ordered(lines, concurrency)

    def work() -> None:
        error: BaseException | None = None
        try:
            while (item := ordered.take()) is not None:
                place, number, line = item
                ordered.put(place, _one(runner, tool, number, line, context, on_event))
        except BaseException as exc:  # a bug in a worker: re-raised in the main thread
            error = exc
        finally:
            ordered.stopped(error)

    for _ in range(concurrency):
        threading.Thread(target=work, name="toolctl-batch", daemon=True).start()
    yield from ordered.results()


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
