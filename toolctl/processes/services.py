"""Managed HTTP services: started on a free port on first use, recorded, reused, stopped.

A service whose ``[service.http]`` has ``start`` is *managed* (tool_agent's
ToolStatusManager): the first call that needs it starts it, never through a shell, with
``{port}`` replaced by a free port, waits until ``GET {health}`` answers 2xx, and records
it in the ProcessTable so later runs, even from other processes, reuse it. Starting holds
the per-name start lock, so two runs racing start it once.
"""

from __future__ import annotations

import re
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolctl.descriptor_env import descriptor_cwd, expand_env_map
from toolctl.errors import Interrupted, TransportUnavailable, UsageError
from toolctl.processes.table import ProcessRecord, ProcessTable, spawn, stop
from toolctl.settings import Settings

KIND = "service"
HOST = "127.0.0.1"
REUSE_CHECK_TIMEOUT = 3.0
"""Seconds a recorded service gets to answer its health check; silence means busy, not dead."""
_BIND_FAILURE = re.compile(r"address already in use|eaddrinuse|errno 98", re.IGNORECASE)
_LOG_TAIL_LINES = 12


@dataclass(frozen=True)
class ManagedService:
    """A managed service's normalised ``[service.http]`` and the directory its cwd is below."""

    name: str
    http: Mapping[str, Any]
    base_dir: Path

    @property
    def health(self) -> str:
        return "/" + str(self.http.get("health") or "/health").lstrip("/")


def is_managed(service: Mapping[str, Any]) -> bool:
    """Whether a normalised service descriptor is one toolctl starts itself."""
    return bool((service.get("http") or {}).get("start"))


def ensure_running(settings: Settings, service: ManagedService) -> tuple[ProcessRecord, bool]:
    """The running service's record, starting it if needed; True when this call started it."""
    table = ProcessTable(settings)
    record = _usable(table, service)
    if record is not None:
        return record, False
    with table.starting(service.name):
        record = _usable(table, service)  # whoever held the lock before us may have started it
        if record is not None:
            return record, False
        stale = table.get(service.name)
        if stale is not None:
            stop(stale.pid)
            table.remove(service.name)
        return _start(table, service, settings), True


def _usable(table: ProcessTable, service: ManagedService) -> ProcessRecord | None:
    record = table.get(service.name)
    if record is None:
        return None
    if record.kind != KIND:
        raise UsageError(
            f"service '{service.name}': the name is taken by a running {record.kind} "
            f"(pid {record.pid})",
            hint=f"stop it with 'toolctl service down {service.name}'",
        )
    if record.url is None:
        return None
    # no answer in time is a busy service, not a broken one: restarting it would kill the
    # calls it is serving; a refused connection or an error status is broken
    verdict = probe(record.url + service.health, REUSE_CHECK_TIMEOUT)
    return None if verdict is False else record


def _start(table: ProcessTable, service: ManagedService, settings: Settings) -> ProcessRecord:
    """Start the service, retrying once on a new port if the first one was taken meanwhile."""
    cwd = _cwd(service)
    env = {
        "PYTHONUNBUFFERED": "1",  # so a Python service's log tail is there when it dies
        **settings.environ,
        **expand_env_map(service.http.get("env") or {}, settings),
    }
    for attempt in (1, 2):
        record, offset, child = _spawn(table, service, cwd, env)
        failure = _wait_healthy(table, service, record, child)
        if failure is None:
            return record
        stop(child.pid, grace=2.0)
        child.wait()
        table.remove(service.name)
        tail = _log_since(record.log, offset)
        if attempt == 1 and child.returncode is not None and _BIND_FAILURE.search(tail):
            continue
        raise TransportUnavailable(
            f"service '{service.name}' {failure}; its log: {record.log}",
            hint="fix its start command or health path, then retry",
            details=[f"| {line}" for line in tail.splitlines()[-_LOG_TAIL_LINES:]],
        )
    raise AssertionError("unreachable")  # pragma: no cover


def _spawn(
    table: ProcessTable, service: ManagedService, cwd: str | None, env: Mapping[str, str]
) -> tuple[ProcessRecord, int, subprocess.Popen[bytes]]:
    port = free_port()
    argv = [item.replace("{port}", str(port)) for item in service.http["start"]]
    log = table.log_path(service.name)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(
            f"--- toolctl {time.strftime('%Y-%m-%d %H:%M:%S')}: starting service "
            f"{service.name} on port {port}: {argv}\n"
        )
        offset = handle.tell()
    try:
        child = spawn(argv, log=log, cwd=cwd, env=env)
    except (FileNotFoundError, PermissionError) as exc:
        raise TransportUnavailable(
            f"service '{service.name}': cannot start '{argv[0]}': {exc.strerror}",
            hint="install it or fix the service's start command",
        ) from exc
    record = ProcessRecord(
        service.name, KIND, child.pid, argv, str(log), port=port, url=f"http://{HOST}:{port}"
    )
    table.put(record)  # visible to `service status` (and `down`) while it starts
    return record, offset, child


def _wait_healthy(
    table: ProcessTable,
    service: ManagedService,
    record: ProcessRecord,
    child: subprocess.Popen[bytes],
) -> str | None:
    """Poll health until 2xx; the reason it failed, or None once it answers."""
    assert record.url is not None
    url = record.url + service.health
    limit = float(service.http.get("startup_timeout") or 30)
    deadline = time.monotonic() + limit
    delay = 0.01
    try:
        while True:
            code = child.poll()
            if code is not None:
                return f"exited with status {code} before it answered GET {url}"
            if answers(url, min(1.0, max(0.05, deadline - time.monotonic()))):
                return None
            if time.monotonic() >= deadline:
                return f"did not answer GET {url} with 2xx within {limit:g} s"
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
    except KeyboardInterrupt as exc:
        stop(child.pid, grace=2.0)
        table.remove(service.name)
        raise Interrupted(f"interrupted while starting service '{service.name}'") from exc


def answers(url: str, timeout: float) -> bool:
    """Whether ``GET url`` (plain http on loopback) answers 2xx within ``timeout`` seconds."""
    return probe(url, timeout) is True


def probe(url: str, timeout: float) -> bool | None:
    """``GET url``: True on 2xx, False on another status or no connection, None on no answer."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or HOST, parts.port, timeout=timeout)
    try:
        connection.request("GET", parts.path or "/")
        return 200 <= connection.getresponse().status < 300
    except TimeoutError:
        return None
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def free_port() -> int:
    """A port nobody listens on right now (another process may take it before we do)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def stop_process(settings: Settings, name: str) -> ProcessRecord | None:
    """Stop one recorded process (any kind) and forget it; None when none was running."""
    table = ProcessTable(settings)
    with table.starting(name):
        record = table.get(name)
        if record is None:
            return None
        stop(record.pid)
        table.remove(name)
        return record


def stop_all(settings: Settings) -> list[ProcessRecord]:
    """Stop every recorded process: managed services, the broker, workers."""
    stopped = []
    for record in ProcessTable(settings).all():
        if (done := stop_process(settings, record.name)) is not None:
            stopped.append(done)
    return stopped


def _cwd(service: ManagedService) -> str | None:
    return descriptor_cwd(f"service '{service.name}'", service.base_dir, service.http.get("cwd"))


def _log_since(path: str, offset: int) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            return handle.read()[-16384:].decode("utf-8", errors="replace")
    except OSError:
        return ""
