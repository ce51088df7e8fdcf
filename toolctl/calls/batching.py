"""Batches of calls (``run --batch``): one call per JSON line, up to N in flight, in order.

A runner that pipelines by itself (it has ``submit``, returning a Future at once: the Pulsar
runner) gets its calls sent from this thread with N Futures in flight; any other runner gets
N worker threads, each taking the next line and making one blocking ``run`` at a time. (Not
a ThreadPoolExecutor: a task and a Future per line cost a fifth of an HTTP call's CPU.)
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from toolctl.calls.resolution import build_arguments
from toolctl.errors import InvalidArguments, ToolctlError, TransportLost
from toolctl.runners.base import Call, Pipelined, Runner, ToolResult

if TYPE_CHECKING:
    from toolctl.calls.events import Submitted
    from toolctl.records import Origin
    from toolctl.runners.base import ToolSpec

Pending: TypeAlias = "Submitted | ToolResult"


class Caller(Protocol):
    """What a batch needs of ``toolctl.calls.caller.Caller`` (which runs batches through
    here, so this module names the three methods instead of importing it)."""

    def execute(self, call: Call, origin: Origin | None = None) -> ToolResult: ...

    def submit(self, runner: Pipelined, call: Call, origin: Origin | None = None) -> Submitted: ...

    def refused(
        self,
        tool: ToolSpec,
        arguments: Mapping[str, Any] | None,
        error: ToolctlError,
        origin: Origin | None = None,
    ) -> None: ...


def run_batch(
    caller: Caller,
    runner: Runner,
    template: Call,
    lines: Iterable[str],
    concurrency: int,
    origin: Origin,
) -> Iterator[ToolResult]:
    """Yield one result per non-blank line, in input order, with a bounded window in flight.

    ``template`` is the call every line makes, but for its arguments. A line that is not
    a JSON object, or whose arguments are invalid, yields a failed result without running
    anything; the batch goes on. If calls failed because the transport was lost under them
    (TransportLost: the broker died), that is raised after the last result (exit 5).
    """
    lost: list[TransportLost] = []
    if isinstance(runner, Pipelined):
        yield from _pipelined(caller, runner, template, lines, concurrency, lost, origin)
    else:
        yield from _threaded(caller, template, lines, concurrency, lost, origin)
    if lost:
        raise lost[-1]


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
    caller: Caller,
    template: Call,
    lines: Iterable[str],
    concurrency: int,
    lost: list[TransportLost],
    origin: Origin,
) -> Iterator[ToolResult]:
    ordered = _Ordered(lines, concurrency)

    def work() -> None:
        error: BaseException | None = None
        try:
            while (item := ordered.take()) is not None:
                place, number, line = item
                ordered.put(place, _one(caller, template, number, line, lost, origin))
        except BaseException as exc:  # a bug in a worker: re-raised in the main thread
            error = exc
        finally:
            ordered.stopped(error)

    for _ in range(concurrency):
        threading.Thread(target=work, name="toolctl-batch", daemon=True).start()
    yield from ordered.results()


def _pipelined(
    caller: Caller,
    runner: Pipelined,
    template: Call,
    lines: Iterable[str],
    concurrency: int,
    lost: list[TransportLost],
    origin: Origin,
) -> Iterator[ToolResult]:
    """Calls sent from this thread through ``Caller.submit`` (the one pipelined path, the
    servers' too), ``concurrency`` of them in flight."""
    window: deque[tuple[int, Pending]] = deque()
    for number, line in _numbered(lines):
        call = _arguments(template, number, line, caller, origin)
        if isinstance(call, ToolResult):
            window.append((number, call))
        else:
            try:
                window.append((number, caller.submit(runner, call, origin)))
            except ToolctlError as exc:
                window.append((number, _failed(template, f"line {number}: {exc}", exc, lost)))
        if len(window) >= concurrency:
            yield _settle(template, *window.popleft(), lost)
    while window:
        yield _settle(template, *window.popleft(), lost)


def _numbered(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    return ((n, line) for n, line in enumerate(lines, start=1) if line.strip())


def _arguments(
    template: Call, number: int, line: str, caller: Caller, origin: Origin
) -> Call | ToolResult:
    """The line's call, arguments validated, or the failed result that stands for the line
    (invalid arguments are recorded as a refused call; a line that is not JSON is not)."""
    from toolctl.arguments import MAX_DEPTH

    if not line.isascii():
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            return _failed(template, f"line {number}: not UTF-8 text")
    try:
        given = json.loads(line)
        if not isinstance(given, dict):
            raise ValueError("not a JSON object")
    except RecursionError:
        return _failed(template, f"line {number}: nests deeper than {MAX_DEPTH} levels")
    except ValueError as exc:
        return _failed(template, f"line {number}: not a JSON object of arguments ({exc})")
    try:
        return template._replace(arguments=build_arguments(template.tool, given))
    except RecursionError:
        return _failed(template, f"line {number}: nests deeper than {MAX_DEPTH} levels")
    except ValueError as exc:
        return _failed(template, f"line {number}: not a JSON object of arguments ({exc})")
    except InvalidArguments as exc:
        caller.refused(template.tool, given, exc, origin)
        return _failed(template, f"line {number}: {exc}", exc)
    except ToolctlError as exc:
        return _failed(template, f"line {number}: {exc}", exc)


def _one(
    caller: Caller,
    template: Call,
    number: int,
    line: str,
    lost: list[TransportLost],
    origin: Origin,
) -> ToolResult:
    call = _arguments(template, number, line, caller, origin)
    if isinstance(call, ToolResult):
        return call
    try:
        return caller.execute(call, origin)
    except ToolctlError as exc:
        return _failed(template, f"line {number}: {exc}", exc, lost)


def _settle(template: Call, number: int, pending: Pending, lost: list[TransportLost]) -> ToolResult:
    """The result of a pending call; a pipelined one also reports its end."""
    if isinstance(pending, ToolResult):
        return pending
    try:
        result = pending.future.result()
    except ToolctlError as exc:
        result = _failed(template, f"line {number}: {exc}", exc, lost)
    pending.finish(result)
    return result


def _failed(
    template: Call,
    message: str,
    cause: ToolctlError | None = None,
    lost: list[TransportLost] | None = None,
) -> ToolResult:
    if isinstance(cause, TransportLost) and lost is not None:
        lost.append(cause)  # the batch ends with it (exit 5) once every line has its result
    error = cause if cause is not None else InvalidArguments(message)
    return ToolResult(
        False,
        error=message,
        exit_code=error.exit_code,
        transport=template.tool.runtime,
        error_code=error.error_code,
    )
