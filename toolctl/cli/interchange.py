"""`toolctl export` (OpenAI, MCP, TrustGraph) and `toolctl import` (TrustGraph, Chat2Graph,
tool_agent)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from toolctl.cli.common import JsonOption, RegistryOption, StrictOption, settings_for


class ExportFormat(StrEnum):
    openai = "openai"
    mcp = "mcp"
    trustgraph = "trustgraph"


class ImportFormat(StrEnum):
    trustgraph = "trustgraph"
    chat2graph = "chat2graph"
    tool_agent = "tool-agent"


def install(app: typer.Typer) -> None:
    app.command("export")(export_command)
    app.command("import")(import_command)


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
        str | None, typer.Option("--group", "-g", metavar="GROUP", help="Only this group's tools.")
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
) -> None:
    """Print the tools in force as JSON another system loads, sorted by name.

    Tools that cannot be expressed (a name OpenAI refuses; for TrustGraph, tools not on a
    Pulsar service) are left out with a warning. Exit 4 for an unknown --group, 2 when a
    group has nothing TrustGraph can take.
    """
    from toolctl.cli import render
    from toolctl.cli.common import open_registry
    from toolctl.interchange import export, export_streamed

    reg = open_registry(settings_for(registry, strict), full=True)
    if group is None and not as_commands:
        tools_in_order = (d.data for d in reg.iter_winners("tool"))
        streamed = export_streamed(format.value, tools_in_order, strict_schemas=strict_schemas)
        if streamed is not None:
            render.print_json_list(streamed.items, streamed.key)
            for note in streamed.notes:
                render.warn(note)
            return
    chosen = reg.resolve("group", group).data if group is not None else None
    tools = {d.name: d.data for d in reg.winners("tool")}
    services = {d.name: d.data for d in reg.winners("service")}
    exported = export(
        format.value,
        tools,
        services,
        chosen,
        strict_schemas=strict_schemas,
        commands=as_commands,
    )
    for note in exported.notes:
        render.warn(note)
    if isinstance(exported.data, str):
        render.write_stdout(exported.data)
    else:
        render.print_json(exported.data)


def import_command(
    format: Annotated[
        ImportFormat,
        typer.Argument(metavar="FORMAT", help="trustgraph, chat2graph or tool-agent."),
    ],
    files: Annotated[list[Path], typer.Argument(metavar="FILE...", help="Files to import.")],
    as_loaded: Annotated[
        bool,
        typer.Option(
            "--as-loaded",
            help="chat2graph: build the graph as Chat2Graph's loader does (all toolkit "
            "chains linked into one sequence), so recommend answers as Chat2Graph does.",
        ),
    ] = False,
    registry: RegistryOption = None,
    json: JsonOption = False,
) -> None:
    """Turn TrustGraph config items, a Chat2Graph YAML or tool_agent registry.json/groups.json
    into TOML descriptors in the first writable registry directory.

    Names other systems use that toolctl does not accept become slugs (the original is
    kept as the title). Same rules as `register`: a name taken anywhere on the search
    path, or confusable with one, refuses the whole import (exit 3) and nothing is
    written; so does anything `check` would call an error once the entries are in (an
    unknown service, a missing required config param, an edge to nothing).
    """
    from toolctl.cli import render
    from toolctl.interchange import check_landing, read_import
    from toolctl.registry.writer import register

    settings = settings_for(registry)
    imported = read_import(format.value, files, as_loaded=as_loaded)
    warnings = check_landing(imported, settings)
    for note in [*imported.notes, *warnings]:
        render.warn(note)
    written = register(imported.entries, settings)
    if json:
        render.print_json(
            [{"kind": w.kind, "name": w.name, "file": render.display_path(w.path)} for w in written]
        )
        return
    for w in written:
        render.note(f"imported {w.kind} '{w.name}' into {render.display_path(w.path)}")
