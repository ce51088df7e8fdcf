"""`toolctl show NAME`: the definition in force, where it lives, and what it shadows."""

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
from toolctl.terminal.completion import complete_anything, complete_kinds


def install(app: typer.Typer) -> None:
    app.command("show")(show_command)


def show_command(
    name: Annotated[str, typer.Argument(metavar="NAME", autocompletion=complete_anything)],
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            "-k",
            metavar="KIND",
            help="tool, service, action or group.",
            autocompletion=complete_kinds,
        ),
    ] = None,
    registry: RegistryOption = None,
    announced: AnnouncedOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Show NAME with its winning file:line and every shadowed definition."""
    from toolctl.registry.query import show
    from toolctl.terminal.views import print_definition

    settings = settings_for(registry, strict, announced=announced)
    print_definition(show(settings, reporter(settings), name, kind), as_json=json)
