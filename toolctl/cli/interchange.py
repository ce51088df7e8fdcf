"""`toolctl export` (OpenAI, MCP, TrustGraph) and `toolctl import` (TrustGraph, Chat2Graph,
tool_agent, a live MCP server's tools, MCP client configs)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from toolctl.cli.common import JsonOption, RegistryOption, StrictOption, settings_for
from toolctl.errors import RegistryError, UsageError
from toolctl.settings import Settings


class ExportFormat(StrEnum):
    openai = "openai"
    mcp = "mcp"
    trustgraph = "trustgraph"


class ImportFormat(StrEnum):
    trustgraph = "trustgraph"
    chat2graph = "chat2graph"
    tool_agent = "tool-agent"
    mcp = "mcp"
    mcp_config = "mcp-config"


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
        tools_in_order = (  # only what an export reads: no descriptor decoded whole
            {"name": name, **dict(zip(_EXPORTED, values, strict=True))}
            for name, _, values in reg.iter_winner_fields("tool", _EXPORTED)
        )
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


_EXPORTED = ("description", "schema", "annotations")
"""The fields of a tool the streamed exports read (``interchange.functions``)."""


def import_command(
    format: Annotated[
        ImportFormat,
        typer.Argument(
            metavar="FORMAT", help="trustgraph, chat2graph, tool-agent, mcp or mcp-config."
        ),
    ],
    files: Annotated[
        list[Path],
        typer.Argument(metavar="FILE...", help="Files to import (mcp: the one SERVICE)."),
    ],
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
    from toolctl.cli import render
    from toolctl.interchange import check_landing, read_import
    from toolctl.registry.writer import register

    settings = settings_for(registry)
    mcp_only = {"--prefix": prefix is not None, "--tool": bool(tool), "--update": update}
    if format is not ImportFormat.mcp:
        for option, given in {**mcp_only, "--yes": yes}.items():
            if given:
                raise UsageError(f"{option} is for 'toolctl import mcp SERVICE' only")
    if yes and not update:
        raise UsageError("--yes accepts the changes of --update: give both")
    if format is ImportFormat.mcp:
        if len(files) != 1:
            raise UsageError("'toolctl import mcp' takes one SERVICE", hint="import mcp SERVICE")
        if update:
            _mcp_update(settings, str(files[0]), accept=yes, as_json=json)
        else:
            _mcp_import(settings, str(files[0]), prefix, tool or [], as_json=json)
        return
    if format is ImportFormat.mcp_config:
        _mcp_config(settings, files, as_json=json)
        return
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


def _live(settings: Settings, service: str) -> list[tuple[dict[str, Any], str]]:
    from toolctl.mcp import pin_of
    from toolctl.mcp.live import live_tools
    from toolctl.registry.index import Registry

    definition = Registry.open(settings).resolve("service", service)
    return [(tool, pin_of(tool)) for tool in live_tools(settings, definition)]


def _mcp_import(
    settings: Settings, service: str, prefix: str | None, globs: list[str], *, as_json: bool
) -> None:
    from toolctl.cli import render
    from toolctl.interchange import Imported, check_landing
    from toolctl.interchange.mcp import plan_import
    from toolctl.registry.writer import register

    plan = plan_import(settings, service, _live(settings, service), prefix=prefix, globs=globs)
    written = []
    if plan.entries:
        for note in check_landing(Imported(plan.entries, []), settings):
            render.warn(note)
        written = register(plan.entries, settings)
    if as_json:
        render.print_json(
            {
                "imported": [
                    {"name": w.name, "file": render.display_path(w.path)} for w in written
                ],
                "refused": plan.refused,
                "present": plan.present,
            }
        )
    else:
        for w in written:
            render.note(f"imported tool '{w.name}' into {render.display_path(w.path)}")
        for note in plan.notes:
            render.note(note)
        if plan.present:
            render.note(
                f"{len(plan.present)} tool(s) already imported from '{service}' "
                f"(see 'toolctl import mcp {service} --update')"
            )
    if plan.refused:
        raise RegistryError(
            f"{len(plan.refused)} tool(s) of service '{service}' refused "
            f"({len(written)} imported): first definition wins",
            details=plan.refused,
            hint="import them under another --prefix, or rename the tool that holds the name",
        )


def _mcp_update(settings: Settings, service: str, *, accept: bool, as_json: bool) -> None:
    from toolctl.cli import render
    from toolctl.interchange.mcp import apply_update, plan_update

    changes, same = plan_update(settings, service, _live(settings, service))
    if as_json:
        render.print_json(
            {
                "unchanged": same,
                "changed": [
                    {"name": c.name, "remote": c.remote, "fields": c.fields, "diff": c.diff}
                    for c in changes
                ],
                "accepted": accept,
            }
        )
    else:
        for change in changes:
            if change.table is None:
                render.write_stdout(
                    f"{change.name} ({change.remote}): vanished from the server; "
                    f"'toolctl unregister tool {change.name}' removes it\n"
                )
                continue
            render.write_stdout(
                f"{change.name} ({change.remote}): {', '.join(change.fields)} changed\n"
                + "".join(f"  {line}\n" for line in change.diff)
            )
    if not changes:
        if not as_json:
            render.note(f"all {same} pinned tool(s) of '{service}' match the server")
        return
    if not accept:
        raise RegistryError(
            f"{len(changes)} tool(s) of service '{service}' changed since they were pinned",
            hint=f"review the diff, then 'toolctl import mcp {service} --update --yes'",
        )
    files = apply_update(settings, changes)
    if not as_json:
        render.note(f"rewrote {len(files)} pin(s) of service '{service}'")


def _mcp_config(settings: Settings, files: list[Path], *, as_json: bool) -> None:
    from toolctl.cli import render
    from toolctl.interchange.mcp_config import import_client_configs

    done = import_client_configs(settings, files)
    for source, dialect, count in done.read:
        render.note(f"{render.display_path(Path(source))}: {count} server(s), read as {dialect}")
    for note in done.notes:
        render.warn(note)
    if as_json:
        written = [{"name": w.name, "file": render.display_path(w.path)} for w in done.written]
        render.print_json(
            {"imported": written, "export": sorted(done.exports), "refused": done.refused}
        )
    else:
        for w in done.written:
            render.note(f"imported service '{w.name}' into {render.display_path(w.path)}")
        for variable, where in done.exports.items():
            render.write_stdout(f"export {variable}=...   # {where}\n")
    if done.exports and not as_json:
        render.note(f"set before running their tools (not copied): {' '.join(done.exports)}")
    if done.refused:
        raise RegistryError(
            f"{len(done.refused)} server(s) not imported ({len(done.written)} imported)",
            details=done.refused,
        )
