"""`toolctl graph`: the whole toolkit (or one group of it, or the learned graph) drawn.

`graph learn` and `graph evaluate` live in cli/learn.py and are added to this group.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from toolctl.cli.common import (
    JsonOption,
    RegistryOption,
    StrictOption,
    output_format,
    reporter,
    settings_for,
    subcommand,
)
from toolctl.terminal.completion import complete_groups


class Format(StrEnum):
    dot = "dot"
    mermaid = "mermaid"
    json = "json"
    svg = "svg"
    png = "png"


def install(app: typer.Typer) -> None:
    from toolctl.cli import learn

    group = typer.Typer(name="graph", invoke_without_command=True, no_args_is_help=False)
    group.callback()(graph_command)
    learn.install(group)
    app.add_typer(group)


def graph_command(
    ctx: typer.Context,
    format: Annotated[
        Format,
        typer.Option("--format", "-f", help="dot, mermaid, json, or svg/png (through Graphviz)."),
    ] = Format.dot,
    group: Annotated[
        str | None,
        typer.Option(
            "--group",
            "-g",
            metavar="GROUP",
            help="Only this group's tools and their callers.",
            autocompletion=complete_groups,
        ),
    ] = None,
    learned: Annotated[
        bool, typer.Option("--learned", help="The learned graph (`graph learn`), edge widths.")
    ] = False,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Draw the toolkit: actions, the tools they call (scores on edges), and the groups.

    Edges to unknown actions or tools are left out; `toolctl check` reports them.
    --learned draws the learned transitions instead (dot, svg or png). svg and png need
    Graphviz's `dot` (exit 5 without it). Exit 4 when --group names no group.
    """
    if subcommand(ctx):
        return
    from toolctl.learning.draw import graphviz
    from toolctl.learning.usecases import learned_drawing
    from toolctl.registry.toolkit import draw_toolkit
    from toolctl.terminal import diagrams, views

    settings = settings_for(registry, strict)
    chosen = output_format(ctx, json, format.value)
    if learned:
        dot = learned_drawing(settings, chosen)
    else:
        drawn = draw_toolkit(settings, reporter(settings), group)
        if chosen in ("json", "mermaid"):
            return views.print_graph(drawn, chosen)
        dot = diagrams.draw_dot(drawn.drawing)
    path = settings.environ.get("PATH", "")
    views.print_drawing(dot if chosen == "dot" else graphviz(dot, chosen, path))
