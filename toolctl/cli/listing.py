"""`toolctl list [tools|services|actions|groups]` with filters, as a table or JSON."""

from __future__ import annotations

from typing import Annotated

import typer

from toolctl.cli.common import (
    AnnouncedOption,
    JsonOption,
    RegistryOption,
    StrictOption,
    reporter,
    settings_for,
)
from toolctl.runtimes import BY_NAME, OWN_PLUGINS
from toolctl.terminal.completion import complete_list_kinds


def install(app: typer.Typer) -> None:
    app.command("list")(list_command)


def list_command(
    kind: Annotated[
        str,
        typer.Argument(
            metavar="[tools|services|actions|groups]", autocompletion=complete_list_kinds
        ),
    ] = "tools",
    category: Annotated[
        str | None, typer.Option(metavar="NAME", help="Only this category.")
    ] = None,
    runtime: Annotated[
        str | None,
        typer.Option(
            metavar="RUNTIME",
            help=f"Only tools on this runtime ({', '.join([*BY_NAME, *OWN_PLUGINS])}).",
        ),
    ] = None,
    search: Annotated[
        str | None,
        typer.Option(
            metavar="WORD", help="Only entries whose name, description or tags contain WORD."
        ),
    ] = None,
    registry: RegistryOption = None,
    announced: AnnouncedOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """List the definitions in force (shadowed ones are left out: see `show`, `check`)."""
    from toolctl.registry.query import list_definitions, list_table
    from toolctl.terminal import render
    from toolctl.terminal.views import empty_listing

    settings = settings_for(registry, strict, announced=announced)
    filters = {"category": category, "runtime": runtime, "search": search}
    if json:
        from toolctl.terminal.views import definition_rows

        found = list_definitions(settings, reporter(settings), kind, **filters)
        render.print_json_list(definition_rows(found))
        return
    table = list_table(settings, reporter(settings), kind, **filters)
    empty = empty_listing(kind, filtered=any(filters.values()))
    render.print_table(table.columns, table.rows, color=settings.color, empty=empty)
