"""`toolctl mcp serve`: the registry as an MCP server on stdio."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from toolctl.cli.common import RegistryOption, StrictOption, settings_for

if TYPE_CHECKING:
    from toolctl.serve.catalog import Selection
    from toolctl.serve.dispatch import Dispatcher
    from toolctl.settings import Settings

GroupOption = Annotated[
    list[str] | None,
    typer.Option("--group", "-g", metavar="GROUP", help="Serve this group's tools."),
]
ToolOption = Annotated[
    list[str] | None,
    typer.Option("--tool", "-t", metavar="NAME", help="Serve this tool."),
]
ActionOption = Annotated[
    list[str] | None,
    typer.Option(
        "--action",
        "-a",
        metavar="ACTION",
        help="Serve the tools `recommend` gives from this start action.",
    ),
]
HopsOption = Annotated[int, typer.Option(min=0, help="With --action: rounds of Next edges.")]
ThresholdOption = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="With --action: lowest edge score followed.")
]
ConcurrencyOption = Annotated[
    int, typer.Option(min=1, max=1024, help="Calls running at once; more wait in a queue.")
]
PulsarOption = Annotated[
    str | None,
    typer.Option("--pulsar-url", metavar="URL", help="Pulsar broker for Pulsar tools."),
]


def install(app: typer.Typer) -> None:
    group = typer.Typer(name="mcp", help="Serve the registry to MCP clients.", no_args_is_help=True)
    group.command("serve")(serve_command)
    app.add_typer(group)


def serve_command(
    group: GroupOption = None,
    tool: ToolOption = None,
    action: ActionOption = None,
    hops: HopsOption = 0,
    threshold: ThresholdOption = 0.5,
    concurrency: ConcurrencyOption = 8,
    pulsar_url: PulsarOption = None,
    registry: RegistryOption = None,
    strict: StrictOption = False,
) -> None:
    """Serve the tools in force (or a --group, --tool or --action selection) over MCP on
    stdin/stdout, until stdin closes.

    tools/list is `export --format mcp` of the selection; tools/call runs the tool with its
    validation and timeout; the list is re-sent (list_changed) when the registry changes.
    Only protocol goes to stdout; one JSON line per call goes to stderr. Exit codes: 0 stdin
    closed, 2 bad option, 3 registry refused (--strict), 4 unknown group, tool or action,
    143/130 terminated (every call's processes are killed first).
    """
    import anyio

    from toolctl.serve.mcp_server import ToolServer, serve_stdio

    settings = settings_for(registry, strict, pulsar_url=pulsar_url)
    dispatcher = open_front(settings, selection(group, tool, action, hops, threshold), concurrency)
    stop_on_signals(dispatcher)
    try:
        anyio.run(serve_stdio, ToolServer(dispatcher))
    finally:
        dispatcher.close()


def selection(
    group: list[str] | None,
    tool: list[str] | None,
    action: list[str] | None,
    hops: int,
    threshold: float,
) -> Selection:
    from toolctl.errors import UsageError
    from toolctl.serve.catalog import Selection

    if (hops or threshold != 0.5) and not action:
        raise UsageError("--hops and --threshold go with --action")
    return Selection(tuple(group or ()), tuple(tool or ()), tuple(action or ()), hops, threshold)


def open_front(
    settings: Settings, chosen: Selection, concurrency: int, queue: int | None = None
) -> Dispatcher:
    """The dispatcher for a server, after the warnings a command gives about the registry."""
    from toolctl.cli import render
    from toolctl.cli.common import open_registry
    from toolctl.serve.dispatch import open_dispatcher

    open_registry(settings, full=True)  # warns about skipped files, enforces --strict
    dispatcher = open_dispatcher(
        settings,
        chosen,
        concurrency=concurrency,
        queue=64 * concurrency if queue is None else queue,
        log=log_line,
    )
    for warning in dispatcher.catalog.snapshot.warnings:
        render.warn(warning)
    sdk_logs_as_lines()
    import gc

    gc.freeze()  # what start-up built lives to the end: keep it out of every GC pass
    return dispatcher


def sdk_logs_as_lines() -> None:
    """The MCP SDK's and uvicorn's warnings as one stderr line each, never a traceback."""
    import logging

    class OneLine(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return f"toolctl: {record.name}: {record.getMessage()}"

    handler = logging.StreamHandler()
    handler.setFormatter(OneLine())
    for name in ("mcp", "uvicorn"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(logging.WARNING)
        logger.propagate = False


def stop_on_signals(dispatcher: Dispatcher) -> None:
    """SIGTERM/SIGINT: kill every running call's processes, then exit 143/130 at once."""
    import signal

    def stop(signum: int, frame: object) -> None:
        from toolctl.cli import _exit

        dispatcher.cancel_all()
        _exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


def log_line(line: dict[str, object]) -> None:
    """One JSON line per call on stderr (tool, status, duration; never the arguments)."""
    import json
    import sys
    import time

    stamped = {"ts": round(time.time(), 3), **line}
    sys.stderr.write(json.dumps(stamped, sort_keys=True) + "\n")
    sys.stderr.flush()
