"""Launching a background process: once per name, recorded, and only reported up when ready.

``launch`` holds the table's per-name lock while it checks for a running record, starts
the process in its own session (so it and its children form one group that ``stop``
can end), records it (visible to ``service status`` while it starts) and waits until it
is ready. A process that exits, reports a failure or is not ready in time is stopped
with everything it started, its record dropped, and the reason raised.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from toolctl.errors import Interrupted, ToolctlError, TransportUnavailable, UsageError
from toolctl.processes.probing import Health, probe
from toolctl.processes.ready import Healthy, Ready, ReadyFile, ReportedFailure, read_report
from toolctl.processes.stopping import stop_locked, terminate
from toolctl.processes.table import TAG_VARIABLE, ProcessRecord, ProcessTable, log_tail
from toolctl.settings import Settings

Reuse = Callable[[ProcessRecord], bool]
FAILED_STOP_GRACE = 2.0


class StartFailed(TransportUnavailable):
    """A launched process exited or was not ready in time; it is gone, its record too."""

    def __init__(
        self, kind: str, name: str, reason: str, *, status: int | None, log: str, output: str
    ) -> None:
        super().__init__(
            f"{kind} '{name}' {reason}",
            hint=f"see its log {log}",
            details=[f"| {line}" for line in output.splitlines()[-12:]],
        )
        self.reason, self.status, self.log, self.output = reason, status, log, output


def launch(
    settings: Settings,
    name: str,
    kind: str,
    argv: Sequence[str],
    ready: Ready,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    port: int | None = None,
    url: str | None = None,
    timeout: float = 30.0,
    reuse: Reuse | None = None,
    origin: str | None = None,
    drain: float | None = None,
) -> tuple[ProcessRecord, bool]:
    """Start ``argv`` as background process ``name`` unless it runs; (record, started now).

    A running record is kept if ``reuse`` (default: always) accepts it, else stopped and
    replaced; one of another ``origin`` is neither (``check_origin``). Raises StartFailed,
    the process's ReportedFailure, Interrupted, or UsageError.
    """
    table = ProcessTable(settings)
    with table.lock(name):
        current = table.get(name)
        if current is not None:
            check_origin(current, origin)
            if reuse is None or reuse(current):
                return current, False
            stop_locked(table, name, FAILED_STOP_GRACE)
        spec = _Spec(name, kind, list(argv), ready, cwd, env, port, url, timeout, origin, drain)
        return _start(table, spec), True


def launch_detached(
    settings: Settings,
    name: str,
    kind: str,
    command: Sequence[str],
    *,
    url: str | None = None,
    port: int | None = None,
    timeout: float = 30.0,
    origin: str | None = None,
    drain: float | None = None,
) -> tuple[ProcessRecord, bool]:
    """Run a toolctl ``command`` in the background unless ``name`` runs; (record, started now).

    The child gets ``--ready-file`` and reports there once it serves, or why it cannot (its
    own error and exit code come back as a ReportedFailure). A child that dies before it
    could report (a bad option, a crash) keeps its exit code too.
    """
    ready = ProcessTable(settings).ready_path(name)
    try:
        return launch(
            settings,
            name,
            kind,
            [*command, "--ready-file", str(ready)],
            ReadyFile(ready),
            cwd=os.getcwd(),
            port=port,
            url=url,
            timeout=timeout,
            origin=origin,
            drain=drain,
        )
    except StartFailed as failure:
        if failure.status is None or failure.status <= 0:
            raise
        error = ReportedFailure(failure.message, exit_code=failure.status, hint=failure.hint)
        error.details = failure.details
        raise error from failure


@dataclass(frozen=True)
class _Spec:
    name: str
    kind: str
    argv: list[str]
    ready: Ready
    cwd: str | None
    env: Mapping[str, str] | None
    port: int | None
    url: str | None
    timeout: float
    origin: str | None
    drain: float | None = None


def check_origin(running: ProcessRecord, origin: str | None) -> None:
    """UsageError when ``running`` is another project's process of the same name (a
    service, worker or server of another registry): neither reused for this one, which
    would answer from the other's tools, nor stopped, which would break the other."""
    if origin is None or running.origin in (None, origin):
        return
    raise UsageError(
        f"{running.kind} '{running.name}' already runs for another registry "
        f"({running.origin}, pid {running.pid})",
        hint=f"stop it first (toolctl service down {running.name})"
        + ("; or give this one another --name" if running.kind == "serve" else ""),
    )


def registry_origin(settings: Settings) -> str:
    """The origin of a worker or server: the registry search path it reads."""
    return os.pathsep.join(str(directory.absolute()) for directory in settings.search_path)


def _start(table: ProcessTable, spec: _Spec) -> ProcessRecord:
    log = table.log_path(spec.name)
    where = f" on port {spec.port}" if spec.port else ""
    # yours alone: a service's stderr may print the secrets its ${env:} gave it
    with open(
        os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "a", encoding="utf-8"
    ) as handle:
        os.fchmod(handle.fileno(), 0o600)  # (a log from before was made 0644)
        handle.write(
            f"--- toolctl {time.strftime('%Y-%m-%d %H:%M:%S')}: starting {spec.kind} "
            f"{spec.name}{where}: {spec.argv}\n"
        )
        offset = handle.tell()
    if isinstance(spec.ready, ReadyFile):
        spec.ready.path.unlink(missing_ok=True)
    tag = f"{spec.name}-{secrets.token_hex(8)}"
    child = _spawn(spec, log, tag)
    record = ProcessRecord.of(
        spec.name,
        spec.kind,
        child.pid,
        spec.argv,
        str(log),
        port=spec.port,
        url=spec.url,
        tag=tag,
        origin=spec.origin,
        drain=spec.drain,
    )
    table.put(record)
    try:
        failure = _wait_ready(child, spec)
    except KeyboardInterrupt as exc:
        _discard(table, spec.name, child, tag)
        raise Interrupted(f"interrupted while starting {spec.kind} '{spec.name}'") from exc
    except BaseException:  # SIGTERM's exception, or a bug: nothing half-started stays behind
        _discard(table, spec.name, child, tag)
        raise
    if isinstance(spec.ready, ReadyFile):
        spec.ready.path.unlink(missing_ok=True)
    if failure is None:
        return record
    _discard(table, spec.name, child, tag)
    if isinstance(failure, ToolctlError):
        raise failure
    reason, status = failure
    output = log_tail(log, 40, since=offset)
    raise StartFailed(spec.kind, spec.name, reason, status=status, log=str(log), output=output)


def _spawn(spec: _Spec, log: Path, tag: str) -> subprocess.Popen[bytes]:
    env = {**(os.environ if spec.env is None else spec.env), TAG_VARIABLE: tag}
    try:
        with open(log, "ab") as output:
            return subprocess.Popen(
                spec.argv,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                cwd=spec.cwd,
                env=env,
                start_new_session=True,  # its own group: stop ends it and all it started
            )
    except (FileNotFoundError, PermissionError) as exc:
        raise TransportUnavailable(
            f"{spec.kind} '{spec.name}': cannot start '{spec.argv[0]}': {exc.strerror}",
            hint=f"install it or fix the {spec.kind}'s start command",
        ) from exc


def _wait_ready(
    child: subprocess.Popen[bytes], spec: _Spec
) -> ToolctlError | tuple[str, int | None] | None:
    """None once ready; else the child's reported error, or (why, exit status or None)."""
    deadline = time.monotonic() + spec.timeout
    delay = 0.005
    while True:
        verdict = _is_ready(spec.ready, max(0.05, min(1.0, deadline - time.monotonic())))
        if verdict is True:
            return None
        if isinstance(verdict, ToolctlError):
            return verdict
        code = child.poll()
        if code is not None:
            late = _is_ready(spec.ready, 0.05)  # it may have reported, then exited
            if isinstance(late, ToolctlError):
                return late
            return f"exited with status {code} before it was ready", code
        if time.monotonic() >= deadline:
            return f"was not ready within {spec.timeout:g} s", None
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def _is_ready(ready: Ready, timeout: float) -> ToolctlError | bool:
    if isinstance(ready, Healthy):
        return probe(ready.url, timeout) is Health.UP
    return read_report(ready.path)


def _discard(table: ProcessTable, name: str, child: subprocess.Popen[bytes], tag: str) -> None:
    """Stop a process that did not get ready, with its tree and all that carries its
    ``tag`` (what it started in a session of its own, orphaned once it exited); reap it;
    forget its record."""
    terminate(child.pid, FAILED_STOP_GRACE, tag)
    with suppress(subprocess.TimeoutExpired):
        child.wait(timeout=FAILED_STOP_GRACE)
    table.remove(name)
