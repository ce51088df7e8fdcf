"""`toolctl list [tools|services|actions|groups]` with filters, as a table or JSON."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolctl.cli.common import JsonOption, RegistryOption, StrictOption, kind_of, settings_for
from toolctl.runtimes import BY_NAME

if TYPE_CHECKING:
    from toolctl.registry.loader import Definition


def install(app: typer.Typer) -> None:
    app.command("list")(list_command)


def list_command(
    kind: Annotated[str, typer.Argument(metavar="[tools|services|actions|groups]")] = "tools",
    category: Annotated[str | None, typer.Option(help="Only this category.")] = None,
    runtime: Annotated[
        str | None,
        typer.Option(help=f"Only tools on this runtime ({', '.join(BY_NAME)})."),
    ] = None,
    search: Annotated[
        str | None,
        typer.Option(
            metavar="WORD", help="Only entries whose name, description or tags contain WORD."
        ),
    ] = None,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """List the definitions in force (shadowed ones are left out: see `show`, `check`)."""
    from toolctl.cli import render
    from toolctl.cli.common import open_registry
    from toolctl.registry.query import matches

    settings = settings_for(registry, strict)
    reg = open_registry(settings, full=True)
    if not json and kind_of(kind) == "tool" and search is None:
        fields = reg.iter_winner_fields("tool", _TOOL_FIELDS, strings=True)
        rows = _tool_rows(fields, category, runtime)
        render.print_table(_COLUMNS["tool"][0], rows, color=settings.color)
        return
    found = (  # streamed: a registry of 100,000 tools is never held whole
        d
        for d in reg.iter_winners(kind_of(kind))
        if matches(d.data, category=category, runtime=runtime, word=search)
    )
    if json:
        render.print_json_list(_json_rows(found))
        return
    columns, row = _COLUMNS[kind_of(kind)]
    render.print_table(columns, (row(d.data) for d in found), color=settings.color)


def _json_rows(found: Iterable[Definition]) -> Iterator[dict[str, Any]]:
    """``{"kind": kind, **data, "file": relpath, "line": line}``, made in the decoded data
    itself rather than in a copy of each row."""
    from toolctl.cli import render

    paths: dict[str, str] = {}  # ten tools to a file: one relpath per file
    for d in found:
        row = d.data
        row.setdefault("kind", d.kind)
        row["file"] = paths.get(d.file) or paths.setdefault(d.file, render.display_path(d.file))
        row["line"] = d.line
        yield row


def _tool_row(data: dict[str, Any]) -> list[str]:
    return [
        data["name"],
        (data.get("runtime") or "?")
        + (f" ({data['state']})" if data.get("state", "active") != "active" else ""),
        data.get("category") or "",
        data["description"],
    ]


_TOOL_FIELDS = ("state", "category", "description")


def _tool_rows(
    found: Iterable[tuple[str, str | None, list[Any]]], category: str | None, runtime: str | None
) -> Iterator[list[str]]:
    """``_tool_row`` of each tool from the few fields it shows (a table of 100,000 tools
    decodes no descriptor whole); ``state`` is absent when "active"."""
    from toolctl.registry.query import matches

    every = category is None and runtime is None
    for name, runs_on, (state, group, description) in found:
        if every or matches(
            {"category": group, "runtime": runs_on}, category=category, runtime=runtime
        ):
            shown = (runs_on or "?") + (f" ({state})" if state not in (None, "active") else "")
            yield [name, shown, group or "", description]


def _service_row(data: dict[str, Any]) -> list[str]:
    transport = data["transport"]
    row = BY_NAME.get(transport)
    where = row.endpoint(data[transport]) if row else ""
    return [data["name"], transport, where, data["description"]]


def _action_row(data: dict[str, Any]) -> list[str]:
    return [
        data["name"],
        ", ".join(e["tool"] for e in data["tools"]),
        ", ".join(e["action"] for e in data["next"]),
        data["description"],
    ]


def _group_row(data: dict[str, Any]) -> list[str]:
    return [data["name"], ", ".join(data["tools"]), data["description"]]


_COLUMNS = {
    "tool": (["NAME", "RUNTIME", "CATEGORY", "DESCRIPTION"], _tool_row),
    "service": (["NAME", "TRANSPORT", "ENDPOINT", "DESCRIPTION"], _service_row),
    "action": (["NAME", "CALLS", "NEXT", "DESCRIPTION"], _action_row),
    "group": (["NAME", "TOOLS", "DESCRIPTION"], _group_row),
}
