"""`toolctl recommend`: actions and tools near the start actions, by hops and threshold."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from toolctl.cli.common import (
    JsonOption,
    RegistryOption,
    StrictOption,
    given,
    open_registry,
    output_format,
    reporter,
    settings_for,
)
from toolctl.terminal.completion import complete_actions, complete_tools

if TYPE_CHECKING:
    from toolctl.settings import Settings


class Format(StrEnum):
    table = "table"
    json = "json"
    dot = "dot"
    mermaid = "mermaid"


def install(app: typer.Typer) -> None:
    app.command("recommend")(recommend_command)


def recommend_command(
    context: typer.Context,
    action: Annotated[
        list[str] | None,
        typer.Option(
            "--action",
            "-a",
            metavar="NAME",
            help="A start action; repeat for several.",
            autocompletion=complete_actions,
        ),
    ] = None,
    hops: Annotated[
        int,
        typer.Option(min=0, metavar="N", help="Rounds of Next edges to follow from the starts."),
    ] = 0,
    threshold: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0, metavar="SCORE", help="Lowest score an edge needs to be followed."
        ),
    ] = 0.5,
    format: Annotated[
        Format, typer.Option("--format", "-f", help="table, json, dot or mermaid.")
    ] = Format.table,
    after: Annotated[
        list[str] | None,
        typer.Option(
            "--after",
            metavar="TOOL",
            help="A tool just called; repeat, oldest first.",
            autocompletion=complete_tools,
        ),
    ] = None,
    query: Annotated[
        str, typer.Option("--query", "-q", metavar="TEXT", help="With --after: the request.")
    ] = "",
    top: Annotated[
        int, typer.Option(min=1, max=1000, metavar="N", help="With --after: how many tools.")
    ] = 5,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Recommend actions and tools by a bounded BFS over the toolkit graph (Chat2Graph),
    or, with --after, the next tools from the learned file (`graph learn`).

    Keeps the start actions, then for --hops rounds the actions a Next edge scoring at
    least --threshold leads to, then the tools their Call edges scoring at least
    --threshold name. Exit 0 when a start action exists (unknown ones are warned about),
    4 when none does, 2 for a bad option.
    """
    from toolctl.terminal import views

    settings = settings_for(registry, strict)
    chosen = Format(output_format(context, json, format.value))
    if after or not action:
        return _next_tools(context, settings, action, after or [], query, top, format, json)
    _refuse(context, ("top", "query"), "--action")
    from toolctl.registry.toolkit import recommend_tools

    result = recommend_tools(settings, reporter(settings), action, hops, threshold)
    if chosen is Format.table:
        return views.print_recommendation(result, threshold, color=settings.color)
    views.print_graph(result, chosen.value)


def _next_tools(
    context: typer.Context,
    settings: Settings,
    action: list[str] | None,
    after: list[str],
    query: str,
    top: int,
    format: Format,
    json: bool,
) -> None:
    """`recommend --after`: the learned next tools; the toolkit graph's options refused."""
    from toolctl.errors import UsageError
    from toolctl.learning.usecases import recommend_next
    from toolctl.terminal import views

    if action:
        raise UsageError("--action and --after cannot be combined")
    _refuse(context, ("hops", "threshold"), "--after")
    if not after:
        raise UsageError("give --action (the toolkit graph) or --after (the next tools)")
    if format in (Format.dot, Format.mermaid):
        raise UsageError(f"--format {format} draws --action results; --after prints table or json")
    found = recommend_next(open_registry(settings), after, query, top)
    views.print_next(found, as_json=json or format is Format.json, color=settings.color)


def _refuse(context: typer.Context, options: tuple[str, ...], chosen: str) -> None:
    """UsageError for an option given that ``chosen`` (--action or --after) does not take:
    ignored, it would look applied."""
    from toolctl.errors import UsageError

    for option in options:
        if given(context, option):
            raise UsageError(f"--{option} and {chosen} cannot be combined")
