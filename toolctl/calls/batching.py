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
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from toolctl.calls.events import elapsed_ms
from toolctl.calls.resolution import build_arguments
from toolctl.errors import Interrupted, InvalidArguments, ToolctlError, TransportLost, interruption
from toolctl.processes.reaper import Reaping
from toolctl.runners.base import Call, Pipelined, Runner, ToolResult
from toolctl.runtimes import STARTS_NOTHING

if TYPE_CHECKING:
    from toolctl.calls.events import Submitted
    from toolctl.records import Origin
    from toolctl.runners.base import ToolSpec
    from toolctl.settings import Settings

Pending: TypeAlias = "Submitted | ToolResult"


class Caller(Protocol):
    """What a batch needs of ``toolctl.calls.caller.Caller`` (which runs batches through
    here, so this module names the methods instead of importing it)."""

    settings: Settings

    def execute(self, call: Call, origin: Origin | None = None) -> ToolResult: ...

    def submit(self, runner: Pipelined, call: Call, origin: Origin | None = None) -> Submitted: ...

    def refused(
        self,
        tool: ToolSpec,
        arguments: Mapping[str, Any] | None,
        error: ToolctlError,
        origin: Origin | None = None,
    ) -> None: ...

    def stop(self, cause: BaseException) -> None: ...

    def stopped_call(self) -> Interrupted | None: ...


class Batch(Iterator[ToolResult]):
    """A batch's results, in input order, as they come; ``stop`` (Ctrl-C, SIGTERM) ends it.

    One result per non-blank line, with a bounded window in flight. ``template`` is the
    call every line makes, but for its arguments. A line that is not a JSON object, or
    whose arguments are invalid, yields a failed result without running anything; the
    batch goes on. If calls failed because the transport was lost under them
    (TransportLost: the broker died), that is raised after the last result (exit 5).
    ``span`` is entered now and left when the batch ends or is closed (the reaping of
    what its calls leave behind).

    A stopping signal that reaches the thread reading the results (raised as
    KeyboardInterrupt, here or in the code printing them, which then calls ``stop``) takes
    no more lines and ends the calls in flight, yet loses nothing: every line already
    taken still gets its result, in order (a call the stop ended fails as interrupted or
    terminated, and is recorded so), and then the batch raises the interruption.
    """

    def __init__(
        self,
        caller: Caller,
        runner: Runner,
        template: Call,
        lines: Iterable[str],
        concurrency: int,
        origin: Origin,
        span: AbstractContextManager[object] | None = None,
    ) -> None:
        self._caller, self._runner = caller, runner
        self._lost: list[TransportLost] = []
        self._stopped: Interrupted | None = None
        self._span = span
        if span is not None:
            span.__enter__()
        self._order: _Order
        if isinstance(runner, Pipelined):
            self._order = _Pipelined(
                caller, runner, template, lines, concurrency, self._lost, origin
            )
        else:
            self._order = _Threaded(caller, template, lines, concurrency, self._lost, origin)

    def __next__(self) -> ToolResult:
        try:
            try:
                result = self._order.next()
            except KeyboardInterrupt as exc:
                self.stop(exc)
                result = self._order.next()
        except BaseException:
            self.close()
            raise
        if result is not None:
            return result
        self.close()
        if self._stopped is not None:
            raise self._stopped
        if self._lost:
            raise self._lost[-1]
        raise StopIteration

    def close(self) -> None:
        """Leave the batch's span (once); a batch left unfinished takes no more lines."""
        self._order.stop()
        span, self._span = self._span, None
        if span is not None:
            span.__exit__(None, None, None)

    def stop(self, cause: BaseException) -> None:
        """Take no more lines and end the calls in flight (``cause``: the KeyboardInterrupt
        of the signal); the results of the lines taken still come."""
        if self._stopped is not None:
            return
        self._stopped = interruption(cause, "interrupted; the batch's calls were stopped")
        self._caller.stop(cause)  # a call that now ends unsuccessfully was stopped
        self._order.stop()
        self._runner.close()  # ends every call in flight


class _Order(Protocol):
    def next(self) -> ToolResult | None: ...

    def stop(self) -> None: ...


class _Threaded:
    """Lines for worker threads, each making one blocking ``run`` at a time, and their
    results handed out in input order.

    Workers take lines (so the input is read in order, at most ``4 x workers`` ahead of the
    output) and put results; the reader is woken only by the result it waits for. A worker
    reads the input without holding the lock the reader waits on, so a stop is never kept
    waiting by a line that has not come (``--batch -`` from a terminal).
    """

    def __init__(
        self,
        caller: Caller,
        template: Call,
        lines: Iterable[str],
        concurrency: int,
        lost: list[TransportLost],
        origin: Origin,
    ) -> None:
        self.source = _numbered(lines)
        self.window = concurrency * 4
        self.taken = self.emitted = 0
        self.wanted = -1
        self.finished: dict[int, ToolResult] = {}
        self.running = concurrency
        self.stopping = False
        self.error: BaseException | None = None
        self.changed = threading.Condition()
        self.reading = threading.Lock()

        def work() -> None:
            error: BaseException | None = None
            try:
                while (item := self.take()) is not None:
                    place, number, line = item
                    self.put(place, _one(caller, template, number, line, lost, origin))
            except BaseException as exc:  # a bug in a worker: re-raised in the main thread
                error = exc
            finally:
                self.worker_ended(error)

        for _ in range(concurrency):
            threading.Thread(target=work, name="toolctl-batch", daemon=True).start()

    def take(self) -> tuple[int, int, str] | None:
        """The next line with its place in the output, or None when the input is done."""
        with self.changed:
            while self.taken - self.emitted >= self.window and not self.halted():
                self.changed.wait()
            if self.halted():
                return None
        with self.reading:
            item = None if self.halted() else next(self.source, None)
            with self.changed:
                if item is None or self.stopping:
                    return None
                self.taken += 1
                return self.taken - 1, *item

    def halted(self) -> bool:
        return self.stopping or self.error is not None

    def put(self, place: int, result: ToolResult) -> None:
        with self.changed:
            self.finished[place] = result
            if place == self.wanted:
                self.changed.notify_all()

    def worker_ended(self, error: BaseException | None) -> None:
        with self.changed:
            self.running -= 1
            self.error = self.error or error
            self.changed.notify_all()

    def stop(self) -> None:
        with self.changed:
            self.stopping = True
            self.changed.notify_all()

    def next(self) -> ToolResult | None:
        with self.changed:
            while self.emitted not in self.finished and self.pending():
                self.wanted = self.emitted
                self.changed.wait()
            if self.error:
                raise self.error
            if self.emitted not in self.finished:
                return None
            result = self.finished.pop(self.emitted)
            self.emitted += 1
            if self.taken - self.emitted == self.window - 1:
                self.changed.notify_all()  # room for the workers again
            return result

    def pending(self) -> bool:
        """Whether a result may still come: a line taken is running, or (unless stopped)
        a worker may take another."""
        if self.error is not None:
            return False
        return self.emitted < self.taken or (self.running > 0 and not self.stopping)


class _Pipelined:
    """Calls sent from the reading thread through ``Caller.submit`` (the one pipelined
    path, the servers' too), ``concurrency`` of them in flight."""

    def __init__(
        self,
        caller: Caller,
        runner: Pipelined,
        template: Call,
        lines: Iterable[str],
        concurrency: int,
        lost: list[TransportLost],
        origin: Origin,
    ) -> None:
        self.caller, self.runner, self.template = caller, runner, template
        self.source = _numbered(lines)
        self.concurrency, self.lost, self.origin = concurrency, lost, origin
        self.window: deque[tuple[int, Pending]] = deque()
        self.stopping = False

    def next(self) -> ToolResult | None:
        while not self.stopping and len(self.window) < self.concurrency:
            item = next(self.source, None)
            if item is None:
                self.stopping = True  # the input is done
                break
            self.window.append((item[0], self.send(*item)))
        if not self.window:
            return None
        number, pending = self.window[0]
        result = _settle(self.template, number, pending, self.lost, self.caller.stopped_call())
        self.window.popleft()
        return result

    def send(self, number: int, line: str) -> Pending:
        call = _arguments(self.template, number, line, self.caller, self.origin)
        if isinstance(call, ToolResult):
            return call
        try:
            return self.caller.submit(self.runner, call, self.origin)
        except ToolctlError as exc:
            return _failed(self.template, f"line {number}: {exc}", exc, self.lost)

    def stop(self) -> None:
        self.stopping = True


def _numbered(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    return ((n, line) for n, line in enumerate(lines, start=1) if line.strip())


def _arguments(
    template: Call, number: int, line: str, caller: Caller, origin: Origin
) -> Call | ToolResult:
    """The line's call, arguments validated, or the failed result that stands for the line
    (invalid arguments are recorded as a refused call; a line that is not JSON is not)."""
    from toolctl.arguments import MAX_DEPTH, DuplicateKey, json_problem, unique_keys

    if not line.isascii():
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            return _failed(template, f"line {number}: not UTF-8 text")
    try:
        given = json.loads(line, object_pairs_hook=unique_keys)
        if not isinstance(given, dict):
            raise ValueError("not a JSON object")
    except RecursionError:
        return _failed(template, f"line {number}: nests deeper than {MAX_DEPTH} levels")
    except DuplicateKey as exc:
        return _failed(template, f"line {number}: gives {exc} twice")
    except ValueError as exc:
        why = json_problem(exc)
        return _failed(template, f"line {number}: not a JSON object of arguments ({why})")
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
    stopped = caller.stopped_call()
    if stopped is not None:  # taken as the stop came: never begun, so not recorded
        return _failed(template, f"line {number}: {stopped.word} before the call began", stopped)
    try:
        if call.tool.runtime in _NO_PROCESSES:  # nothing it could leave: no ~0.25 ms a line
            return caller.execute(call, origin)
        with Reaping(caller.settings):  # what this line leaves is killed as it ends
            return caller.execute(call, origin)
    except ToolctlError as exc:
        return _failed(template, f"line {number}: {exc}", exc, lost)


_NO_PROCESSES = STARTS_NOTHING | {"mcp"}
"""Runtimes whose lines start no process of their own (a batch's MCP server session is
kept apart): a line of theirs needs no reaping of its own (``_one``)."""


def _settle(
    template: Call,
    number: int,
    pending: Pending,
    lost: list[TransportLost],
    stopped: Interrupted | None,
) -> ToolResult:
    """The result of a pending call (``stopped``: the error of a call the batch's stop
    ended); a pipelined one also reports its end."""
    if isinstance(pending, ToolResult):
        return pending
    try:
        result = pending.future.result()
    except ToolctlError as exc:
        error = exc if stopped is None else stopped
        pending.finish(None, error)  # the done event a single call's error ends with
        failed = _failed(template, f"line {number}: {error}", error, lost)
        return failed._replace(duration_ms=failed.duration_ms or elapsed_ms(pending.started))
    except BaseException as exc:
        pending.finish(None, exc)
        raise
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
        output=str(getattr(cause, "output", "") or "").rstrip("\n"),  # printed before it ended
        error=message,
        exit_code=error.exit_code,
        duration_ms=getattr(cause, "duration_ms", 0.0),
        transport=template.tool.runtime,
        error_code=error.error_code,
    )
