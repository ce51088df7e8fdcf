"""Calling a tool by name, the one way: resolve → build and validate → runner → ToolResult.

Every front door calls tools through here: ``toolctl run`` (one call, ``--dry-run``,
``--batch``), ``toolctl worker --tool`` and the servers under ``toolctl.serve``.

The API::

    call(settings, registry, name, arguments=None, *, pairs=(), timeout=None, user=None,
         sink=None) -> ToolResult
        One call. ``name`` is a tool name (first wins; unknown: NotFound, exit 4; a tool's
        function name as an OpenAI export spells it, ``a_b`` for ``a.b``, is accepted) or a
        ToolSpec from ``resolve``. ``arguments`` is a JSON object; ``pairs`` are ``--arg
        k=v`` strings converted to the declared types. Arguments are validated before
        anything runs (InvalidArguments, exit 2). ``timeout`` defaults to the tool's,
        ``user`` to the settings'. The tool failing is a result (``success`` false);
        not reaching it, a timeout or an interruption raise a ToolctlError.
    describe(settings, registry, name, arguments=None, *, pairs=(), timeout=None,
             user=None) -> dict
        What ``call`` would do (argv, URL, image, queue; secrets masked); runs nothing.
    batch(settings, registry, name, lines, *, concurrency=1, timeout=None, user=None,
          sink=None) -> Iterator[ToolResult]
        One call per non-blank JSON line, ``concurrency`` in flight, results in input
        order; a bad line is a failed result, never the end of the batch.
    tools_in_force(registry) -> list[ToolSpec]
        Every tool a call can name: the first definition of each name, resolved.
    resolve(registry, name, *, allow_staging=False) -> ToolSpec
        A tool whose ``state`` is staging, disabled or deprecated is refused unless
        ``allow_staging``; ``call``/``describe``/``batch`` by name never allow it (pass a
        ToolSpec resolved with ``allow_staging=True`` to run one).

    Caller(settings, registry, *, recorder=None, origin=Origin())  — the same calls over
        runners kept open between calls (a server, a worker): ``.call``, ``.describe``,
        ``.batch`` as above without the first two parameters, and ``.close()`` (also a
        context manager). Thread-safe. ``.call(..., cancel=Cancel())`` can be ended from
        another thread, its processes killed (``toolctl.calls.cancel``).
        ``.submit(runner, call)`` sends a prepared call through a runner that pipelines
        (``.pipeline(runtime)``: Pulsar) without waiting; ``run --batch`` and the servers
        both send pipelined calls this way, with the same start and done events and the
        same record as ``.call``. ``.close(drain=S)`` (a server stopping) first waits up
        to S seconds for the calls in flight to end.

Every call that reaches its runner, or is refused for invalid arguments, leaves a record
(``toolctl.records``): a span whose ``traceparent`` the runner passes on to the tool, a row
in the run history (written off the call's path), and the metrics of a server or worker
that passes a Recorder with them. ``origin`` (``toolctl.records.Origin``) says who called,
in which session and trace; a call's own ``origin=`` overrides the caller's. A batch is one
session.

The ``sink`` (``toolctl.runners.base.Sink``) hears the call's ``start`` and ``done``
events and whatever the runner shows while it works (output as it arrives, a child's
stderr, "a slow start is under way"); the default discards everything.

No process left behind: the first call makes this process a child subreaper, and when
the last call in flight ends (a single call, a whole batch, a server going idle) every
process the calls left (a tool's ``setsid`` or ``nohup`` grandchildren) is killed and
reaped; the managed services toolctl starts on purpose are spared. See
``toolctl.processes.reaper``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolctl import arguments as tool_args
from toolctl.errors import (
    Interrupted,
    InvalidArguments,
    NotFound,
    RegistryError,
    ToolctlError,
    interruption,
)
from toolctl.processes.reaper import Reaping, sweep, wait_idle
from toolctl.records import Origin
from toolctl.records.recorder import Recorder, Recording
from toolctl.runners.base import NO_SINK, Call, Event, Pipelined, Sink, ToolResult, ToolSpec

if TYPE_CHECKING:
    from concurrent.futures import Future

    from toolctl.calls.cancel import Cancel
    from toolctl.registry.index import Registry
    from toolctl.registry.loader import Definition
    from toolctl.runners.base import Runner
    from toolctl.settings import Settings

CLI = Origin()
"""A call from the command line (``toolctl run``): the default origin of a Caller."""

__all__ = [
    "Caller",
    "Submitted",
    "batch",
    "call",
    "describe",
    "done_event",
    "resolve",
    "start_event",
    "tools_in_force",
]


def resolve(registry: Registry, name: str, *, allow_staging: bool = False) -> ToolSpec:
    """The tool in force under ``name``, with its service's descriptor if it has one.

    A tool whose ``state`` is not "active" is refused unless ``allow_staging``.
    """
    from toolctl.tool_state import check_runnable, check_service_runnable

    try:
        tool = registry.resolve("tool", name)
    except NotFound:
        tool = _by_function_name(registry, name)
    check_runnable(tool.data, allow_staging)
    service = None
    if tool.data.get("service"):
        try:
            service = registry.resolve("service", tool.data["service"])
        except NotFound as exc:  # the registry is broken, not the command line
            raise RegistryError(
                f"tool '{tool.name}' names unknown service '{tool.data['service']}'"
                + (f" ({exc.hint})" if exc.hint else ""),
                hint="run 'toolctl check'",
            ) from exc
        check_service_runnable(tool.name, service.data, allow_staging)
    runtime = tool.data.get("runtime")
    if not runtime:
        raise RegistryError(f"tool '{name}' has no runtime", hint="run 'toolctl check'")
    return ToolSpec(
        tool.name,
        runtime,
        tool.data,
        None if service is None else service.data,
        Path(tool.file),
        None if service is None else Path(service.file),
    )


def _by_function_name(registry: Registry, name: str) -> Definition:
    """The tool in force whose function name (``names.function_name``: what an OpenAI export
    calls it) is ``name``, so a model's function call resolves; else NotFound."""
    from toolctl.names import function_name

    holder = registry.confusable_with("tool", name)
    if holder is not None and holder.name != name and function_name(holder.name) == name:
        return holder
    raise registry.not_found("tool", name)


def tools_in_force(registry: Registry) -> list[ToolSpec]:
    """Every tool a call can name (first definition of each name), sorted by name.

    A tool whose service is missing is left out: no call can reach it (``check`` says why).
    """
    found = []
    for definition in registry.winners("tool"):
        try:
            found.append(resolve(registry, definition.name))
        except ToolctlError:
            continue
    return sorted(found, key=lambda spec: spec.name)


def build_arguments(
    tool: ToolSpec, given: Mapping[str, Any] | None = None, pairs: Sequence[str] = ()
) -> dict[str, Any]:
    """``given`` with ``pairs`` over it and the declared defaults, validated (else exit 2)."""
    schema = tool.data["schema"]
    arguments = tool_args.build(schema, given, pairs)
    tool_args.validate(tool.name, schema, arguments)
    return arguments


def call_timeout(tool: ToolSpec, timeout: float | None, default: float | None = None) -> float:
    """The call's timeout: ``timeout`` if given, else the tool's (``default``, the project's
    or user's, for a tool that sets none); a finite number of seconds in (0, MAX_TIMEOUT],
    else a UsageError (exit 2) for every runtime."""
    if timeout is not None:
        return tool_args.check_timeout(timeout, "--timeout")
    seconds = tool_args.tool_timeout(tool.data, default)
    return tool_args.check_timeout(seconds, f"tool '{tool.name}': timeout")


def call_max_output(tool: ToolSpec, max_output: int | None) -> int:
    """Bytes of output the call's result may hold: ``max_output`` if given, else the
    tool's ``max_output``, else DEFAULT_MAX_OUTPUT (16 MiB)."""
    if max_output is not None:
        return max_output
    return int(tool.data.get("max_output") or tool_args.DEFAULT_MAX_OUTPUT)


def start_event(tool: ToolSpec) -> Event:
    return {"event": "start", "tool": tool.name, "transport": tool.runtime}


def done_event(
    tool: ToolSpec, result: ToolResult | None, started: float, error: BaseException | None = None
) -> Event:
    """The one ``done`` event: how the call ended and how long it took (never arguments)."""
    event: Event = {"event": "done", "tool": tool.name, "transport": tool.runtime}
    if result is not None:
        event.update(success=result.success, duration_ms=result.duration_ms)
    else:
        event.update(success=False, duration_ms=_ms(started), error=type(error).__name__)
    return event


class Submitted:
    """A pipelined call on its way: ``finish`` reports how it ended (its done event)."""

    __slots__ = ("call", "future", "started")

    def __init__(self, call: Call, future: Future[ToolResult], started: float) -> None:
        self.call, self.future, self.started = call, future, started

    def finish(self, result: ToolResult | None, error: BaseException | None = None) -> None:
        self.call.sink.event(done_event(self.call.tool, result, self.started, error))


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
        with Reaping(self.settings):
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
        try:
            result = runner.run(call)
            if call.tool.data.get("output") == "mcp":
                from toolctl.calls.content import declared_content

                result = declared_content(result)
        except ToolctlError as exc:
            call.sink.event(done_event(call.tool, None, started, exc))
            self.recorder.end(recording, error=exc)
            raise
        except KeyboardInterrupt as exc:
            call.sink.event(done_event(call.tool, None, started, exc))
            error = interruption(exc, "interrupted; the call was stopped")
            self.recorder.end(recording, error=error)
            raise error from exc
        result = result.finite()
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
        try:
            future = runner.submit(call)
        except ToolctlError as exc:
            call.sink.event(done_event(call.tool, None, started, exc))
            self.recorder.end(recording, error=exc)
            raise
        if call.tool.data.get("output") == "mcp":
            future = _declared(future)  # its content blocks, as ``execute`` reads them
        future.add_done_callback(lambda done: self._settled(recording, done))
        return Submitted(call, future, started)

    def _settled(self, recording: Recording, future: Future[ToolResult]) -> None:
        if future.cancelled():
            self.recorder.end(recording, error=Interrupted("cancelled"))
            return
        error = future.exception()
        self.recorder.end(recording, future.result() if error is None else None, error)

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
    ) -> Iterator[ToolResult]:
        """One call per JSON line, in input order (see the module docstring); the batch is
        one session (TOOLCTL_SESSION, else a new one)."""
        from toolctl.calls.batching import run_batch

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
        with Reaping(self.settings):
            try:
                yield from run_batch(
                    self,
                    runner,
                    template._replace(sink=events),
                    lines,
                    concurrency,
                    origin or batch_origin(self.settings),
                )
            except KeyboardInterrupt as exc:
                runner.close()  # ends every call in flight
                raise interruption(exc, "interrupted; the batch's calls were stopped") from exc

    def runner(self, runtime: str, sink: Sink = NO_SINK) -> Runner:
        """The runner of ``runtime``, loaded on first use and kept until ``close``."""
        runner = self._runners.get(runtime)
        if runner is None:
            from toolctl.runners import load_runner

            with self._lock:
                runner = self._runners.get(runtime)
                if runner is None:
                    runner = load_runner(runtime, self.settings, warn=sink.warning)
                    self._runners[runtime] = runner
        return runner

    def close(self, drain: float | None = None) -> None:
        """Close every runner (ending calls still in flight), then reap what they left.

        ``drain`` (a server stopping): first wait up to that many seconds for the calls in
        flight to end (a cancelled call cleans up: its container is removed), then reap
        even if one never ends.
        """
        if drain is not None:
            wait_idle(drain)
        with self._lock:
            runners, self._runners = list(self._runners.values()), {}
        for runner in runners:
            runner.close()
        sweep(self.settings, force=drain is not None)


def call(
    settings: Settings,
    registry: Registry,
    name: str | ToolSpec,
    arguments: Mapping[str, Any] | None = None,
    *,
    pairs: Sequence[str] = (),
    timeout: float | None = None,
    user: str | None = None,
    sink: Sink | None = None,
) -> ToolResult:
    """One call, with runners opened and closed around it (see the module docstring)."""
    with Caller(settings, registry) as caller:
        return caller.call(name, arguments, pairs=pairs, timeout=timeout, user=user, sink=sink)


def describe(
    settings: Settings,
    registry: Registry,
    name: str | ToolSpec,
    arguments: Mapping[str, Any] | None = None,
    *,
    pairs: Sequence[str] = (),
    timeout: float | None = None,
    user: str | None = None,
) -> dict[str, Any]:
    """What ``call`` would do, secrets masked; runs nothing."""
    with Caller(settings, registry) as caller:
        return caller.describe(name, arguments, pairs=pairs, timeout=timeout, user=user)


def batch(
    settings: Settings,
    registry: Registry,
    name: str | ToolSpec,
    lines: Iterable[str],
    *,
    concurrency: int = 1,
    timeout: float | None = None,
    user: str | None = None,
    sink: Sink | None = None,
) -> Iterator[ToolResult]:
    """One call per JSON line, results in input order (see the module docstring)."""
    with Caller(settings, registry) as caller:
        yield from caller.batch(
            name, lines, concurrency=concurrency, timeout=timeout, user=user, sink=sink
        )


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


class _EventsOnly(Sink):
    """A batch's calls report their events and warnings, never output: results are lines."""

    reports = False

    def __init__(self, sink: Sink) -> None:
        self._sink = sink

    def event(self, event: Event) -> None:
        self._sink.event(event)

    def warning(self, message: str) -> None:
        self._sink.warning(message)


def _declared(sent: Future[ToolResult]) -> Future[ToolResult]:
    """A Future of ``sent``'s result read as a tool declaring ``output = "mcp"`` (its
    content blocks kept for the MCP doors); cancelling it cancels ``sent``."""
    from concurrent.futures import Future, InvalidStateError

    from toolctl.calls.content import declared_content

    declared: Future[ToolResult] = Future()

    def settle(done: Future[ToolResult]) -> None:
        with contextlib.suppress(InvalidStateError):  # cancelled meanwhile
            if done.cancelled():
                declared.cancel()
            elif (error := done.exception()) is not None:
                declared.set_exception(error)
            else:
                declared.set_result(declared_content(done.result()))

    def forward(done: Future[ToolResult]) -> None:
        if done.cancelled():
            sent.cancel()

    sent.add_done_callback(settle)
    declared.add_done_callback(forward)
    return declared


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
