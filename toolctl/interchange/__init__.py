"""Interchange: tools out as OpenAI functions, an MCP tools/list or TrustGraph config items;
TrustGraph, Chat2Graph and tool_agent files in as registry entries.

One module per foreign format. Exports take descriptor data (``Definition.data``) and
return JSON data plus notes about what was left out; they never touch the registry.
Imports read the files they are given and return entries validated exactly like registry
files; ``registry.writer.register`` writes them under the same first-wins and confusable
rules as `toolctl register`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolctl.errors import UsageError
from toolctl.interchange.entries import (
    Imported,
    Tables,
    check_landing,
    read_json,
    read_yaml,
    validate,
)

EXPORT_FORMATS = ("openai", "mcp", "trustgraph")
IMPORT_FORMATS = ("trustgraph", "chat2graph", "tool-agent")

__all__ = [
    "EXPORT_FORMATS",
    "IMPORT_FORMATS",
    "Exported",
    "Imported",
    "check_landing",
    "export",
    "export_streamed",
    "read_import",
]


@dataclass(frozen=True)
class Exported:
    """JSON data to print (sorted by name), and notes on what was left out and why."""

    data: Any
    notes: list[str]


def export(
    format: str,
    tools: Mapping[str, Mapping[str, Any]],
    services: Mapping[str, Mapping[str, Any]],
    group: Mapping[str, Any] | None = None,
    *,
    strict_schemas: bool = False,
    commands: bool = False,
) -> Exported:
    """Export ``tools`` (name → data), or only those ``group`` names, in ``format``.

    ``strict_schemas`` (openai): schemas in OpenAI's strict subset, ``"strict": true``.
    ``commands`` (trustgraph): ``tg-put-config-item`` command lines instead of JSON items.
    """
    from toolctl.interchange import functions, trustgraph

    if strict_schemas and format != "openai":
        raise UsageError("--strict-schemas is for --format openai only")
    if commands and format != "trustgraph":
        raise UsageError("--as-commands is for --format trustgraph only")
    chosen, notes = _select(tools, group)
    data: Any
    if format == "openai" and strict_schemas:
        data, more = functions.strict_functions(chosen)
    elif format == "openai":
        data, more = functions.openai_functions(chosen)
    elif format == "mcp":
        data, more = functions.mcp_tools(chosen)
    elif format == "trustgraph":
        data, more = trustgraph.export_items(chosen, services, narrowed=group is not None)
        if group is not None and not data:
            raise UsageError(
                f"group '{group['name']}' has no tool on a Pulsar service; "
                "only those map to TrustGraph",
                hint="export it as openai or mcp",
            )
        if commands:
            data = trustgraph.put_commands(data)
    else:
        raise UsageError(f"unknown export format '{format}': expected {', '.join(EXPORT_FORMATS)}")
    return Exported(data, notes + more)


@dataclass(frozen=True)
class Streamed:
    """A JSON list produced item by item (inside ``{key: [...]}`` when ``key`` is set);
    ``notes`` is complete once ``items`` is exhausted."""

    items: Iterator[Any]
    key: str | None
    notes: list[str]


def export_streamed(
    format: str, tools: Iterable[Mapping[str, Any]], *, strict_schemas: bool = False
) -> Streamed | None:
    """``export`` of every tool, ``tools`` already sorted by name, one at a time (a
    registry of 100,000 tools is never held whole); None for a format that needs all of
    them at once (trustgraph). Options a format refuses are refused here, before any item."""
    from toolctl.interchange import functions

    if strict_schemas and format != "openai":
        raise UsageError("--strict-schemas is for --format openai only")
    notes: list[str] = []
    if format == "openai" and strict_schemas:
        later: list[str] = []
        items = _then_extend(functions.iter_strict(tools, notes, later), notes, later)
        return Streamed(items, None, notes)
    if format == "openai":
        return Streamed(functions.iter_openai(tools, notes), None, notes)
    if format == "mcp":
        return Streamed(functions.iter_mcp(tools), "tools", notes)
    return None


def _then_extend(items: Iterator[Any], notes: list[str], later: list[str]) -> Iterator[Any]:
    yield from items
    notes.extend(later)


def _select(
    tools: Mapping[str, Mapping[str, Any]], group: Mapping[str, Any] | None
) -> tuple[list[Mapping[str, Any]], list[str]]:
    if group is None:
        return [tools[name] for name in sorted(tools)], []
    names = sorted(set(group["tools"]))
    missing = [name for name in names if name not in tools]
    notes = [f"group '{group['name']}' names unknown tool '{name}'; left out" for name in missing]
    return [tools[name] for name in names if name in tools], notes


def _converted(reader: Callable[[Path], Tables], path: Path, format: str) -> Tables:
    """One file converted; a value of a type no importer expects where it stands (a number
    for a list, a list for a name) is the file's fault, said in one line."""
    try:
        return reader(path)
    except (TypeError, AttributeError, KeyError) as exc:
        raise UsageError(
            f"{path}: not a {format} document toolctl can read: a value of the wrong kind "
            f"({type(exc).__name__}: {exc})"
        ) from exc


def read_import(format: str, files: Sequence[Path], *, as_loaded: bool = False) -> Imported:
    """Convert every file, then validate all of it as one batch (any problem refuses all).

    ``as_loaded`` (Chat2Graph only) builds the graph as Chat2Graph's own loader does.
    """
    from toolctl.interchange import chat2graph, tool_agent, trustgraph

    if as_loaded and format != "chat2graph":
        raise UsageError("--as-loaded is for chat2graph imports only")
    readers: dict[str, Callable[[Path], Tables]] = {
        "trustgraph": lambda f: trustgraph.convert(trustgraph.read(f), str(f)),
        "chat2graph": lambda f: chat2graph.convert(read_yaml(f), str(f), as_loaded=as_loaded),
        "tool-agent": lambda f: tool_agent.convert(read_json(f), str(f)),
    }
    if format not in readers:
        raise UsageError(f"unknown import format '{format}': expected {', '.join(IMPORT_FORMATS)}")
    converted = [_converted(readers[format], f, format) for f in files]
    empty = [c for c in converted if not c.tables and not c.problems]
    if empty and len(empty) == len(converted):
        reasons = [n.removeprefix(f"{empty[0].source}: ") for n in empty[0].notes]
        why = f": {reasons[0]}" if len(reasons) == 1 else ""
        raise UsageError(
            f"{empty[0].source} holds nothing toolctl can import as {format}{why}",
            details=reasons if len(reasons) > 1 else [],
        )
    # among others (a dump's every file), one holding nothing importable (a type TrustGraph
    # runs itself) is left out with its notes, as an item of a file is
    imported = validate(converted)
    if format == "chat2graph" and not as_loaded:
        hint = (
            "Chat2Graph's own loader drops an action's reference to a tool it does not "
            "define: 'toolctl import chat2graph --as-loaded' imports the file as it does"
        )
        return dataclasses.replace(imported, hint=hint)
    return imported
