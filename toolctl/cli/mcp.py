"""`toolctl mcp serve` (the registry as an MCP server on stdio) and `toolctl mcp login`."""

from __future__ import annotations

from typing import Annotated

import typer

from toolctl.cli.common import (
    ActionOption,
    AdaptiveOption,
    AnnouncedOption,
    ConcurrencyOption,
    GroupOption,
    HopsOption,
    JsonOption,
    PinOption,
    RegistryOption,
    ServedPulsarOption,
    StrictOption,
    ThresholdOption,
    ToolOption,
    reporter,
    settings_for,
)
from toolctl.terminal.completion import complete_services


def install(app: typer.Typer) -> None:
    from toolctl.cli import mcp_clients

    group = typer.Typer(
        name="mcp",
        help="Serve the registry to MCP clients, set clients up, add MCP servers.",
        no_args_is_help=True,
    )
    group.command("serve")(serve_command)
    group.command("login")(login_command)
    mcp_clients.install(group)
    app.add_typer(group)


def login_command(
    service: Annotated[
        str,
        typer.Argument(
            metavar="SERVICE",
            help="The MCP service to log in to.",
            autocompletion=complete_services,
        ),
    ],
    browser: Annotated[
        bool, typer.Option("--browser/--no-browser", help="Open a browser where one can be opened.")
    ] = True,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Log in to an MCP server that asks for OAuth; its tokens are kept for later runs.

    The authorization URL is printed (and opened in a browser where there is one); the
    browser comes back to a listener on 127.0.0.1. With [service.mcp.oauth] grant =
    "client_credentials" no browser is involved. Tokens are never printed."""
    from toolctl.calls.services import service_login

    settings = settings_for(registry, strict)
    scope = service_login(settings, reporter(settings), service, browser=browser)
    from toolctl.terminal import render

    line = f"logged in to MCP service '{service}'" + (f" (scope: {scope})" if scope else "")
    if scope is None:
        line = f"MCP service '{service}' asks for no login: nothing to do"
    document = {"service": service, "login": scope is not None, "scope": scope or None}
    render.outcome(document, line, as_json=json)


def serve_command(
    group: GroupOption = None,
    tool: ToolOption = None,
    action: ActionOption = None,
    hops: HopsOption = 0,
    threshold: ThresholdOption = 0.5,
    concurrency: ConcurrencyOption = 8,
    adaptive: AdaptiveOption = None,
    pin: PinOption = None,
    pulsar_url: ServedPulsarOption = None,
    registry: RegistryOption = None,
    announced: AnnouncedOption = None,
    strict: StrictOption = False,
) -> None:
    """Serve the tools in force (or a --group, --tool or --action selection) over MCP on
    stdin/stdout, until stdin closes.

    tools/list is `export --format mcp` of the selection; tools/call runs the tool with its
    validation and timeout; the list is re-sent (list_changed) when the registry changes.
    Only protocol goes to stdout; one JSON line per call goes to stderr. Exit codes: 0 stdin
    closed, 2 bad option, 3 registry refused (--strict), 4 unknown group, tool, action or
    pinned tool, 143/130 terminated (every call's processes are killed first).

    With --adaptive K, each session is listed its --pin tools and the K it is likeliest to
    call next (the learned file, `graph learn`), re-ranked after each of its calls; a call
    to a served tool not listed still runs.
    """
    from toolctl.serve.adaptive import adaptive_config
    from toolctl.serve.front import selection
    from toolctl.serve.stdio import StdioConfig, StdioServer
    from toolctl.terminal import render

    settings = settings_for(registry, strict, pulsar_url=pulsar_url, announced=announced)
    chosen = selection(group, tool, action, hops, threshold)
    config = StdioConfig(settings, chosen, concurrency, adaptive_config(adaptive, pin))
    StdioServer(config, reporter(settings), render.log_line).run()
