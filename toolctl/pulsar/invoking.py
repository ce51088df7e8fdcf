"""A handler's answer as text or text chunks, whether it is sync, async or an async
generator: coroutines run on one event loop thread, each with its request's reporter."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future
from typing import Any

from toolctl.pulsar.hosting import Handler
from toolctl.pulsar.progress import REPORTER, ProgressReporter


class Invoker:
    """Calls handlers from worker threads; ``close`` stops its event loop, if one started."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_lock = threading.Lock()

    def invoke(
        self, handler: Handler, config: dict[str, Any], arguments: dict[str, Any], user: str
    ) -> Any:
        """The handler's answer as text, or as an iterator of text chunks."""
        result = handler(config, arguments, user)
        if inspect.isawaitable(result):
            result = self._await(result)
        if inspect.isasyncgen(result):
            return (_text(chunk) for chunk in self._iterate(result))
        if isinstance(result, Iterator):
            return (_text(chunk) for chunk in result)
        return _text(result)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)

    def _await(self, awaitable: Any) -> Any:
        # the handler's coroutine runs on the loop's thread: it reports to this request
        reporter = REPORTER.get()
        future: Future[Any] = asyncio.run_coroutine_threadsafe(
            _wrap(awaitable, reporter), self._event_loop()
        )
        return future.result()

    def _iterate(self, stream: AsyncIterator[Any]) -> Iterator[Any]:
        loop = self._event_loop()
        reporter = REPORTER.get()
        while True:
            try:
                yield asyncio.run_coroutine_threadsafe(_next(stream, reporter), loop).result()
            except StopAsyncIteration:
                return

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        """One event loop, in its own thread, for every async handler call."""
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="toolctl-async", daemon=True).start()
                self._loop = loop
            return self._loop


async def _wrap(awaitable: Any, reporter: ProgressReporter | None = None) -> Any:
    REPORTER.set(reporter)  # this task's own context
    return await awaitable


async def _next(stream: AsyncIterator[Any], reporter: ProgressReporter | None = None) -> Any:
    REPORTER.set(reporter)
    return await stream.__anext__()


def _text(value: Any) -> str:
    """A handler's answer as the response string: text as is, anything else as JSON."""
    import json

    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "" if value is None else json.dumps(value)
