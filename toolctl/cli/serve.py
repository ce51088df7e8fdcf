"""`toolctl serve`: the HTTP server (tool_agent's gateway, /recommend, MCP at /mcp)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from toolctl.cli.common import JsonOption, RegistryOption, StrictOption, settings_for
from toolctl.cli.mcp import (
    ActionOption,
    ConcurrencyOption,
    GroupOption,
    HopsOption,
    PulsarOption,
    ThresholdOption,
    ToolOption,
)

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from toolctl.serve.catalog import Selection
    from toolctl.serve.gateway import GatewayOptions
    from toolctl.settings import Settings


def install(app: typer.Typer) -> None:
    app.command("serve")(serve_command)


def serve_command(
    context: typer.Context,
    host: Annotated[
        str, typer.Option(help="Address to bind; anything but loopback needs --token-env.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free one).")] = 8001,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--token-env",
            metavar="NAME",
            help="Require 'Authorization: Bearer <token>', the token read from $NAME.",
        ),
    ] = None,
    group: GroupOption = None,
    tool: ToolOption = None,
    action: ActionOption = None,
    hops: HopsOption = 0,
    threshold: ThresholdOption = 0.5,
    concurrency: ConcurrencyOption = 8,
    queue: Annotated[
        int, typer.Option(min=0, max=100_000, help="Calls that may wait for a slot (then 503).")
    ] = 64,
    grace: Annotated[
        int,
        typer.Option(min=1, help="Seconds in-flight calls get on SIGTERM before they are killed."),
    ] = 3,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option("--allow-origin", metavar="ORIGIN", help="Another browser origin to let in."),
    ] = None,
    detach: Annotated[
        bool, typer.Option("--detach", help="Run in the background; return once it serves.")
    ] = False,
    name: Annotated[
        str, typer.Option(metavar="NAME", help="Its name in `service status` (with --detach).")
    ] = "serve",
    ready_file: Annotated[Path | None, typer.Option(hidden=True)] = None,
    pulsar_url: PulsarOption = None,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Serve the registry over HTTP: GET /health, GET /tools, POST /run_tool (tool_agent's
    gateway), GET /recommend, GET /openapi.json, and MCP (streamable HTTP) at /mcp.

    Statuses follow the exit codes: 422 invalid arguments, 404 unknown tool, 409 registry
    refused, 200 with success false for a failed tool, 503 unavailable or queue full, 504
    timed out; 401 without the token, 413 for a body over 1 MiB. Exit codes: 0 stopped,
    2 bad option (a non-loopback --host without --token-env), 3 registry refused, 4 unknown
    group, tool or action, 5 the port is taken.
    """
    from toolctl.cli.mcp import selection
    from toolctl.errors import ToolctlError

    settings = settings_for(registry, strict, pulsar_url=pulsar_url)
    options = gateway_options(settings, host, port, token_env, tuple(allow_origin or ()))
    chosen = selection(group, tool, action, hops, threshold)
    if detach:
        from toolctl.processes import free_port

        port = port or free_port()
        argv = _foreground_argv(context, port)
        _detach(settings, name, argv, _url(host, port), port, json)
        return
    try:
        _serve(settings, options, chosen, concurrency, queue, grace, ready_file)
    except ToolctlError as exc:
        if ready_file is not None:  # a detached server: the one who started it reads this
            from toolctl.processes import report_failure

            report_failure(ready_file, exc)
        raise


def gateway_options(
    settings: Settings, host: str, port: int, token_env: str | None, origins: tuple[str, ...]
) -> GatewayOptions:
    from toolctl.errors import UsageError
    from toolctl.serve.gateway import GatewayOptions, is_loopback

    token = None
    if token_env is not None:
        token = settings.environ.get(token_env, "")
        if not token:
            raise UsageError(f"--token-env {token_env}: the variable is not set or empty")
    elif not is_loopback(host):
        raise UsageError(
            f"binding {host} exposes the tools beyond this machine without a token",
            hint="pass --token-env NAME (a variable holding the bearer token), or bind 127.0.0.1",
        )
    return GatewayOptions(host, port, token, allow_origins=origins)


def _serve(
    settings: Settings,
    options: GatewayOptions,
    chosen: Selection,
    concurrency: int,
    queue: int,
    grace: int,
    ready_file: Path | None,
) -> None:
    import asyncio

    import uvicorn

    from toolctl.cli import render
    from toolctl.cli.mcp import open_front
    from toolctl.serve.gateway import build_app
    from toolctl.serve.mcp_server import ToolServer

    dispatcher = open_front(settings, chosen, concurrency, queue)
    app = build_app(dispatcher, ToolServer(dispatcher), options)
    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=grace,
        lifespan="on",
        http=http_protocol(),
        proxy_headers=False,  # nothing reads the client's address: no X-Forwarded-* rewrite
    )
    server = uvicorn.Server(config)

    async def run() -> None:
        serving = asyncio.create_task(server.serve())
        while not server.started and not serving.done():
            await asyncio.sleep(0.01)
        if server.started:
            host, port = server.servers[0].sockets[0].getsockname()[:2]
            served = len(dispatcher.catalog.snapshot.tools)
            render.note(f"serving {served} tools at {_url(host, port)}; SIGTERM stops it")
            if ready_file is not None:
                from toolctl.processes import report_ready

                report_ready(ready_file)
        await serving

    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        runner.run(run())
    if not server.started:
        from toolctl.errors import TransportUnavailable

        raise TransportUnavailable(
            f"could not listen on {options.host}:{options.port}", hint="is the port taken?"
        )


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (a dependency; it roughly halves the
    event loop's own cost per request), else None: asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def http_protocol() -> type[asyncio.Protocol] | Literal["h11"]:
    """uvicorn's httptools protocol (httptools, a dependency, is the C HTTP parser) with a
    response sent in one piece, when httptools imports; else h11."""
    try:
        from toolctl.serve.http_protocol import CoalescingHttpToolsProtocol
    except ImportError:
        return "h11"
    return CoalescingHttpToolsProtocol


def _foreground_argv(context: typer.Context, port: int) -> list[str]:
    """This command line as given, less --detach (and with the port chosen): what the
    background child runs, in the same working directory."""
    argv = [str(context.info_name)]
    for param in context.command.params:
        value = port if param.name == "port" else context.params.get(str(param.name))
        if param.name in {"detach", "json", "ready_file"} or value in (None, False, []):
            continue
        flag = param.opts[0]
        if value is True:
            argv.append(flag)
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            argv += [flag, str(item)]
    return argv


def _url(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def _detach(
    settings: Settings, name: str, argv: list[str], url: str, port: int, json: bool
) -> None:
    """Run the same server in the background, recorded in the process table as ``name``."""
    import sys

    from toolctl.cli import render
    from toolctl.serve.detached import start_detached

    command = [sys.executable, "-m", "toolctl", *argv]
    record, started = start_detached(settings, name, command, url, port)
    how = "started" if started else "already running"
    render.note(f"serve '{name}' {how} at {record.url} (pid {record.pid}, log {record.log})")
    if json:
        render.print_json(record.to_json())
    else:
        typer.echo(record.url)
