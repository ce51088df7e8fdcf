"""Managed HTTP services: started on a free port on first use, recorded, reused, stopped.

A service whose ``[service.http]`` has ``start`` is *managed* (tool_agent's
ToolStatusManager): the first call that needs it launches it, never through a shell, with
``{port}`` replaced by a free port, ready once ``GET {health}`` answers 2xx, and recorded
so later runs, even from other processes, reuse it. ``launch`` holds the per-name lock, so
two runs racing start it once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolctl.descriptor_env import child_environment, descriptor_cwd, expand_env_map
from toolctl.errors import TransportUnavailable, UsageError
from toolctl.processes.launching import StartFailed, check_origin, launch
from toolctl.processes.probing import HOST, Health, free_port, probe
from toolctl.processes.ready import Healthy
from toolctl.processes.stopping import DRAINING, Stopped, stop
from toolctl.processes.table import ProcessRecord, ProcessTable
from toolctl.settings import Settings

KIND = "service"
REUSE_CHECK_TIMEOUT = 3.0
"""Seconds a recorded service gets to answer its health check; silence means busy, not dead."""
_BIND_FAILURE = re.compile(r"address already in use|eaddrinuse|errno 98", re.IGNORECASE)


@dataclass(frozen=True)
class ManagedService:
    """A managed service's normalised ``[service.http]`` and the directory its cwd is below."""

    name: str
    http: Mapping[str, Any]
    base_dir: Path

    @property
    def origin(self) -> str:
        """Whose service it is: a project's service of the same name is another one."""
        return str(self.base_dir.absolute())

    @property
    def health(self) -> str:
        return "/" + str(self.http.get("health") or "/health").lstrip("/")


def is_managed(service: Mapping[str, Any]) -> bool:
    """Whether a normalised service descriptor is one toolctl starts itself."""
    return bool((service.get("http") or {}).get("start"))


def ensure_running(settings: Settings, service: ManagedService) -> tuple[ProcessRecord, bool]:
    """The running service's record, starting it if needed; True when this call started it."""
    record = ProcessTable(settings).get(service.name)
    if record is not None and _reusable(service, record):
        return record, False
    cwd = descriptor_cwd(f"service '{service.name}'", service.base_dir, service.http.get("cwd"))
    env = {
        "PYTHONUNBUFFERED": "1",  # so a Python service's log tail is there when it dies
        **child_environment(
            settings.environ,
            expand_env_map(service.http.get("env") or {}, settings),
            service.http.get("pass_env") or (),
        ),
    }
    limit = float(service.http.get("startup_timeout") or 30)
    for attempt in (1, 2):  # a port taken between choosing and binding it: once more
        port = free_port()
        url = f"http://{HOST}:{port}"
        argv = [item.replace("{port}", str(port)) for item in service.http["start"]]
        try:
            return launch(
                settings,
                service.name,
                KIND,
                argv,
                Healthy(url + service.health),
                cwd=cwd,
                env=env,
                port=port,
                url=url,
                timeout=limit,
                reuse=lambda running: _reusable(service, running),
                origin=service.origin,
            )
        except StartFailed as failure:
            if attempt == 1 and failure.status is not None and _BIND_FAILURE.search(failure.output):
                continue
            raise _failed(service, url, limit, failure) from failure
    raise AssertionError("unreachable")  # pragma: no cover


def _reusable(service: ManagedService, record: ProcessRecord) -> bool:
    """Whether a running record can serve: the name is a service's and it is not broken."""
    if record.kind != KIND:
        raise UsageError(
            f"service '{service.name}': the name is taken by a running {record.kind} "
            f"(pid {record.pid})",
            hint=f"stop it with 'toolctl service down {service.name}'",
        )
    check_origin(record, service.origin)
    if record.url is None:
        return False
    # no answer in time is a busy service, not a broken one: restarting it would kill the
    # calls it is serving; a refused connection or an error status is broken
    return probe(record.url + service.health, REUSE_CHECK_TIMEOUT) is not Health.DOWN


def _failed(
    service: ManagedService, url: str, limit: float, failure: StartFailed
) -> TransportUnavailable:
    health = url + service.health
    if failure.status is None:
        why = f"did not answer GET {health} with 2xx within {limit:g} s"
    else:
        why = f"exited with status {failure.status} before it answered GET {health}"
    return TransportUnavailable(
        f"service '{service.name}' {why}; its log: {failure.log}",
        hint="fix its start command or health path, then retry",
        details=failure.details,
    )


def stop_all(settings: Settings, grace: float = 5.0) -> list[Stopped]:
    """Stop every recorded process (managed services, the broker, workers), stale ones too:
    servers and workers first (their drain answers calls through the broker and the
    services), the broker last."""
    table = ProcessTable(settings)

    def order(name: str) -> int:
        record = table.read(name)
        kind = record.kind if record is not None else ""
        return 0 if kind in DRAINING else 2 if kind == "broker" else 1

    return [stop(settings, name, grace) for name in sorted(table.names(), key=order)]
