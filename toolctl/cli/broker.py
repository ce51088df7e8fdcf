"""`toolctl broker start|status|stop`: the embedded Pulsar broker (pulsar-lite) for one machine."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from toolctl.cli.common import JsonOption, reporter


def install(app: typer.Typer) -> None:
    group = typer.Typer(
        name="broker",
        help="Start, stop and show the embedded Pulsar broker (pulsar-lite) for one machine.",
        no_args_is_help=True,
    )
    group.command("start")(start_command)
    group.command("status")(status_command)
    group.command("stop")(stop_command)
    app.add_typer(group)


def start_command(
    detach: Annotated[
        bool, typer.Option("--detach", help="Run in the background; return once it listens.")
    ] = False,
    port: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=65535,
            metavar="PORT",
            help="Port on 127.0.0.1 (default: the Pulsar URL's, 6650).",
        ),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR", help="Data directory (default: the state directory's broker/)."
        ),
    ] = None,
    json: JsonOption = False,
) -> None:
    """Start the broker on 127.0.0.1; print its URL. Already running: say so, exit 0.

    Without --detach it runs until Ctrl-C or SIGTERM. Exit codes: 0 running, 2 a broker
    runs on another --port or with another --data, 5 it could not start (port taken, data
    directory in use).
    """
    from toolctl.pulsar import broker
    from toolctl.settings import Settings
    from toolctl.terminal import render, views

    def announce(record: Any, started: bool) -> None:  # a processes.ProcessRecord
        if json:
            render.print_json(views.started_json(record, started))
            sys.stdout.flush()  # in the foreground: before the broker runs
        else:
            typer.echo(record.url)

    settings = Settings.load()
    where = broker.layout(settings, port, data)
    told = reporter(notes=not json)
    broker.run_broker(settings, told, where, detach=detach, announce=announce)


def status_command(json: JsonOption = False) -> None:
    """Whether the broker runs, and where. Exit codes: 0 running, 5 not running."""
    from toolctl.pulsar.broker import broker_status
    from toolctl.settings import Settings
    from toolctl.terminal import views

    status = broker_status(Settings.load())
    views.print_broker_status(status, as_json=json)
    if not status["answering"]:
        from toolctl.errors import TransportUnavailable

        raise TransportUnavailable("the broker does not answer", quiet=True)  # printed above


def stop_command(json: JsonOption = False) -> None:
    """Stop the broker toolctl started; stopping one that is not running succeeds."""
    from toolctl.pulsar import broker
    from toolctl.settings import Settings
    from toolctl.terminal import views

    stopped = broker.stop_broker(Settings.load())
    views.print_stop(stopped, "broker stopped", "the broker is not running", as_json=json)
