"""`toolctl broker start|status|stop`: the embedded Pulsar broker (pulsar-lite) for one machine."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolctl.cli.common import JsonOption

if TYPE_CHECKING:
    from toolctl.cli.worker import Stopping
    from toolctl.processes.table import ProcessRecord
    from toolctl.pulsar.broker import BrokerLayout
    from toolctl.settings import Settings


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
        int | None, typer.Option(min=1, max=65535, help="Port on 127.0.0.1 (default 6650).")
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR", help="Data directory (default: the state directory's broker/)."
        ),
    ] = None,
) -> None:
    """Start the broker on 127.0.0.1; print its URL. Already running: say so, exit 0.

    Without --detach it runs until Ctrl-C or SIGTERM. Exit codes: 0 running, 5 it could not
    start (port taken, data directory in use).
    """
    from toolctl.cli.worker import stop_signals
    from toolctl.pulsar import broker
    from toolctl.settings import Settings

    settings = Settings.load()
    where = broker.layout(settings, port, data)
    if detach:
        _start(settings, where)
        return
    with stop_signals() as stopping:
        record = _start(settings, where)
        if record is not None:
            _foreground(settings, record, stopping)


def _start(settings: Settings, where: BrokerLayout) -> ProcessRecord | None:
    """Start the broker and print its URL; the record, or None if it was already running."""
    from toolctl.cli import render
    from toolctl.pulsar import broker

    record, started = broker.start(settings, where)
    if not started:
        render.note(f"the broker is already running (pid {record.pid})")
        typer.echo(record.url)
        return None
    render.note(f"broker started (pid {record.pid}, data {where.data_dir}, log {record.log})")
    typer.echo(record.url)
    return record


def _foreground(settings: Settings, record: ProcessRecord, stopping: Stopping) -> None:
    """Wait for a signal (then stop the broker) or for the broker to end by itself."""
    from toolctl.cli import render
    from toolctl.errors import TransportUnavailable
    from toolctl.pulsar import broker

    render.note("running in the foreground; Ctrl-C or SIGTERM stops it")
    status = None
    while not stopping.event.wait(0.2) and (status := broker.exit_status(record.pid)) is None:
        pass
    broker.stop_broker(settings)
    if status not in (None, 0, -signal.SIGTERM, -signal.SIGINT, -signal.SIGKILL):
        raise TransportUnavailable(
            f"the broker exited with status {status}", hint=f"see its log {record.log}"
        )
    render.note("broker stopped")
    if stopping.signal == signal.SIGINT:
        from toolctl.errors import Interrupted

        raise Interrupted("interrupted", quiet=True)  # stopped cleanly; the note said so


def status_command(json: JsonOption = False) -> None:
    """Whether the broker runs, and where. Exit codes: 0 running, 5 not running."""
    from toolctl.cli import render
    from toolctl.pulsar import broker
    from toolctl.settings import Settings

    record = broker.running(Settings.load())
    answering = record is not None and broker.answers(record, 1)
    status: dict[str, Any] = {"running": record is not None, "answering": answering}
    if record is not None:
        status |= {
            "url": record.url,
            "pid": record.pid,
            "port": record.port,
            "data": broker.data_dir_of(record),
            "log": record.log,
        }
    if json:
        render.print_json(status)
    elif record is None:
        typer.echo("broker: not running")
    else:
        state = "running" if answering else "running, not answering"
        fields = [("state", state), ("url", str(record.url)), ("pid", str(record.pid))]
        render.print_fields("broker", [*fields, ("data", str(status["data"])), ("log", record.log)])
    if not answering:
        from toolctl.errors import TransportUnavailable

        raise TransportUnavailable("the broker does not answer", quiet=True)  # printed above


def stop_command() -> None:
    """Stop the broker toolctl started; stopping one that is not running succeeds."""
    from toolctl.cli.service import report_stop
    from toolctl.pulsar import broker
    from toolctl.settings import Settings

    report_stop(broker.stop_broker(Settings.load()), "broker stopped", "the broker is not running")
