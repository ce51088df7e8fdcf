"""`toolctl service up|down|status`: managed services and the other background processes."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from toolctl.cli.common import JsonOption, RegistryOption, StrictOption, settings_for

if TYPE_CHECKING:
    from toolctl.processes import Stopped
    from toolctl.processes.table import ProcessRecord
    from toolctl.settings import Settings

NameArgument = Annotated[str, typer.Argument(metavar="NAME", help="The service.")]


def install(app: typer.Typer) -> None:
    group = typer.Typer(
        name="service",
        help="Start, stop and show managed services (and the broker and workers).",
        no_args_is_help=True,
    )
    group.command("up")(up_command)
    group.command("down")(down_command)
    group.command("status")(status_command)
    app.add_typer(group)


def up_command(
    name: NameArgument,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Start a managed service (one with `start`) unless it already runs; print its URL.

    For a stdio MCP service: start its kept session (one server session held open in the
    background, reused by every later run) unless it runs.

    Exit codes: 0 running, 2 not a managed service, 4 unknown service, 5 it would not start.
    """
    from toolctl.cli import render
    from toolctl.cli.common import open_registry
    from toolctl.processes.services import ManagedService, ensure_running

    settings = settings_for(registry, strict)
    definition = open_registry(settings).resolve("service", name)
    if definition.data.get("transport") == "mcp":
        from toolctl.mcp.kept import keep

        record, started = keep(settings, definition)
        how = "started" if started else "already running"
        render.note(
            f"kept session of MCP service '{name}' {how} at {record.url} "
            f"(pid {record.pid}, log {record.log})"
        )
        render.print_json(_row_json(record)) if json else typer.echo(record.url)
        return
    _require_managed(definition.data)
    from pathlib import Path

    service = ManagedService(name, definition.data["http"], Path(definition.file).parent)
    record, started = ensure_running(settings, service)
    how = "started" if started else "already running"
    render.note(f"service '{name}' {how} at {record.url} (pid {record.pid}, log {record.log})")
    render.print_json(_row_json(record)) if json else typer.echo(record.url)


def down_command(
    name: Annotated[
        str | None, typer.Argument(metavar="[NAME]", help="What to stop (see `status`).")
    ] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Stop everything: services, the broker, workers.")
    ] = False,
    registry: RegistryOption = None,
    strict: StrictOption = False,
) -> None:
    """Stop a managed service (or any process `status` lists): SIGTERM, then SIGKILL.

    Stopping what is not running succeeds. Exit 4 when NAME is neither running nor a service.
    """
    from toolctl.cli import render
    from toolctl.errors import UsageError
    from toolctl.processes import stop
    from toolctl.processes.services import stop_all

    settings = settings_for(registry, strict)
    if all_ == (name is not None):
        raise UsageError("give a NAME or --all (not both)")
    if name is None:
        outcomes = stop_all(settings)
        for each in outcomes:
            report_stop(each, f"stopped {_kind(each)} '{each.name}'", None)
        if not any(each.stopped or each.stale for each in outcomes):
            render.note("nothing was running")
        return
    stopped = stop(settings, name)
    if not (stopped.stopped or stopped.stale):
        _known_service(settings, name)  # nothing ran: exit 4 unless it is a service
    report_stop(stopped, f"stopped {_kind(stopped)} '{name}'", f"service '{name}' was not running")


def report_stop(stopped: Stopped, done: str, absent: str | None) -> None:
    """Say on stderr what a stop did: stopped (pid), found a stale record, or nothing ran."""
    from toolctl.cli import render

    record = stopped.record
    if record is not None and stopped.stale:
        render.warn(
            f"dropped the stale record of {record.kind} '{record.name}': pid {record.pid} "
            "now belongs to another process; nothing was stopped"
        )
    elif record is not None and stopped.stopped:
        render.note(f"{done} (pid {record.pid})")
        if stopped.survivors:
            pids = ", ".join(str(pid) for pid in stopped.survivors)
            render.warn(f"{record.kind} '{record.name}': still running after SIGKILL: {pids}")
    elif absent is not None:
        render.note(absent)


def _kind(stopped: Stopped) -> str:
    return stopped.record.kind if stopped.record is not None else "process"


def status_command(
    name: Annotated[
        str | None, typer.Argument(metavar="[NAME]", help="Only this one (exit 4 if not running).")
    ] = None,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """List what toolctl runs in the background: managed services, the broker, workers."""
    from toolctl.cli import render
    from toolctl.processes.table import ProcessTable

    settings = settings_for(registry, strict)
    table = ProcessTable(settings)
    records = sorted(table.all(), key=lambda r: (r.kind, r.name))
    if name is not None:
        records = [r for r in records if r.name == name]
        if not records:
            _not_running(settings, name)
    if json:
        render.print_json([_row_json(r) for r in records])
        return
    rows = [_row(r) for r in records]
    render.print_table(["KIND", "NAME", "PID", "URL", "UPTIME", "LOG"], rows, color=settings.color)


def _require_managed(service: dict[str, Any]) -> None:
    from toolctl.errors import UsageError
    from toolctl.processes.services import is_managed
    from toolctl.runtimes import BY_NAME

    if is_managed(service):
        return
    transport = service["transport"]
    message, hint = BY_NAME[transport].not_managed
    fields = {**(service.get(transport) or {}), "name": service["name"]}
    raise UsageError(message.format(**fields), hint=hint.format(**fields) or None)


def _known_service(settings: Settings, name: str) -> dict[str, Any]:
    """The service's descriptor; NotFound (exit 4) unless ``name`` is in the registry."""
    from toolctl.cli.common import open_registry

    return open_registry(settings).resolve("service", name).data


def _not_running(settings: Settings, name: str) -> NoReturn:
    from toolctl.errors import NotFound
    from toolctl.processes.services import is_managed

    managed = is_managed(_known_service(settings, name))
    hint = f"start it with 'toolctl service up {name}'" if managed else "it is not managed"
    raise NotFound("running process", name, hint=hint)


def _row_json(record: ProcessRecord) -> dict[str, Any]:
    shown = {k: v for k, v in record.to_json().items() if k not in ("start_time", "boot_id")}
    return {**shown, "uptime_s": round(time.time() - record.started, 1)}


def _row(record: ProcessRecord) -> list[str]:
    from toolctl.cli import render

    where = record.url or (f"port {record.port}" if record.port else "")
    return [
        record.kind,
        record.name,
        str(record.pid),
        where,
        _uptime(time.time() - record.started),
        render.display_path(record.log),
    ]


def _uptime(seconds: float) -> str:
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
