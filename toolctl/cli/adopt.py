"""`toolctl adopt NAME`: an announced tool written into a file to review and register."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolctl.cli.common import (
    AnnouncedOption,
    JsonOption,
    RegistryOption,
    reporter,
    settings_for,
)


def install(app: typer.Typer) -> None:
    app.command("adopt")(adopt_command)


def adopt_command(
    name: Annotated[str, typer.Argument(metavar="NAME", help="An announced tool or service.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Default: ./NAME.toml."),
    ] = None,
    registry: RegistryOption = None,
    announced: AnnouncedOption = None,
    json: JsonOption = False,
) -> None:
    """Write the announced NAME (and its service) into a file to review and register."""
    from toolctl.registry.announced_view import adopt
    from toolctl.terminal import render

    settings = settings_for(registry, announced=announced)
    written = adopt(settings, reporter(settings, notes=not json), name, output)
    shown = render.display_path(written)
    line = f"wrote {shown}; review it, then `toolctl register` it"
    render.outcome({"name": name, "file": shown}, line, as_json=json)
