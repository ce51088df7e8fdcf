"""`toolctl graph`: the whole toolkit (or one group of it) as DOT, Mermaid or JSON."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from toolctl.cli.common import JsonOption, RegistryOption, StrictOption, reporter, settings_for


class Format(StrEnum):
    dot = "dot"
    mermaid = "mermaid"
    json = "json"


def install(app: typer.Typer) -> None:
    app.command("graph")(graph_command)


def graph_command(
    format: Annotated[
        Format, typer.Option("--format", "-f", help="dot (Graphviz), mermaid, or json.")
    ] = Format.dot,
    group: Annotated[
        str | None,
        typer.Option(
            "--group", "-g", metavar="GROUP", help="Only this group's tools and their callers."
        ),
    ] = None,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Draw the toolkit: actions, the tools they call (scores on edges), and the groups.

    Edges to unknown actions or tools are left out; `toolctl check` reports them.
    Exit 4 when --group names no group.
    """
    from toolctl.cli import render
    from toolctl.registry.toolkit import draw_toolkit

    settings = settings_for(registry, strict)
    drawn = draw_toolkit(settings, reporter(settings), group)
    chosen = Format.json if json else format
    if chosen is Format.json:
        render.print_json(drawn.to_json())
    elif chosen is Format.mermaid:
        render.write_stdout(render.draw_mermaid(drawn.drawing))
    else:
        render.write_stdout(render.draw_dot(drawn.drawing))
