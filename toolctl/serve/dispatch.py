"""Calls from the servers' event loop: at most N at once, a bounded queue, one log line each.

Both front doors (MCP, REST) come through ``Dispatcher.call``. A call runs on a worker
thread through ``toolctl.calls.Caller`` (resolve, validate, runner, events), runners kept
open between calls; a tool whose runner pipelines (Pulsar) is sent with ``Caller.submit``
from the event loop instead, with no thread (the path ``run --batch`` takes, with the same
start and done events). When the awaiting task is cancelled (an MCP
``notifications/cancelled``, a client gone, shutdown) the call is cancelled too, which kills
the processes it started (``toolctl.calls.cancel``). The runner's own timeout is the tool's;
a guard a little later catches a runner that hangs.

Every call is recorded (``toolctl.records``): its span continues the client's
``traceparent``, its history row names the door (``serve`` for REST, ``mcp``) and the MCP
session, and the server's Prometheus metrics count it (``Dispatcher.metrics``, /metrics).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import suppress
from typing import Any

import anyio

from toolctl.arguments import DEFAULT_TIMEOUT, is_text, printable_text, tool_timeout
from toolctl.calls.caller import Caller
from toolctl.calls.cancel import Cancel
from toolctl.calls.events import Submitted
from toolctl.errors import (
    InvalidArguments,
    TimedOut,
    ToolctlError,
    TransportUnavailable,
)
from toolctl.records import Origin
from toolctl.records.metrics import Metrics
from toolctl.records.recorder import Recorder
from toolctl.runners.base import Sink, ToolResult
from toolctl.serve.catalog import Catalog, Selection
from toolctl.settings import Settings

GUARD_SECONDS = 5.0
"""How long past the tool's timeout the guard waits for its runner to give up by itself."""
DRAIN_SECONDS = 10.0
"""How long a stopping server waits for its cancelled calls to clean up (a container to be
removed) before it reaps what is left and ends."""

LogLine = Callable[[dict[str, Any]], None]


class QueueFull(TransportUnavailable):
    """Every call slot is busy and the queue is full (HTTP 503)."""


class Dispatcher:
    """Runs calls for the event loop; ``concurrency`` at once, ``queue`` more waiting."""

    def __init__(
        self,
        catalog: Catalog,
        caller: Caller,
        *,
        concurrency: int,
        queue: int,
        log: LogLine | None = None,
    ) -> None:
        self.catalog = catalog
        self.caller = caller
        self.concurrency = concurrency
        self.queue = queue
        # fast_acquire: a free slot is taken without a trip round the event loop
        self._slots = anyio.Semaphore(concurrency, fast_acquire=True)
        self._limiter = anyio.CapacityLimiter(concurrency)
        self._admitted = 0
        self._log = log or (lambda line: None)
        self._sink = _LogSink(self._log)
        self._cancels: set[Cancel] = set()
        self.pipelined: dict[str, bool] = {}
        """Tools whose runner takes calls without a thread (Pulsar): no thread hop for them."""
        self._results = _Results()

    def log_line(self, line: dict[str, Any]) -> None:
        """One JSON line in the server's log (a disconnect, a warning)."""
        self._log(line)

    @property
    def log_sink(self) -> Sink:
        """Where calls report by default: warnings become the server's log lines."""
        return self._sink

    @property
    def in_flight(self) -> int:
        return self._admitted

    @property
    def metrics(self) -> Metrics | None:
        return self.caller.recorder.metrics

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        via: str,
        origin: Origin | None = None,
        user: str | None = None,
        sink: Sink | None = None,
    ) -> ToolResult:
        """One call, waiting for a slot; raises ToolctlError as ``Caller.call`` does (NotFound,
        InvalidArguments, TimedOut, TransportUnavailable, Interrupted), or QueueFull.
        ``origin`` says who called (default: caller "serve"); ``sink`` takes what the call
        reports while it runs (progress, log messages: an MCP door forwards them), else
        the server's log does."""
        started = time.perf_counter()
        outcome: dict[str, Any] = {"event": "call", "tool": printable_text(name), "via": via}
        try:
            if not is_text(name):
                raise InvalidArguments(
                    f"the tool name {printable_text(name)} is not valid Unicode (a lone surrogate)"
                )
            result = await self._admit(
                name, arguments, origin or self.caller.origin, user, sink or self._sink
            )
        except ToolctlError as exc:
            outcome.update(status="error", error=type(exc).__name__, exit_code=exc.exit_code)
            raise
        except anyio.get_cancelled_exc_class():
            outcome.update(status="cancelled")
            raise
        except Exception as exc:
            outcome.update(status="error", error=type(exc).__name__, exit_code=70)
            raise
        else:
            outcome.update(status="ok" if result.success else "failed", transport=result.transport)
            return result
        finally:
            outcome["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
            self._log(outcome)

    async def _admit(
        self, name: str, arguments: dict[str, Any], origin: Origin, user: str | None, sink: Sink
    ) -> ToolResult:
        if self._admitted >= self.concurrency + self.queue:
            if self.metrics is not None:
                self.metrics.shed.inc()
            raise QueueFull(
                f"{self._admitted} calls running or queued, the most this server takes",
                hint="retry shortly",
            )
        self._admitted += 1
        try:
            name = self.catalog.canonical(name)  # a function name OpenAI export gave it
            known = name in self.catalog.snapshot.tools  # else look at the disk again
            if not known and not await anyio.to_thread.run_sync(self.catalog.served, name):
                raise await anyio.to_thread.run_sync(self.catalog.not_served, name)
            async with self._slots:
                return await self._run(name, arguments, origin, user, sink)
        finally:
            self._admitted -= 1

    async def _run(
        self, name: str, arguments: dict[str, Any], origin: Origin, user: str | None, sink: Sink
    ) -> ToolResult:
        stopped = self.caller.stopped_call()
        if stopped is not None:  # a call still queued when the server was signalled to stop
            raise type(stopped)(f"{stopped.word}: the server is stopping; the call never began")
        tool = self.catalog.snapshot.tools.get(name, {})
        default = self.caller.settings.default_timeout
        limit = float(tool_timeout(tool, default) or DEFAULT_TIMEOUT) + GUARD_SECONDS
        if self.pipelined.get(name, True):
            submitted = self._submit(name, arguments, origin, user, sink)
            self.pipelined[name] = submitted is not None
            if submitted is not None:
                return await self._results.wait(submitted, name, limit)
        cancel = Cancel()
        self._cancels.add(cancel)
        try:
            with anyio.fail_after(limit):
                return await anyio.to_thread.run_sync(
                    lambda: self.caller.call(
                        self.catalog.resolve(name),
                        arguments,
                        user=user,
                        sink=sink,
                        cancel=cancel,
                        origin=origin,
                    ),
                    abandon_on_cancel=True,
                    limiter=self._limiter,
                )
        except TimeoutError:
            cancel.cancel()
            raise TimedOut(f"tool '{name}' ran past its timeout and was killed") from None
        except BaseException:
            cancel.cancel()
            raise
        finally:
            self._cancels.discard(cancel)

    def _submit(
        self, name: str, arguments: dict[str, Any], origin: Origin, user: str | None, sink: Sink
    ) -> Submitted | None:
        """Send the call without waiting when its runner pipelines (Pulsar); else None."""
        tool = self.catalog.resolve(name)
        runner = self.caller.pipeline(tool.runtime, self._sink)
        if runner is None:
            return None
        try:
            prepared = self.caller.prepare(tool, arguments, user=user, sink=sink)
        except InvalidArguments as exc:
            self.caller.refused(tool, arguments, exc, origin)
            raise
        return self.caller.submit(runner, prepared, origin)

    def cancel_all(self) -> int:
        """Cancel every running call (shutdown past its grace): their processes are killed."""
        running = list(self._cancels)
        for cancel in running:
            cancel.cancel()
        return len(running)

    def close(self, drain: float = DRAIN_SECONDS) -> None:
        """Cancel what still runs, wait up to ``drain`` seconds for it to clean up, close the
        runners, reap whatever the calls left (a tool's ``setsid`` grandchildren) and write
        the calls' records still waiting."""
        self.cancel_all()
        self.catalog.close()
        self.caller.close(drain=drain)
        from toolctl.records import write_all

        write_all(lambda message: self._log({"event": "warning", "message": message}))


SERVING_DEPTH = "TOOLCTL_SERVING_DEPTH"
"""How many toolctl servers a server runs under: each gives its tools' processes one more."""
MAX_SERVING_DEPTH = 3
"""Servers nested deeper are refused: a registry holding toolctl's own MCP server (`mcp
install`'s entry, imported back from the client's config) serves itself, each server
starting another, without end and past the client that started the first."""


def _nested(settings: Settings) -> Settings:
    """``settings`` for a server ``SERVING_DEPTH`` deep; RegistryError past the bound."""
    from toolctl.errors import RegistryError

    given = settings.environ.get(SERVING_DEPTH, "0")
    depth = int(given) if given.isdigit() and len(given) < 4 else 0
    if depth >= MAX_SERVING_DEPTH:
        raise RegistryError(
            f"toolctl is serving under {depth} servers of its own: a registry that holds "
            "toolctl's MCP server (`toolctl mcp serve`) serves itself",
            hint="unregister the service that runs `toolctl mcp serve` (an entry `toolctl "
            "mcp install` wrote, imported back with `import mcp-config`)",
        )
    return settings._replace(environ={**settings.environ, SERVING_DEPTH: str(depth + 1)})


def open_dispatcher(
    settings: Settings,
    selection: Selection,
    *,
    concurrency: int,
    queue: int,
    log: LogLine | None = None,
    recorder: Recorder | None = None,
) -> Dispatcher:
    """The catalog of ``selection``, a caller onto its registry, the dispatcher over both;
    the calls recorded by ``recorder`` (default: one with the server's metrics)."""
    settings = _nested(settings)

    def warn(message: str) -> None:
        if log is not None:
            log({"event": "warning", "message": message})

    catalog = Catalog(settings, selection, warn)

    if recorder is None:
        recorder = Recorder(settings, metrics=Metrics(), warn=warn)
    return Dispatcher(
        catalog,
        Caller(settings, catalog.registry, recorder=recorder, origin=Origin("serve")),
        concurrency=concurrency,
        queue=queue,
        log=log,
    )


class _Results:
    """Pipelined calls' Futures, awaited on the event loop.

    The Pulsar dispatcher thread completes the Futures. Each completion is queued and the
    loop is woken once for all that are queued by then (``asyncio.wrap_future`` wakes it
    once per call: a self-pipe write and read each, and a GIL hand-over with the thread).
    """

    def __init__(self) -> None:
        self._done: deque[tuple[Future[ToolResult], asyncio.Future[ToolResult]]] = deque()
        self._woken = False

    async def wait(self, submitted: Submitted, name: str, limit: float) -> ToolResult:
        """The call's result, its end reported; TimedOut past ``limit``; cancelling drops it."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[ToolResult] = loop.create_future()
        guard = loop.call_later(limit, _expire, waiter)
        future = submitted.future
        future.add_done_callback(lambda done: self._completed(loop, done, waiter))
        try:
            result = await waiter
        except TimeoutError:
            error = TimedOut(f"tool '{name}' ran past its timeout")
            submitted.finish(None, error)
            raise error from None
        except BaseException as exc:
            submitted.finish(None, exc)
            raise
        finally:
            guard.cancel()
            future.cancel()
        submitted.finish(result)
        return result

    def _completed(
        self,
        loop: asyncio.AbstractEventLoop,
        future: Future[ToolResult],
        waiter: asyncio.Future[ToolResult],
    ) -> None:
        """On the thread that completed ``future``: queue it; wake the loop unless woken."""
        self._done.append((future, waiter))
        if not self._woken:
            self._woken = True
            with suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(self._settle)

    def _settle(self) -> None:
        """On the loop: hand every queued result to its waiter."""
        self._woken = False
        while self._done:
            future, waiter = self._done.popleft()
            if waiter.done() or future.cancelled():
                continue
            error = future.exception()
            if error is not None:
                waiter.set_exception(error)
            else:
                waiter.set_result(future.result())


def _expire(waiter: asyncio.Future[ToolResult]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class _LogSink(Sink):
    """What calls report, as the server sees it: warnings become log lines; tool output and
    stderr stay in the result (stdout is the protocol's)."""

    reports = False

    def __init__(self, log: LogLine) -> None:
        self._log = log

    def warning(self, message: str) -> None:
        self._log({"event": "warning", "message": message})
