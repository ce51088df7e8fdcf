"""`toolctl service up|down|status`: managed services and the other background processes."""

from __future__ import annotations

from typing import Annotated

import typer

from toolctl.cli.common import (
    JsonOption,
    RegistryOption,
    StrictOption,
    reporter,
    settings_for,
)
from toolctl.terminal.completion import complete_running, complete_services


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
    name: Annotated[
        str, typer.Argument(metavar="NAME", help="The service.", autocompletion=complete_services)
    ],
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Start a managed service (one with `start`) unless it already runs; print its URL.

    For a stdio MCP service: start its kept session (one server session held open in the
    background, reused by every later run) unless it runs.

    Exit codes: 0 running, 2 not a managed service, 4 unknown service, 5 it would not start.
    """
    from toolctl.calls.services import service_up
    from toolctl.terminal import views

    settings = settings_for(registry, strict)
    what, record, started = service_up(settings, reporter(settings), name)
    views.print_started(what, record, started, as_json=json)


def down_command(
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="[NAME]", help="What to stop (see `status`).", autocompletion=complete_running
        ),
    ] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Stop everything: services, the broker, workers.")
    ] = False,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Stop a managed service (or any process `status` lists): SIGTERM, then SIGKILL.

    Stopping what is not running succeeds. Exit 4 when NAME is neither running nor a service.
    """
    from toolctl.calls.services import service_down
    from toolctl.errors import UsageError
    from toolctl.terminal import views

    settings = settings_for(registry, strict)
    if all_ == (name is not None):
        raise UsageError("give a NAME or --all, not both" if all_ else "give a NAME or --all")
    outcomes = service_down(settings, reporter(settings, notes=not json), name)
    views.print_stops(outcomes, name, as_json=json)


def status_command(
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="[NAME]",
            help="Only this one (exit 4 if not running).",
            autocompletion=complete_running,
        ),
    ] = None,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """List what toolctl runs in the background: managed services, the broker, workers."""
    from toolctl.calls.services import service_status
    from toolctl.terminal import views

    settings = settings_for(registry, strict)
    records = service_status(settings, reporter(settings), name)
    views.print_processes(records, as_json=json, color=settings.color)
