"""`toolctl export`: the tools in force as OpenAI functions, an MCP tools/list or TrustGraph
config items."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from toolctl.cli.common import JsonOption, RegistryOption, StrictOption, reporter, settings_for
from toolctl.terminal.completion import complete_groups


class ExportFormat(StrEnum):
    openai = "openai"
    mcp = "mcp"
    trustgraph = "trustgraph"


def install(app: typer.Typer) -> None:
    app.command("export")(export_command)


def export_command(
    format: Annotated[
        ExportFormat,
        typer.Option(
            "--format",
            "-f",
            help="openai (function definitions), mcp (a tools/list result) or trustgraph "
            "(config items for tg-put-config-item).",
        ),
    ],
    group: Annotated[
        str | None,
        typer.Option(
            "--group",
            "-g",
            metavar="GROUP",
            help="Only this group's tools.",
            autocompletion=complete_groups,
        ),
    ] = None,
    strict_schemas: Annotated[
        bool,
        typer.Option(
            "--strict-schemas",
            help='openai: schemas OpenAI\'s strict mode accepts, each function "strict": true; '
            "tools that cannot be made strict are listed on stderr.",
        ),
    ] = False,
    as_commands: Annotated[
        bool,
        typer.Option(
            "--as-commands",
            help="trustgraph: print 'tg-put-config-item --type T --key K --value JSON' lines.",
        ),
    ] = False,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Print the tools in force as JSON another system loads, sorted by name.

    OpenAI names a tool by its function name (each '.' as '_'). Tools that cannot be
    expressed (a name over 64 characters for OpenAI; for TrustGraph, tools not on a Pulsar
    service) are left out with a warning. Exit 4 for an unknown --group, 2 when a group
    has nothing TrustGraph can take. What it prints is JSON (--json, taken as every
    command that reports something takes it, changes nothing), or commands with
    --as-commands.
    """
    from toolctl.interchange.flows import export_tools
    from toolctl.terminal.views import print_exported

    if json and as_commands:
        from toolctl.errors import UsageError

        raise UsageError("--json and --as-commands cannot be combined")
    settings = settings_for(registry, strict)
    print_exported(
        export_tools(
            settings,
            reporter(settings),
            format.value,
            group=group,
            strict_schemas=strict_schemas,
            commands=as_commands,
        )
    )
