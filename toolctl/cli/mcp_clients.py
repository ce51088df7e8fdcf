"""`toolctl mcp install --client C` and `toolctl mcp add NAME -- COMMAND ARGS...`."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from toolctl.cli.common import (
    ActionOption,
    GroupOption,
    JsonOption,
    RegistryOption,
    ToolOption,
    reporter,
    settings_for,
)


class ClientName(StrEnum):
    claude_desktop = "claude-desktop"
    claude_code = "claude-code"
    cursor = "cursor"
    vscode = "vscode"
    windsurf = "windsurf"


def install(group: typer.Typer) -> None:
    group.command("install")(install_command)
    group.command("add")(add_command)


def install_command(
    client: Annotated[
        ClientName,
        typer.Option("--client", "-c", help="The MCP client whose config gets the server."),
    ],
    group: GroupOption = None,
    action: ActionOption = None,
    tool: ToolOption = None,
    name: Annotated[
        str, typer.Option("--name", metavar="NAME", help="The server's name in the client.")
    ] = "toolctl",
    config: Annotated[
        Path | None,
        typer.Option("--config", metavar="FILE", help="The client's config file, elsewhere."),
    ] = None,
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the entry and where it goes; write nothing.")
    ] = False,
    registry: RegistryOption = None,
    json: JsonOption = False,
) -> None:
    """Add a `toolctl mcp serve` server (the registry in force, or a --group, --action or
    --tool selection) to an MCP client's config: Claude Desktop, Claude Code (the
    project's .mcp.json), Cursor, VS Code (the workspace's .vscode/mcp.json) or Windsurf.

    The entry is merged with what the file holds (other servers, and VS Code's comments,
    are kept); an entry of the same --name is replaced. The old file is kept as FILE.bak
    and the new one written atomically. Restart the client (or reload its MCP servers).
    """
    from toolctl.interchange.client_install import install_client
    from toolctl.terminal import views

    done = install_client(
        settings_for(registry),
        client.value,
        name=name,
        groups=group or (),
        actions=action or (),
        tools=tool or (),
        config=config,
        write=not print_only,
    )
    views.print_installed(done, printed=print_only, as_json=json)


def add_command(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The service's name.")],
    command: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="-- COMMAND ARGS...",
            help="The server's command (stdio), after --.",
            show_default=False,
        ),
    ] = None,
    url: Annotated[
        str | None,
        typer.Option("--url", metavar="URL", help="The server's URL (streamable HTTP or SSE)."),
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env", "-e", metavar="KEY=VALUE", help="An environment variable of the server."
        ),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option(
            "--header", "-H", metavar="'NAME: VALUE'", help="A header sent to the server (--url)."
        ),
    ] = None,
    prefix: Annotated[
        str | None,
        typer.Option(
            "--prefix", metavar="P", help="Tool names are P + the server's (default 'NAME.')."
        ),
    ] = None,
    tool: Annotated[
        list[str] | None,
        typer.Option(
            "--tool",
            metavar="GLOB",
            help="Only the server's tools matching GLOB.",
        ),
    ] = None,
    registry: RegistryOption = None,
    json: JsonOption = False,
) -> None:
    """Add an MCP server: register it as service NAME, then import its tools (pinned), as
    `import mcp-config` and `import mcp NAME` would. A secret in --env, --header, the
    arguments or the URL becomes its own ${env:NAME} reference, never written to the registry: the
    value given lists the tools now; later runs read NAME from the environment.
    """
    from toolctl.arguments import header_values, key_values
    from toolctl.interchange.flows import ImportOptions
    from toolctl.interchange.mcp_add import add_mcp_server
    from toolctl.terminal import views

    pairs = key_values(env or [], "--env")
    headers = header_values(header or [], "--header")
    settings = settings_for(registry)
    options = ImportOptions(prefix=prefix, globs=tuple(tool or ()))
    done = add_mcp_server(
        settings, reporter(settings), name, command or [],
        url=url, env=pairs, headers=headers, options=options,
    )  # fmt: skip
    views.print_imported(done, as_json=json)
