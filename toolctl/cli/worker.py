"""`toolctl worker SERVICE | --tool NAME`: host a tool service on Pulsar, here or detached."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolctl.cli.common import (
    DetachOption,
    PulsarUrlOption,
    ReadyFileOption,
    RegistryOption,
    StrictOption,
    reporter,
    settings_for,
)
from toolctl.terminal.completion import complete_services, complete_tools


def install(app: typer.Typer) -> None:
    app.command("worker")(worker_command)


def worker_command(
    service: Annotated[
        str | None,
        typer.Argument(
            metavar="[SERVICE]",
            help="The Pulsar service to host.",
            autocompletion=complete_services,
        ),
    ] = None,
    tool: Annotated[
        str | None,
        typer.Option(
            "--tool",
            metavar="NAME",
            autocompletion=complete_tools,
            help="Host a registered local, HTTP or container tool instead, on "
            "non-persistent://tg/request/NAME.",
        ),
    ] = None,
    handler: Annotated[
        str | None,
        typer.Option(metavar="MODULE:ATTR", help="Host this handler instead of the service's."),
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option("--concurrency", "-c", min=1, max=1024, metavar="N", help="Calls in flight."),
    ] = 4,
    detach: DetachOption = False,
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
    announce: Annotated[
        bool,
        typer.Option(
            "--announce",
            help="Announce SERVICE and its tools on the announcements topic while serving.",
        ),
    ] = False,
    announce_ttl: Annotated[
        float,
        typer.Option(
            "--announce-ttl",
            metavar="SECONDS",
            min=1,
            max=86400,
            help="Readers drop the announcement this long after the last heartbeat.",
        ),
    ] = 30.0,
    key: Annotated[
        Path | None,
        typer.Option("--key", metavar="FILE", help="Sign the announcements with this key."),
    ] = None,
    ready_file: ReadyFileOption = None,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: Annotated[
        bool, typer.Option("--json", help="With --detach or --stop: print what it did as JSON.")
    ] = False,
) -> None:
    """Serve SERVICE's handler (or --tool NAME) on Pulsar until SIGTERM or Ctrl-C.

    Every worker of a service shares the subscription "SERVICE-request", so they split the
    calls. SIGTERM stops taking calls, lets those in flight answer, and exits 0.
    With --announce the service and its tools are announced (signed with --key) and
    heart-beat every third of --announce-ttl; SIGTERM sends a signed stop first (a
    tombstone when unsigned).
    Exit codes: 0 stopped, 2 bad handler or options, 4 unknown service or tool,
    5 broker unreachable.
    """
    from toolctl.errors import UsageError
    from toolctl.serve import worker
    from toolctl.terminal import render, views

    target = worker.Target(
        service, tool, handler, concurrency, verbose, metrics_port, announce, announce_ttl, key
    )
    settings = settings_for(registry, strict, pulsar_url=pulsar_url)
    label = target.label
    if json and not (stop or detach):  # in the foreground, stdout is the worker's log's
        raise UsageError("--json goes with --detach or --stop")
    if stop:
        stopped = worker.stop_worker(settings, target)
        return views.print_stop(stopped, f"stopped {label}", f"{label}: not running", as_json=json)
    if detach:
        record, started = worker.start_worker(
            settings, target, explicit_registry=bool(registry), strict=strict
        )
        how = "started" if started else "already running"
        line = f"{label} {how} (pid {record.pid}, log {render.display_path(record.log)})"
        return render.outcome(views.started_json(record, started), line, as_json=json)
    worker.run_worker(settings, reporter(settings), target, render.timestamped(label), ready_file)
