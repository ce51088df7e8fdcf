"""Calls from the servers' event loop: at most N at once, a bounded queue, one log line each.

Both front doors (MCP, REST) come through ``Dispatcher.call``. A call runs on a worker
thread through ``toolctl.calls.Caller`` (resolve, validate, runner, events), runners kept
open between calls; a tool whose runner pipelines (Pulsar) is sent with ``submit`` from the
event loop instead, with no thread. When the awaiting task is cancelled (an MCP
``notifications/cancelled``, a client gone, shutdown) the call is cancelled too, which kills
the processes it started (``toolctl.calls.cancel``). The runner's own timeout is the tool's;
a guard a little later catches a runner that hangs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import anyio

from toolctl.calls import Caller
from toolctl.calls.cancel import Cancel
from toolctl.errors import NotFound, TimedOut, ToolctlError, TransportUnavailable
from toolctl.runners.base import Pipelined, Sink, ToolResult
from toolctl.serve.catalog import Catalog, Selection
from toolctl.settings import Settings

GUARD_SECONDS = 5.0
"""How long past the tool's timeout the guard waits for its runner to give up by itself."""

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
        self._slots = anyio.Semaphore(concurrency)
        self._limiter = anyio.CapacityLimiter(concurrency)
        self._admitted = 0
        self._log = log or (lambda line: None)
        self._sink = _LogSink(self._log)
        self._cancels: set[Cancel] = set()
        self.pipelined: dict[str, bool] = {}
        """Tools whose runner takes calls without a thread (Pulsar): no thread hop for them."""

    @property
    def in_flight(self) -> int:
        return self._admitted

    async def call(self, name: str, arguments: dict[str, Any], *, via: str) -> ToolResult:
        """One call, waiting for a slot; raises ToolctlError as ``Caller.call`` does (NotFound,
        InvalidArguments, TimedOut, TransportUnavailable, Interrupted), or QueueFull."""
        started = time.perf_counter()
        outcome: dict[str, Any] = {"event": "call", "tool": name, "via": via}
        try:
            result = await self._admit(name, arguments)
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

    async def _admit(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if self._admitted >= self.concurrency + self.queue:
            raise QueueFull(
                f"{self._admitted} calls running or queued, the most this server takes",
                hint="retry shortly",
            )
        self._admitted += 1
        try:
            known = name in self.catalog.snapshot.tools  # else look at the disk again
            if not known and not await anyio.to_thread.run_sync(self.catalog.served, name):
                raise NotFound("tool", name, self.catalog.suggest(name))
            async with self._slots:
                return await self._run(name, arguments)
        finally:
            self._admitted -= 1

    async def _run(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        tool = self.catalog.snapshot.tools.get(name, {})
        limit = float(tool.get("timeout") or 60) + GUARD_SECONDS
        if self.pipelined.get(name, True):
            future = self._submit(name, arguments)
            self.pipelined[name] = future is not None
            if future is not None:
                return await _awaited(future, name, limit)
        cancel = Cancel()
        self._cancels.add(cancel)
        try:
            with anyio.fail_after(limit):
                return await anyio.to_thread.run_sync(
                    lambda: self.caller.call(
                        self.catalog.resolve(name), arguments, sink=self._sink, cancel=cancel
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

    def _submit(self, name: str, arguments: dict[str, Any]) -> Future[ToolResult] | None:
        """Send the call without waiting when its runner pipelines (Pulsar); else None."""
        call = self.caller.prepare(self.catalog.resolve(name), arguments, sink=self._sink)
        runner = self.caller.runner(call.tool.runtime, self._sink)
        if not isinstance(runner, Pipelined):
            return None
        return runner.submit(call)

    def cancel_all(self) -> int:
        """Cancel every running call (shutdown past its grace): their processes are killed."""
        running = list(self._cancels)
        for cancel in running:
            cancel.cancel()
        return len(running)

    def close(self) -> None:
        """Close the runners (ending calls still in flight) and reap what calls left."""
        self.caller.close()


def open_dispatcher(
    settings: Settings,
    selection: Selection,
    *,
    concurrency: int,
    queue: int,
    log: LogLine | None = None,
) -> Dispatcher:
    """The catalog of ``selection``, a caller onto its registry, the dispatcher over both."""
    catalog = Catalog(settings, selection)
    return Dispatcher(
        catalog,
        Caller(settings, catalog.registry),
        concurrency=concurrency,
        queue=queue,
        log=log,
    )


async def _awaited(future: Future[ToolResult], name: str, limit: float) -> ToolResult:
    """A pipelined call's result, on the event loop; cancelling drops the call."""
    import asyncio

    try:
        with anyio.fail_after(limit):
            return await asyncio.wrap_future(future)
    except TimeoutError:
        raise TimedOut(f"tool '{name}' ran past its timeout") from None
    finally:
        future.cancel()


class _LogSink(Sink):
    """What calls report, as the server sees it: warnings become log lines; tool output and
    stderr stay in the result (stdout is the protocol's)."""

    def __init__(self, log: LogLine) -> None:
        self._log = log

    def warning(self, message: str) -> None:
        self._log({"event": "warning", "message": message})
