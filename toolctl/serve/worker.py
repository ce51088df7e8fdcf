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

import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolctl.processes import ProcessRecord, Stopped
    from toolctl.pulsar.worker import Hosting, Log
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
        command += ["--strict"] if strict else []
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
    return start_detached(settings, target.name, command)


def run_worker(
    settings: Settings, reporter: Reporter, target: Target, log: Log, ready_file: Path | None
) -> None:
    """Serve in the foreground until a signal (see the module docstring)."""
    from toolctl.errors import ToolctlError
    from toolctl.processes import report_failure, report_ready
    from toolctl.processes.lifetime import Lifetime
    from toolctl.pulsar.worker import Worker

    try:
        hosting = _hosting(settings, reporter, target)
        worker = Worker(
            hosting, settings.pulsar_url, target.concurrency, log, verbose=target.verbose
        )
        worker.start()
    except ToolctlError as exc:
        if ready_file is not None:  # a detached worker: the one who started it reads this
            report_failure(ready_file, exc)
        raise
    with Lifetime(clean={signal.SIGTERM}) as lifetime:
        if ready_file is not None:
            report_ready(ready_file)
        reporter.note(
            f"{target.label}: serving {hosting.origin} on {hosting.request_queue} "
            f"(subscription {hosting.subscription}, {target.concurrency} in flight) "
            f"at {settings.pulsar_url}; Ctrl-C or SIGTERM stops it"
        )
        lifetime.wait()
        drained = worker.stop(DRAIN_GRACE)
    log("stopped" if drained else f"stopped; calls still running after {DRAIN_GRACE:g} s")
    lifetime.ended(quiet=True)  # stopped cleanly; the log said so


def _hosting(settings: Settings, reporter: Reporter, target: Target) -> Hosting:
    """What the worker serves: the service's handler, or a registered tool."""
    from toolctl.errors import UsageError
    from toolctl.pulsar.worker import handler_roots, host_service
    from toolctl.registry import open_registry

    registry = open_registry(settings, reporter)
    if target.service is None:
        return _host_tool(settings, registry, str(target.tool), target.concurrency)
    definition = registry.resolve("service", target.service)
    section = definition.data.get("pulsar")
    if not section:
        raise UsageError(
            f"service '{target.service}' is not a Pulsar service",
            hint="a worker hosts [service.pulsar]",
        )
    roots = handler_roots(Path(definition.file), settings.search_path)
    return host_service(target.service, section, roots, target.handler)


def _host_tool(settings: Settings, registry: Registry, name: str, concurrency: int) -> Hosting:
    """A registered local, HTTP or container tool, each request one call through the serve
    Dispatcher (run on the worker's event loop: the handler is async)."""
    from toolctl.calls import resolve
    from toolctl.errors import ToolFailed, UsageError
    from toolctl.pulsar.worker import Hosting
    from toolctl.serve.catalog import Selection
    from toolctl.serve.dispatch import open_dispatcher

    spec = resolve(registry, name)
    if spec.runtime == "pulsar":
        service = spec.data.get("service")
        raise UsageError(
            f"tool '{name}' already runs on Pulsar (service '{service}')",
            hint=f"host its service: 'toolctl worker {service}'",
        )
    selected = Selection(tools=(name,))
    dispatcher = open_dispatcher(settings, selected, concurrency=concurrency, queue=concurrency)
    dispatcher.caller.runner(spec.runtime)  # a runtime nobody provides fails now, not later

    async def invoke(config: dict[str, Any], arguments: dict[str, Any], user: str) -> str:
        result = await dispatcher.call(name, arguments, via="pulsar", user=user)
        if not result.success:
            raise ToolFailed(result.error or "the tool failed")
        return str(result.output)

    return Hosting(
        name,
        TOOL_TOPIC.format(side="request", name=name),
        TOOL_TOPIC.format(side="response", name=name),
        invoke,
        f"tool '{name}' ({spec.runtime})",
        dispatcher.close,
    )
