"""`toolctl import`: TrustGraph, Chat2Graph, tool_agent files, a live MCP server's tools,
MCP client configs, into the registry."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from toolctl.cli.common import JsonOption, RegistryOption, reporter, settings_for
from toolctl.terminal.completion import complete_import_source


class ImportFormat(StrEnum):
    trustgraph = "trustgraph"
    chat2graph = "chat2graph"
    tool_agent = "tool-agent"
    mcp = "mcp"
    mcp_config = "mcp-config"


def install(app: typer.Typer) -> None:
    app.command("import")(import_command)


def import_command(
    format: Annotated[
        ImportFormat,
        typer.Argument(
            metavar="FORMAT", help="trustgraph, chat2graph, tool-agent, mcp or mcp-config."
        ),
    ],
    files: Annotated[  # not required here: which argument is missing depends on FORMAT
        list[Path] | None,
        typer.Argument(
            metavar="FILE...",
            help="Files to import (mcp: the one SERVICE).",
            autocompletion=complete_import_source,
        ),
    ] = None,
    as_loaded: Annotated[
        bool,
        typer.Option(
            "--as-loaded",
            help="chat2graph: build the graph as Chat2Graph's loader does (all toolkit "
            "chains linked into one sequence), so recommend answers as Chat2Graph does.",
        ),
    ] = False,
    prefix: Annotated[
        str | None,
        typer.Option(
            "--prefix",
            metavar="P",
            help="mcp: registry names are P + the server's tool name (default 'SERVICE.').",
        ),
    ] = None,
    tool: Annotated[
        list[str] | None,
        typer.Option(
            "--tool",
            metavar="GLOB",
            help="mcp: only the server's tools matching GLOB (repeatable).",
        ),
    ] = None,
    update: Annotated[
        bool,
        typer.Option(
            "--update",
            help="mcp: show what changed in the tools already imported (a "
            "per-tool diff) and, with --yes, rewrite their pins.",
        ),
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="mcp --update: accept the changes shown.")
    ] = False,
    registry: RegistryOption = None,
    json: JsonOption = False,
) -> None:
    """Turn TrustGraph config items, a Chat2Graph YAML or tool_agent registry.json/groups.json
    into TOML descriptors in the first writable registry directory.

    `import mcp SERVICE` asks the registered MCP service for its tools and writes one
    pinned tool each (name: prefix + the server's name); a name taken or confusable is
    refused and listed while the others import (exit 3 when any was refused). `--update`
    prints a diff per changed tool and exits 3 unless --yes rewrote the pins.
    `import mcp-config FILE...` reads the MCP server configs of Claude Desktop, Claude Code,
    Cursor, VS Code, Windsurf, Gemini CLI, Codex, Continue, Zed, Cline, Roo Code and Kiro:
    each secret (in env, headers, arguments or the URL) becomes its own ${env:NAME}
    reference, and the variables to set are listed; a server that cannot be read is
    listed (exit 3) while the others import.

    Names other systems use that toolctl does not accept become slugs (the original is
    kept as the title). Same rules as `register`: a name taken anywhere on the search
    path, or confusable with one, refuses the whole import (exit 3) and nothing is
    written; so does anything `check` would call an error once the entries are in (an
    unknown service, a missing required config param, an edge to nothing).
    """
    from toolctl.interchange.flows import ImportOptions, import_files
    from toolctl.terminal import views

    settings = settings_for(registry)
    options = ImportOptions(as_loaded, prefix, tuple(tool or ()), update, yes)
    done = import_files(settings, reporter(settings), format.value, files or [], options)
    views.print_imported(done, as_json=json)
