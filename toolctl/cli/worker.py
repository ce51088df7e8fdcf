"""`toolctl worker SERVICE | --tool NAME`: host a tool service on Pulsar, here or detached."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolctl.cli.common import RegistryOption, StrictOption, settings_for

if TYPE_CHECKING:
    from toolctl.pulsar.worker import Hosting, Log, Worker
    from toolctl.records.recorder import Recorder
    from toolctl.registry.index import Registry
    from toolctl.settings import Settings

PulsarUrlOption = Annotated[
    str | None,
    typer.Option(
        "--pulsar-url",
        metavar="URL",
        help="Pulsar broker (default $TOOLCTL_PULSAR_URL or pulsar://localhost:6650).",
    ),
]
TOOL_TOPIC = "non-persistent://tg/{side}/{name}"
"""Where `worker --tool NAME` serves: TrustGraph's own DynamicToolService topic layout."""
DRAIN_GRACE = 10.0
"""Seconds a stopping worker gives the calls in flight to answer."""


def install(app: typer.Typer) -> None:
    app.command("worker")(worker_command)


def worker_command(
    service: Annotated[
        str | None, typer.Argument(metavar="[SERVICE]", help="The Pulsar service to host.")
    ] = None,
    tool: Annotated[
        str | None,
        typer.Option(
            "--tool",
            metavar="NAME",
            help="Host a registered local, HTTP or container tool instead, on "
            "non-persistent://tg/request/NAME.",
        ),
    ] = None,
    handler: Annotated[
        str | None,
        typer.Option(metavar="MODULE:ATTR", help="Host this handler instead of the service's."),
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, max=1024, help="Calls in flight.")
    ] = 4,
    detach: Annotated[
        bool, typer.Option("--detach", help="Run in the background; return once it serves.")
    ] = False,
    stop: Annotated[
        bool, typer.Option("--stop", help="Stop the detached worker (drains its calls).")
    ] = False,
    pulsar_url: PulsarUrlOption = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log every call on stderr.")
    ] = False,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            "--metrics-port",
            metavar="PORT",
            min=0,
            max=65535,
            help="Serve Prometheus metrics at http://127.0.0.1:PORT/metrics.",
        ),
    ] = None,
    ready_file: Annotated[Path | None, typer.Option(hidden=True)] = None,
    registry: RegistryOption = None,
    strict: StrictOption = False,
) -> None:
    """Serve SERVICE's handler (or --tool NAME) on Pulsar until SIGTERM or Ctrl-C.

    Every worker of a service shares the subscription "SERVICE-request", so they split the
    calls. SIGTERM stops taking calls, lets those in flight answer, and exits 0.
    Exit codes: 0 stopped, 2 bad handler or options, 4 unknown service or tool,
    5 broker unreachable.
    """
    from toolctl.cli import render
    from toolctl.errors import UsageError

    if (service is None) == (tool is None):
        raise UsageError("give a SERVICE or --tool NAME (one of them)")
    settings = settings_for(registry, strict, pulsar_url=pulsar_url)
    target = Target(service, tool, handler, concurrency, verbose, metrics_port)
    if stop:
        from toolctl.cli.service import report_stop
        from toolctl.processes import stop as stop_process

        # SIGTERM lets it drain for DRAIN_GRACE s; SIGKILL a little after that
        stopped = stop_process(settings, target.name, DRAIN_GRACE + 2)
        report_stop(stopped, f"stopped {target.label}", f"{target.label}: not running")
    elif detach:
        from toolctl.pulsar.worker import start_detached

        command = target.argv(settings, explicit_registry=bool(registry), strict=strict)
        record, started = start_detached(settings, target.name, command)
        how = "started" if started else "already running"
        log = render.display_path(record.log)
        render.note(f"{target.label} {how} (pid {record.pid}, log {log})")
    else:
        _serve(settings, target, ready_file)


@dataclass(frozen=True)
class Target:
    """What one `toolctl worker` line hosts, and how."""

    service: str | None
    tool: str | None
    handler: str | None
    concurrency: int
    verbose: bool
    metrics_port: int | None = None

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
        for directory in settings.search_path if explicit_registry else ():
            command += ["--registry", str(directory)]
        return command


def _serve(settings: Settings, target: Target, ready_file: Path | None) -> None:
    """Serve in the foreground until SIGTERM (exit 0) or Ctrl-C (exit 130)."""
    from toolctl.cli import render
    from toolctl.errors import ToolctlError
    from toolctl.processes import report_failure, report_ready
    from toolctl.pulsar.worker import Worker

    try:
        log = _logger(target.label)
        recorder = _recorder(settings, target, log)
        hosting = _hosting(settings, target, recorder)
        worker = Worker(
            hosting,
            settings.pulsar_url,
            target.concurrency,
            log,
            verbose=target.verbose,
            recorder=recorder,
        )
        worker.start()
        metrics_server = _serve_metrics(recorder, target, hosting.request_queue, worker)
    except ToolctlError as exc:
        if ready_file is not None:  # a detached worker: the one who started it reads this
            report_failure(ready_file, exc)
        raise
    with stop_signals() as stopping:
        if ready_file is not None:
            report_ready(ready_file)
        render.note(
            f"{target.label}: serving {hosting.origin} on {hosting.request_queue} "
            f"(subscription {hosting.subscription}, {target.concurrency} in flight) "
            f"at {settings.pulsar_url}; Ctrl-C or SIGTERM stops it"
        )
        stopping.wait_forever()
        drained = worker.stop(DRAIN_GRACE)
        if metrics_server is not None:
            metrics_server.shutdown()
    log("stopped" if drained else f"stopped; calls still running after {DRAIN_GRACE:g} s")
    if stopping.signal == signal.SIGINT:
        from toolctl.errors import Interrupted

        raise Interrupted("interrupted", quiet=True)  # stopped cleanly; the log said so


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


def _hosting(settings: Settings, target: Target, recorder: Recorder) -> Hosting:
    """What the worker serves: the service's handler, or a registered tool's runner."""
    from toolctl.cli.common import open_registry
    from toolctl.errors import UsageError
    from toolctl.pulsar.worker import handler_roots, host_service

    registry = open_registry(settings)
    if target.service is None:
        return _host_tool(registry, settings, str(target.tool), recorder)
    definition = registry.resolve("service", target.service)
    section = definition.data.get("pulsar")
    if not section:
        raise UsageError(
            f"service '{target.service}' is not a Pulsar service",
            hint="a worker hosts [service.pulsar]",
        )
    roots = handler_roots(Path(definition.file), settings.search_path)
    return host_service(target.service, section, roots, target.handler)


def _host_tool(registry: Registry, settings: Settings, name: str, recorder: Recorder) -> Hosting:
    """A registered local, HTTP or container tool, called through calls.py as the handler
    (which records the call, under the request's origin)."""
    from toolctl.calls import Caller, resolve
    from toolctl.errors import ToolFailed, UsageError
    from toolctl.pulsar.worker import Hosting
    from toolctl.records.context import CURRENT_ORIGIN

    spec = resolve(registry, name)
    if spec.runtime == "pulsar":
        service = spec.data.get("service")
        raise UsageError(
            f"tool '{name}' already runs on Pulsar (service '{service}')",
            hint=f"host its service: 'toolctl worker {service}'",
        )
    caller = Caller(settings, registry, recorder=recorder)
    caller.runner(spec.runtime)  # a runtime nobody provides fails now, not at the first call

    def invoke(config: dict[str, Any], arguments: dict[str, Any], user: str) -> str:
        result = caller.call(spec, arguments, user=user, origin=CURRENT_ORIGIN.get())
        if not result.success:
            raise ToolFailed(result.error or "the tool failed")
        return str(result.output)

    return Hosting(
        name,
        TOOL_TOPIC.format(side="request", name=name),
        TOOL_TOPIC.format(side="response", name=name),
        invoke,
        f"tool '{name}' ({spec.runtime})",
        caller.close,
        recorded=True,
    )


def _logger(label: str) -> Log:
    import time

    def log(message: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        sys.stderr.write(f"{stamp} toolctl {label}: {message}\n")
        sys.stderr.flush()

    return log


class Stopping:
    """Set by SIGTERM or SIGINT; a second signal ends the process at once."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal: int | None = None

    def handle(self, signum: int, _frame: object) -> None:
        if self.event.is_set():
            from toolctl.cli import _exit

            # at once, skipping the pulsar client's teardown (which could abort), but with
            # the calls' records written (a stop may deliver SIGTERM twice in a row)
            _exit(128 + signum)
        self.signal = signum
        self.event.set()

    def wait_forever(self) -> None:
        while not self.event.wait(0.5):  # a timeout keeps the main thread responsive
            pass


@contextmanager
def stop_signals() -> Iterator[Stopping]:
    """Turn SIGTERM and SIGINT into a Stopping event for the duration of the block."""
    stopping = Stopping()
    previous = {sig: signal.signal(sig, stopping.handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stopping
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
