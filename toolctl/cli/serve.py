"""`toolctl serve`: the HTTP server (tool_agent's gateway, /recommend, MCP at /mcp)."""

from __future__ import annotations

from typing import Annotated

import typer

from toolctl.cli.common import (
    ActionOption,
    AdaptiveOption,
    AnnouncedOption,
    ConcurrencyOption,
    DetachOption,
    GroupOption,
    HopsOption,
    JsonOption,
    PinOption,
    ReadyFileOption,
    RegistryOption,
    ServedPulsarOption,
    StrictOption,
    ThresholdOption,
    ToolOption,
    reporter,
    settings_for,
)


def install(app: typer.Typer) -> None:
    app.command("serve")(serve_command)


def serve_command(
    context: typer.Context,
    host: Annotated[
        str,
        typer.Option(
            metavar="ADDRESS", help="Address to bind; anything but loopback needs --token-env."
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, metavar="PORT", help="Port (0: any free one).")
    ] = 8001,
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
    adaptive: AdaptiveOption = None,
    pin: PinOption = None,
    queue: Annotated[
        int,
        typer.Option(
            min=0, max=100_000, metavar="N", help="Calls that may wait for a slot (then 503)."
        ),
    ] = 64,
    grace: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="SECONDS",
            help="Seconds in-flight calls get on SIGTERM before they are killed.",
        ),
    ] = 3,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option("--allow-origin", metavar="ORIGIN", help="Another browser origin to let in."),
    ] = None,
    detach: DetachOption = False,
    name: Annotated[
        str, typer.Option(metavar="NAME", help="Its name in `service status` (with --detach).")
    ] = "serve",
    ready_file: ReadyFileOption = None,
    pulsar_url: ServedPulsarOption = None,
    registry: RegistryOption = None,
    announced: AnnouncedOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Serve the registry over HTTP: GET /health, GET /tools, POST /run_tool (tool_agent's
    gateway), GET /recommend, GET /openapi.json, and MCP (streamable HTTP) at /mcp.

    Statuses follow the exit codes: 422 invalid arguments, 404 unknown tool, 409 registry
    refused, 200 with success false for a failed tool, 503 unavailable or queue full, 504
    timed out; 401 without the token, 413 for a body over 1 MiB. Exit codes: 0 stopped
    (SIGTERM; 130 for Ctrl-C),
    2 bad option (a non-loopback --host without --token-env), 3 registry refused, 4 unknown
    group, tool or action, 5 the port is taken.
    """
    from toolctl.serve.adaptive import adaptive_config
    from toolctl.serve.front import selection
    from toolctl.serve.http import HttpConfig, HttpServer, gateway_options, start_detached
    from toolctl.terminal import render, views

    settings = settings_for(registry, strict, pulsar_url=pulsar_url, announced=announced)
    options = gateway_options(settings, host, port, token_env, tuple(allow_origin or ()))
    chosen = selection(group, tool, action, hops, threshold)
    narrowed = adaptive_config(adaptive, pin)
    config = HttpConfig(settings, chosen, options, concurrency, queue, grace, ready_file, narrowed)
    if not detach:
        HttpServer(config, reporter(settings), render.log_line).run()
        return
    record, started = start_detached(settings, name, host, port, lambda p: _argv(context, p), grace)
    views.print_started(f"serve '{name}'", record, started, as_json=json)


def _argv(context: typer.Context, port: int) -> list[str]:
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
