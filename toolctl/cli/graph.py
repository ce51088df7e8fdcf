"""`toolctl graph`: the whole toolkit (or one group of it) as DOT, Mermaid or JSON."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from toolctl.cli.common import JsonOption, RegistryOption, StrictOption, settings_for
from toolctl.registry.toolkit import load_toolkit


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
    import sys

    from toolctl.cli import render
    from toolctl.cli.common import open_registry
    from toolctl.graph import describe

    reg = open_registry(settings_for(registry, strict), full=True)
    toolkit = load_toolkit(reg)
    if group is not None:
        reg.resolve("group", group)  # NotFound with close matches
    drawing = toolkit.drawing() if group is None else toolkit.narrowed(group)
    chosen = Format.json if json else format
    if chosen is Format.json:
        render.print_json(describe(toolkit, drawing))
    elif chosen is Format.mermaid:
        sys.stdout.write(render.draw_mermaid(drawing))
    else:
        sys.stdout.write(render.draw_dot(drawing))
