"""`toolctl recommend`: actions and tools near the start actions, by hops and threshold."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from toolctl.cli.common import JsonOption, RegistryOption, StrictOption, settings_for

if TYPE_CHECKING:
    from toolctl.graph import Recommendation
    from toolctl.registry.index import Registry
    from toolctl.settings import Settings


class Format(StrEnum):
    table = "table"
    json = "json"
    dot = "dot"
    mermaid = "mermaid"


def install(app: typer.Typer) -> None:
    app.command("recommend")(recommend_command)


def recommend_command(
    action: Annotated[
        list[str] | None,
        typer.Option("--action", "-a", metavar="NAME", help="A start action; repeat for several."),
    ] = None,
    hops: Annotated[
        int, typer.Option(min=0, help="Rounds of Next edges to follow from the starts.")
    ] = 0,
    threshold: Annotated[
        float,
        typer.Option(min=0.0, max=1.0, help="Lowest score an edge needs to be followed."),
    ] = 0.5,
    format: Annotated[
        Format, typer.Option("--format", "-f", help="table, json, dot or mermaid.")
    ] = Format.table,
    after: Annotated[
        list[str] | None,
        typer.Option("--after", metavar="TOOL", help="A tool just called; repeat, oldest first."),
    ] = None,
    query: Annotated[
        str, typer.Option("--query", "-q", metavar="TEXT", help="With --after: the request.")
    ] = "",
    top: Annotated[int, typer.Option(min=1, help="With --after: how many tools.")] = 5,
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
    import sys

    if after or not action:
        from toolctl.cli.recommend_next import recommend_after

        settings = settings_for(registry, strict)
        return recommend_after(action, after, query, top, settings, format.value, json)

    from toolctl.cli import render
    from toolctl.cli.common import open_registry
    from toolctl.graph import recommend
    from toolctl.registry.toolkit import load_toolkit

    settings = settings_for(registry, strict)
    reg = open_registry(settings)
    result = recommend(load_toolkit(reg, lazy=True), action, hops, threshold)
    _refuse_unknown(result, reg)
    chosen = Format.json if json else format
    if chosen is Format.json:
        render.print_json(result.to_json())
    elif chosen is Format.dot:
        sys.stdout.write(render.draw_dot(result.drawing()))
    elif chosen is Format.mermaid:
        sys.stdout.write(render.draw_mermaid(result.drawing()))
    else:
        _print_tables(result, threshold, settings)


def _refuse_unknown(result: Recommendation, reg: Registry) -> None:
    """Warn about each unknown start; with none left, fail with the first (exit 4)."""
    from toolctl.cli import render
    from toolctl.errors import NotFound

    problems = [NotFound("action", name, reg.suggest("action", name)) for name in result.unknown]
    if not result.actions:
        first, *problems = problems
    for problem in problems:
        render.warn(f"{problem}; skipped")
    if not result.actions:
        raise reg.not_found("action", first.name)


def _print_tables(result: Recommendation, threshold: float, settings: Settings) -> None:
    from toolctl.cli import render

    by_hops = sorted(result.actions, key=lambda a: (a.hops, a.name))
    rows = [
        [a.name, str(a.hops), " -> ".join(a.path), a.description.partition("\n")[0]]
        for a in by_hops
    ]
    render.print_table(["ACTION", "HOPS", "PATH", "DESCRIPTION"], rows, color=settings.color)
    if not result.tools:
        render.note(f"no Call edge scores {render.score_text(threshold)} or more")
        return
    rows = [
        [t.name, ", ".join(t.called_by), render.score_text(t.score), t.runtime or "?"]
        for t in result.tools
    ]
    typer.echo("")
    render.print_table(["TOOL", "CALLED BY", "SCORE", "RUNTIME"], rows, color=settings.color)
