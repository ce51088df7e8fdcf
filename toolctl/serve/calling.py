"""How the servers call a tool by name: the one adapter onto the call path.

Until ``toolctl.calls`` exists this is built on what the CLI's ``run`` uses (resolve,
build + validate the arguments, the runtime's runner, ``execute`` with its start/done
events). A server keeps one runner per runtime open across calls, so a Pulsar or HTTP
tool reuses its connection. Calls are blocking and safe from many threads at once.

Cancelling a call kills the processes it started: every runner that starts a child does
so from the calling thread, in a session of its own, so the children of that thread
(``/proc/self/task/TID/children``) are exactly the call's process groups.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

from toolctl import arguments as tool_args
from toolctl.errors import Interrupted, ToolctlError
from toolctl.runners import Event, execute
from toolctl.runners.base import (
    Pipelined,
    RunContext,
    Runner,
    ToolResult,
    ToolSpec,
    load_runner,
)
from toolctl.settings import Settings


class Cancel:
    """A call's cancellation: ``cancel()`` marks it and kills the processes it started."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._thread: int | None = None
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            if self._thread is not None:
                kill_children(self._thread)

    def _enter(self) -> None:
        with self._lock:
            if self._event.is_set():
                raise Interrupted("cancelled before it started")
            self._thread = threading.get_native_id()

    def _leave(self) -> None:
        with self._lock:
            self._thread = None


def kill_children(thread: int) -> None:
    """SIGKILL the process group of every child the thread ``thread`` started."""
    try:
        with open(f"/proc/self/task/{thread}/children") as handle:
            children = [int(pid) for pid in handle.read().split()]
    except (OSError, ValueError):
        return
    for pid in children:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


class CallPath:
    """Tools called by name (``resolve`` finds the one in force), one runner per runtime
    kept open."""

    def __init__(self, settings: Settings, resolve: Callable[[str], ToolSpec]) -> None:
        self.settings = settings
        self.resolve = resolve
        self._runners: dict[str, Runner] = {}
        self._lock = threading.Lock()

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        cancel: Cancel | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> ToolResult:
        """Resolve, validate and run one call; raises ToolctlError (NotFound, InvalidArguments,
        TimedOut, TransportUnavailable, Interrupted) for what is not the tool's own failure."""
        spec, built, runner, context = self.prepare(name, arguments)
        if cancel is None:
            return execute(runner, spec, built, context, on_event)
        cancel._enter()
        try:
            result = execute(runner, spec, built, context, on_event)
        except ToolctlError:
            if cancel.cancelled:
                raise Interrupted("cancelled; the tool's processes were killed") from None
            raise
        finally:
            cancel._leave()
        if cancel.cancelled:
            raise Interrupted("cancelled; the tool's processes were killed")
        return result

    def prepare(
        self, name: str, arguments: Mapping[str, Any]
    ) -> tuple[ToolSpec, dict[str, Any], Runner, RunContext]:
        """Resolve and validate (InvalidArguments before anything runs), pick the runner."""
        spec = self.resolve(name)
        schema = spec.data["schema"]
        built = tool_args.build(schema, arguments, ())
        tool_args.validate(spec.name, schema, built)
        context = RunContext(
            self.settings, float(spec.data["timeout"]), self.settings.user, forward_stderr=False
        )
        return spec, built, self._runner(spec.runtime), context

    def submit(self, name: str, arguments: Mapping[str, Any]) -> Future[ToolResult] | None:
        """Send the call without waiting when its runner pipelines (Pulsar); else None."""
        spec, built, runner, context = self.prepare(name, arguments)
        if not isinstance(runner, Pipelined):
            return None
        return runner.submit(spec, built, context)

    def _runner(self, runtime: str) -> Runner:
        with self._lock:
            runner = self._runners.get(runtime)
            if runner is None:
                runner = self._runners[runtime] = load_runner(runtime, self.settings)
            return runner

    def close(self) -> None:
        with self._lock:
            runners, self._runners = list(self._runners.values()), {}
        for runner in runners:
            runner.close()
