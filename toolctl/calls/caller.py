"""The Caller: calls by name over runners kept open between calls, each one evented,
recorded and reaped, with the origins it records them under (see ``toolctl.calls``)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolctl.calls.events import Submitted, done_event, elapsed_ms, start_event
from toolctl.calls.leaks import passed_secrets, unleaked_error, unleaked_future, unleaked_result
from toolctl.calls.resolution import build_arguments, call_max_output, call_timeout, resolve
from toolctl.errors import Interrupted, InvalidArguments, ToolctlError, interruption
from toolctl.processes.reaper import Reaping, sweep, wait_idle
from toolctl.records import Origin
from toolctl.records.recorder import Recorder, Recording
from toolctl.runners.base import NO_SINK, Call, Event, Pipelined, Sink, ToolResult, ToolSpec
from toolctl.runtimes import STARTS_NOTHING

if TYPE_CHECKING:
    from concurrent.futures import Future

    from toolctl.calls.batching import Batch
    from toolctl.calls.cancel import Cancel
    from toolctl.registry.index import Registry
    from toolctl.runners.base import Runner
    from toolctl.settings import Settings


CLI = Origin()
"""A call from the command line (``toolctl run``): the default origin of a Caller."""


def cli_origin(settings: Settings) -> Origin:
    """A call from the command line, inside the trace of whoever started toolctl: the
    ``TRACEPARENT`` of its environment (a tool that runs toolctl gets one from toolctl)."""
    return Origin("cli", None, settings.environ.get("TRACEPARENT"))


def batch_origin(settings: Settings) -> Origin:
    """A batch's calls: caller "batch", one session (TOOLCTL_SESSION, else a new id), in
    the trace of the environment's ``TRACEPARENT``."""
    import uuid

    session = settings.records.session or f"batch-{uuid.uuid4().hex[:16]}"
    return Origin("batch", session, settings.environ.get("TRACEPARENT"))


class Caller:
    """Calls by name over runners loaded once and kept open until ``close``."""

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        *,
        recorder: Recorder | None = None,
        origin: Origin = CLI,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.recorder = recorder if recorder is not None else Recorder(settings)
        self.origin = origin
        self._runners: dict[str, Runner] = {}
        self._lock = threading.Lock()
        self._batches: list[Batch] = []
        self.stopped: Interrupted | None = None
        """Set by ``stop``: the calls that end from then on without success were stopped."""
        self._closed = False

    def __enter__(self) -> Caller:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def prepare(
        self,
        name: str | ToolSpec,
        arguments: Mapping[str, Any] | None = None,
        *,
        pairs: Sequence[str] = (),
        timeout: float | None = None,
        user: str | None = None,
        sink: Sink | None = None,
        max_output: int | None = None,
    ) -> Call:
        """The Call ``call`` would make: resolved, arguments built and validated."""
        tool = name if isinstance(name, ToolSpec) else resolve(self.registry, name)
        self.runner(tool.runtime, sink or NO_SINK)  # a missing runtime before bad arguments
        return Call(
            tool,
            build_arguments(tool, arguments, pairs),
            call_timeout(tool, timeout, self.settings.default_timeout),
            user or self.settings.user,
            sink or NO_SINK,
            call_max_output(tool, max_output),
        )

    def call(
        self,
        name: str | ToolSpec,
        arguments: Mapping[str, Any] | None = None,
        *,
        pairs: Sequence[str] = (),
        timeout: float | None = None,
        user: str | None = None,
        sink: Sink | None = None,
        cancel: Cancel | None = None,
        max_output: int | None = None,
        origin: Origin | None = None,
    ) -> ToolResult:
        """One call (see the module docstring); ``cancel`` lets another thread end it."""
        tool = name if isinstance(name, ToolSpec) else resolve(self.registry, name)
        try:
            prepared = self.prepare(
                tool,
                arguments,
                pairs=pairs,
                timeout=timeout,
                user=user,
                sink=sink,
                max_output=max_output,
            )
        except InvalidArguments as exc:
            self.refused(tool, arguments, exc, origin)
            raise
        reaping = Reaping(self.settings) if tool.runtime not in STARTS_NOTHING else None
        with reaping or contextlib.nullcontext():
            if cancel is None:
                return self.execute(prepared, origin)
            with cancel.running():
                return self.execute(prepared, origin)

    def execute(self, call: Call, origin: Origin | None = None) -> ToolResult:
        """Run a prepared call through its runner, reporting start and done to its sink,
        recording it (``origin``, else the caller's)."""
        runner = self.runner(call.tool.runtime, call.sink)
        recording = self.recorder.begin(call.tool, call.arguments, origin or self.origin)
        call = call._replace(traceparent=recording.traceparent)
        if call.sink.stderr_fd is None and call.sink is not NO_SINK:
            from toolctl.runners.protocol import ProtocolSink

            call = call._replace(sink=ProtocolSink(call.sink))  # toolctl:progress lines
        call.sink.event(start_event(call.tool))
        started = time.perf_counter()
        secrets = passed_secrets(call.tool, self.settings.environ)
        try:
            result = runner.run(call)
            if not result.success and self.stopped is not None:
                raise Interrupted("the call ended as it was stopped")  # told as the stop
            if not result.success and _cancelled_here():  # an MCP server's answer to it
                raise Interrupted("cancelled; the tool's processes were killed")
            if call.tool.data.get("output") == "mcp":
                from toolctl.calls.content import declared_content

                result = declared_content(result)
        except ToolctlError as exc:
            error = self.stopped_call() or exc
            if error is exc and not isinstance(exc, Interrupted) and _cancelled_here():
                # its client went away or its server stopped: what the call then ended with
                # (an MCP session abandoned: "unavailable") is not how the tool fared
                error = Interrupted("cancelled; the tool's processes were killed")
            unleaked_error(error, secrets)
            call.sink.event(done_event(call.tool, None, started, error))
            self.recorder.end(recording, error=_ran(error, call, started))
            if error is exc:
                raise
            raise error from exc
        except KeyboardInterrupt as exc:
            call.sink.event(done_event(call.tool, None, started, exc))
            error = interruption(exc, "interrupted; the call was stopped")
            self.recorder.end(recording, error=_ran(error, call, started))
            raise error from exc
        result = unleaked_result(result.finite(), secrets)
        call.sink.event(done_event(call.tool, result, started))
        self.recorder.end(recording, result)
        return result

    def refused(
        self,
        tool: ToolSpec,
        arguments: Mapping[str, Any] | None,
        error: ToolctlError,
        origin: Origin | None = None,
    ) -> None:
        """Record a call refused before it ran: its arguments were invalid (exit 2)."""
        recording = self.recorder.begin(tool, arguments or {}, origin or self.origin)
        self.recorder.end(recording, error=error)

    def pipeline(self, runtime: str, sink: Sink = NO_SINK) -> Pipelined | None:
        """The runner of ``runtime`` if it takes calls without a thread (Pulsar), else None."""
        runner = self.runner(runtime, sink)
        return runner if isinstance(runner, Pipelined) else None

    def submit(self, runner: Pipelined, call: Call, origin: Origin | None = None) -> Submitted:
        """Send a prepared call through a runner that pipelines (Pulsar) without waiting,
        reporting its start: the one pipelined path (``run --batch``, the servers). The
        caller awaits ``.future`` and reports the end with ``.finish``; the call is
        recorded when the Future settles."""
        recording = self.recorder.begin(call.tool, call.arguments, origin or self.origin)
        call = call._replace(traceparent=recording.traceparent)
        call.sink.event(start_event(call.tool))
        started = time.perf_counter()
        secrets = passed_secrets(call.tool, self.settings.environ)
        try:
            future = runner.submit(call)
        except ToolctlError as exc:
            unleaked_error(exc, secrets)
            call.sink.event(done_event(call.tool, None, started, exc))
            self.recorder.end(recording, error=exc)
            raise
        if call.tool.data.get("output") == "mcp":
            from toolctl.calls.content import declared_future

            future = declared_future(future)  # its content blocks, as ``execute`` reads them
        if secrets:
            future = unleaked_future(future, secrets)
        future.add_done_callback(lambda done: self._settled(recording, done))
        return Submitted(call, future, started)

    def _settled(self, recording: Recording, future: Future[ToolResult]) -> None:
        if future.cancelled():
            self.recorder.end(recording, error=self.stopped_call() or Interrupted("cancelled"))
            return
        error = future.exception()
        if error is not None and self.stopped is not None:
            error = self.stopped_call()
        self.recorder.end(recording, future.result() if error is None else None, error)

    def stop(self, cause: BaseException) -> None:
        """From now on a call that ends without success was ended by ``cause`` (the
        KeyboardInterrupt of a stopping signal): a batch's calls, stopped with it, are
        told and recorded as interrupted (or terminated...), not as failures of their own."""
        self.stopped = interruption(cause, "interrupted; the call was stopped")

    def stopped_call(self) -> Interrupted | None:
        """A new error for one call that ``stop`` ended; None before it."""
        if self.stopped is None:
            return None
        return type(self.stopped)(str(self.stopped))

    def describe(
        self,
        name: str | ToolSpec,
        arguments: Mapping[str, Any] | None = None,
        *,
        pairs: Sequence[str] = (),
        timeout: float | None = None,
        user: str | None = None,
    ) -> dict[str, Any]:
        """What ``call`` would do, secrets masked; runs nothing."""
        from toolctl.runners.base import Described

        prepared = self.prepare(name, arguments, pairs=pairs, timeout=timeout, user=user)
        runner = self.runner(prepared.tool.runtime, NO_SINK)
        if isinstance(runner, Described):
            return runner.describe(prepared)
        return {
            "transport": prepared.tool.runtime,
            "arguments": prepared.arguments,
            "timeout": prepared.timeout,
        }

    def batch(
        self,
        name: str | ToolSpec,
        lines: Iterable[str],
        *,
        concurrency: int = 1,
        timeout: float | None = None,
        user: str | None = None,
        sink: Sink | None = None,
        max_output: int | None = None,
        origin: Origin | None = None,
    ) -> Batch:
        """One call per JSON line, in input order (see ``toolctl.calls.batching``); the
        batch is one session (TOOLCTL_SESSION, else a new one)."""
        from toolctl.calls.batching import Batch

        tool = name if isinstance(name, ToolSpec) else resolve(self.registry, name)
        template = Call(
            tool,
            {},
            call_timeout(tool, timeout, self.settings.default_timeout),
            user or self.settings.user,
            max_output=call_max_output(tool, max_output),
        )
        events = _EventsOnly(sink or NO_SINK)
        runner = self.runner(tool.runtime, events)
        batch = Batch(
            self,
            runner,
            template._replace(sink=events),
            lines,
            concurrency,
            origin or batch_origin(self.settings),
            span=Reaping(self.settings),
        )
        self._batches.append(batch)
        return batch

    def runner(self, runtime: str, sink: Sink = NO_SINK) -> Runner:
        """The runner of ``runtime``, loaded on first use and kept until ``close``."""
        runner = self._runners.get(runtime)
        if runner is None:
            from toolctl.runners import load_runner

            with self._lock:
                runner = self._runners.get(runtime)
                if runner is None:
                    if self._closed:  # as httpx's Client: a closed Caller makes no call
                        raise RuntimeError("this Caller is closed; open another")
                    runner = load_runner(runtime, self.settings, warn=sink.warning)
                    self._runners[runtime] = runner
        return runner

    def abandon(self) -> None:
        """A second stopping signal: end at once what the calls in flight hold outside this
        process's tree (their containers; ``Abandoning`` runners), before the process goes
        and everything below it is SIGKILLed (which would leave a container running)."""
        from toolctl.runners.base import Abandoning

        runners: list[Runner] = []
        with contextlib.suppress(RuntimeError):  # no lock: a signal handler runs this
            runners = list(self._runners.values())
        for runner in runners:
            if isinstance(runner, Abandoning):
                with contextlib.suppress(Exception):  # quick or nothing: the process ends next
                    runner.abandon()

    def close(self, drain: float | None = None) -> None:
        """Close every runner (ending calls still in flight, which raise Interrupted), then
        reap what they left. A closed Caller makes no more calls (RuntimeError).

        ``drain`` (a server stopping): first wait up to that many seconds for the calls in
        flight to end (a cancelled call cleans up: its container is removed), then reap
        even if one never ends.
        """
        if drain is not None:
            wait_idle(drain)
        if self.stopped is None:  # a call another thread still makes ends interrupted
            self.stopped = Interrupted("interrupted: its Caller was closed")
        with self._lock:
            self._closed = True
            runners, self._runners = list(self._runners.values()), {}
        for runner in runners:
            runner.close()
        for batch in self._batches:  # one left unfinished (its output lost) ends here
            batch.close()
        self._batches = []
        sweep(self.settings, force=drain is not None)


class _EventsOnly(Sink):
    """A batch's calls report their events and warnings, never output: results are lines."""

    reports = False

    def __init__(self, sink: Sink) -> None:
        self._sink = sink

    def event(self, event: Event) -> None:
        self._sink.event(event)

    def warning(self, message: str) -> None:
        self._sink.warning(message)


def _cancelled_here() -> bool:
    from toolctl.runners.process import cancelled_here  # (loaded by then if it matters)

    return cancelled_here()


def _ran(error: ToolctlError, call: Call, started: float) -> ToolctlError:
    """``error``, knowing the call it ended ran on its runtime for so long (its result
    object, `run --json`'s, says so)."""
    error.runtime, error.duration_ms = call.tool.runtime, elapsed_ms(started)
    return error
