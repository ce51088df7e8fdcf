"""`toolctl worker`: the Pulsar door, hosting a tool service's handler or a registered tool.

``run_worker`` hosts in the foreground until a signal (``toolctl.processes.lifetime``):
the first stops taking calls and lets those in flight answer (``DRAIN_GRACE``), then
everything the calls started is ended; SIGTERM exits 0, SIGINT 130 (SIGHUP 129, SIGQUIT
131), a second signal at once. ``worker --tool NAME`` is the third door onto the serve
Dispatcher (with ``serve`` and ``mcp serve``): each request is one call through it, with
its validation, timeout, cancellation and reaping. ``start_worker`` and ``stop_worker``
run the same worker in the background and stop it.
"""

from __future__ import annotations

import json
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolctl.runners.base import Event, Sink

if TYPE_CHECKING:
    from toolctl.processes import ProcessRecord, Stopped
    from toolctl.pulsar.hosting import Hosting
    from toolctl.pulsar.progress import ProgressReporter
    from toolctl.pulsar.worker import Log, Worker
    from toolctl.records import Origin
    from toolctl.records.recorder import Recorder
    from toolctl.registry.index import Registry
    from toolctl.reporting import Reporter
    from toolctl.settings import Settings

TOOL_TOPIC = "non-persistent://tg/{side}/{name}"
"""Where `worker --tool NAME` serves: TrustGraph's own DynamicToolService topic layout."""
DRAIN_GRACE = 10.0
"""Seconds a stopping worker gives the calls in flight to answer."""


@dataclass(frozen=True)
class Target:
    """What one `toolctl worker` line hosts, and how."""

    service: str | None
    tool: str | None
    handler: str | None
    concurrency: int
    verbose: bool
    metrics_port: int | None = None
    announce: bool = False
    """Announce the service and its tools on the announcements topic while serving."""
    announce_ttl: float = 30.0
    key: Path | None = None
    """The signing key of the announcements (`toolctl keygen`)."""

    def __post_init__(self) -> None:
        from toolctl.errors import UsageError

        if (self.service is None) == (self.tool is None):
            raise UsageError("give a SERVICE or --tool NAME (one of them)")
        if self.key is not None and not self.announce:
            raise UsageError("--key signs announcements: give --announce too")
        if not 1 <= self.announce_ttl <= 86400:  # NaN too, which the option's bounds let by
            raise UsageError(
                f"--announce-ttl must be seconds from 1 to 86400, got {self.announce_ttl:g}"
            )

    @property
    def name(self) -> str:
        """Its name in the process table (what `service status` lists)."""
        return f"worker:{self.service}" if self.service else f"worker:tool:{self.tool}"

    @property
    def label(self) -> str:
        return f"worker {self.service or f'--tool {self.tool}'}"

    def argv(self, settings: Settings, *, explicit_registry: bool, strict: bool) -> list[str]:
        """The command line of the same worker in the foreground, for --detach."""
        command = [sys.executable, "-m", "toolctl", "worker"]
        command += [self.service] if self.service else ["--tool", str(self.tool)]
        command += ["--handler", self.handler] if self.handler else []
        command += ["--concurrency", str(self.concurrency), "--pulsar-url", settings.pulsar_url]
        command += ["--verbose"] if self.verbose else []
        if self.metrics_port is not None:
            command += ["--metrics-port", str(self.metrics_port)]
        command += ["--strict"] if strict else []
        if self.announce:
            command += ["--announce", "--announce-ttl", f"{self.announce_ttl:g}"]
            command += ["--key", str(self.key)] if self.key else []
        for directory in settings.search_path if explicit_registry else ():
            command += ["--registry", str(directory)]
        return command


def stop_worker(settings: Settings, target: Target) -> Stopped:
    """Stop the detached worker: SIGTERM lets it drain for DRAIN_GRACE s, SIGKILL after."""
    from toolctl.processes import stop

    return stop(settings, target.name, DRAIN_GRACE + 2)


def start_worker(
    settings: Settings, target: Target, *, explicit_registry: bool, strict: bool
) -> tuple[ProcessRecord, bool]:
    """The same worker in the background, once it serves; (its record, started now)."""
    from toolctl.pulsar.worker import start_detached

    command = target.argv(settings, explicit_registry=explicit_registry, strict=strict)
    return start_detached(settings, target.name, command, drain=DRAIN_GRACE + 1)


def run_worker(
    settings: Settings, reporter: Reporter, target: Target, log: Log, ready_file: Path | None
) -> None:
    """Serve in the foreground until a signal (see the module docstring)."""
    from toolctl.errors import ToolctlError
    from toolctl.processes import report_failure, report_ready
    from toolctl.processes.lifetime import Lifetime
    from toolctl.processes.reaper import kill_now
    from toolctl.pulsar.worker import Worker
    from toolctl.records import write_all

    try:
        signer = _signer(target) if target.announce else None  # a bad key before serving
        recorder = _recorder(settings, target, log)
        hosting = _hosting(settings, reporter, target, recorder)
        worker = Worker(
            hosting,
            settings.pulsar_url,
            target.concurrency,
            log,
            verbose=target.verbose,
            recorder=recorder,
        )
        worker.start()
        announcer = _announcer(settings, reporter, target, signer) if target.announce else None
        metrics_server = _serve_metrics(recorder, target, hosting.request_queue, worker)
    except ToolctlError as exc:
        if ready_file is not None:  # a detached worker: the one who started it reads this
            report_failure(ready_file, exc)
        raise
    with Lifetime(clean={signal.SIGTERM}) as lifetime:
        lifetime.on_stop(hosting.stopping)  # its calls cut short: recorded with the signal
        lifetime.at_once(lambda: worker.give_up("a second signal stopped it at once"))
        lifetime.at_once(lambda: kill_now(settings))  # a second signal: nothing outlives it
        lifetime.at_once(lambda: write_all(log))  # a stop may send SIGTERM twice
        if ready_file is not None:
            report_ready(ready_file)
        reporter.note(
            f"{target.label}: serving {hosting.origin} on {hosting.request_queue} "
            f"(subscription {hosting.subscription}, {target.concurrency} in flight) "
            f"at {settings.pulsar_url}; Ctrl-C or SIGTERM stops it"
        )
        lifetime.wait()
        if announcer is not None:  # a clean stop: the tombstone goes before the drain
            announcer.stop(tombstone=True)
        drained = worker.stop(DRAIN_GRACE)
        if metrics_server is not None:
            metrics_server.shutdown()
    log("stopped" if drained else f"stopped; calls still running after {DRAIN_GRACE:g} s")
    lifetime.ended(quiet=True)  # stopped cleanly; the log said so


def _signer(target: Target) -> Any:
    """What ``--announce`` signs with (None: unsigned), read before the worker serves: a
    key it cannot use is its own error, not hidden behind one of serving."""
    from toolctl.errors import UsageError
    from toolctl.pulsar.announcements import Signer
    from toolctl.signing import SigningKey

    if target.service is None:
        raise UsageError("--announce announces a SERVICE", hint="leave out --tool")
    if target.key is None:
        return None
    key = SigningKey(target.key)
    return Signer(key.public, key.sign)


def _announcer(settings: Settings, reporter: Reporter, target: Target, signer: Any) -> Any:
    """Announce the service and its tools (from the registry's files), signed with
    ``signer``; heart-beating until stopped."""
    from toolctl.interchange.trustgraph import announcement_items
    from toolctl.pulsar.announcements import Announcer, descriptor_fields
    from toolctl.registry import open_registry

    assert target.service is not None
    files = settings.without_announcements()
    registry = open_registry(files, reporter, warn=False)
    service = registry.resolve("service", target.service)
    tools = [d.data for d in registry.winners("tool") if d.data.get("service") == target.service]
    items = announcement_items(service.data, tools)
    announcer = Announcer(
        settings.pulsar_url,
        target.service,
        items,
        ttl=target.announce_ttl,
        signer=signer,
        topic=settings.announce_topic,
        descriptors=descriptor_fields(items, tools),
    )
    announcer.start()
    signed = f"signed with {signer.public}" if signer else "unsigned"
    reporter.note(
        f"announcing {target.service} and {len(items) - 1} tool(s) on {settings.announce_topic} "
        f"as {announcer.identity}, {signed}, every {target.announce_ttl / 3:.3g} s"
    )
    return announcer


def _recorder(settings: Settings, target: Target, log: Log) -> Recorder:
    """The worker's recorder, with Prometheus metrics when --metrics-port asks for them."""
    from toolctl.records.recorder import Recorder

    metrics = None
    if target.metrics_port is not None:
        from toolctl.records.metrics import Metrics

        metrics = Metrics()
    return Recorder(settings, metrics=metrics, warn=log)


def _serve_metrics(recorder: Recorder, target: Target, queue: str, worker: Worker) -> Any:
    """The /metrics server on 127.0.0.1:--metrics-port (None without the option)."""
    metrics = recorder.metrics
    if metrics is None or target.metrics_port is None:
        return None
    from toolctl.errors import TransportUnavailable
    from toolctl.records.metrics import serve_metrics

    metrics.watch_backlog(queue, worker.backlog)
    try:
        server, _ = serve_metrics(metrics, "127.0.0.1", target.metrics_port)
    except OSError as exc:
        worker.stop(0)
        raise TransportUnavailable(
            f"--metrics-port {target.metrics_port}: cannot listen: {exc.strerror}",
            hint="is the port taken?",
        ) from exc
    return server


def _hosting(settings: Settings, reporter: Reporter, target: Target, recorder: Recorder) -> Hosting:
    """What the worker serves: the service's handler, or a registered tool."""
    from toolctl.errors import UsageError
    from toolctl.pulsar.hosting import handler_roots, host_service
    from toolctl.registry import open_registry

    registry = open_registry(settings, reporter)
    if target.service is None:
        return _host_tool(settings, registry, str(target.tool), target.concurrency, recorder)
    definition = registry.resolve("service", target.service)
    section = definition.data.get("pulsar")
    if not section:
        raise UsageError(
            f"service '{target.service}' is not a Pulsar service",
            hint="a worker hosts [service.pulsar]",
        )
    roots = handler_roots(Path(definition.file), settings.search_path)
    return host_service(target.service, section, roots, target.handler)


def _host_tool(
    settings: Settings, registry: Registry, name: str, concurrency: int, recorder: Recorder
) -> Hosting:
    """A registered local, HTTP or container tool, each request one call through the serve
    Dispatcher, recorded under the request's origin (its trace and id)."""
    from toolctl.calls import resolve
    from toolctl.errors import StopSignal, ToolFailed, UsageError
    from toolctl.pulsar.hosting import Hosting
    from toolctl.pulsar.progress import REPORTER
    from toolctl.pulsar.worker import WORKER
    from toolctl.records.context import CURRENT_ORIGIN
    from toolctl.serve.catalog import Selection
    from toolctl.serve.dispatch import open_dispatcher

    spec = resolve(registry, name)
    if spec.runtime == "pulsar":
        service = spec.data.get("service")
        raise UsageError(
            f"tool '{name}' already runs on Pulsar (service '{service}')",
            hint=f"host its service: 'toolctl worker {service}'",
        )
    declared = spec.data.get("output") == "mcp"
    selected = Selection(tools=(name,))
    dispatcher = open_dispatcher(
        settings, selected, concurrency=concurrency, queue=concurrency, recorder=recorder
    )
    dispatcher.caller.runner(spec.runtime)  # a runtime nobody provides fails now, not later

    async def call(
        arguments: dict[str, Any], user: str, origin: Origin, reporter: ProgressReporter | None
    ) -> str:
        sink = None if reporter is None else _ReportingSink(dispatcher.log_sink, reporter)
        result = await dispatcher.call(
            name, arguments, via="pulsar", origin=origin, user=user, sink=sink
        )
        if not result.success:
            raise ToolFailed(result.error or "the tool failed")
        if declared and result.mcp is not None:  # its content blocks, for output = "mcp"
            return json.dumps(result.mcp)
        return str(result.output)

    def invoke(config: dict[str, Any], arguments: dict[str, Any], user: str) -> Any:
        # the origin and reporter are the worker thread's (set per request); the call runs
        # on the worker's event loop, whose context does not carry them
        return call(arguments, user, CURRENT_ORIGIN.get() or WORKER, REPORTER.get())

    return Hosting(
        name,
        TOOL_TOPIC.format(side="request", name=name),
        TOOL_TOPIC.format(side="response", name=name),
        invoke,
        f"tool '{name}' ({spec.runtime})",
        dispatcher.close,
        recorded=True,
        stopping=lambda signum: dispatcher.caller.stop(StopSignal(signum)),
    )


class _ReportingSink(Sink):
    """A hosted tool's sink when its request takes progress: progress and log messages (its
    ``toolctl:progress`` and ``toolctl:log`` lines) go back as partial responses."""

    def __init__(self, base: Sink, reporter: ProgressReporter) -> None:
        self._base, self._reporter = base, reporter

    def event(self, event: Event) -> None:
        self._base.event(event)

    def warning(self, message: str) -> None:
        self._base.warning(message)

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self._reporter.progress(progress, total, message)

    def log(self, level: str, message: str) -> None:
        self._reporter.log(level, message)
