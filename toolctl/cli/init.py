"""`toolctl init [DIR]`: make a directory a toolctl project (toolctl.toml and its registry)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolctl.cli.common import JsonOption


def install(app: typer.Typer) -> None:
    app.command("init")(init_command)


def init_command(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="The project's directory.", show_default=False)
    ] = Path("."),
    json: JsonOption = False,
) -> None:
    """Make DIR (default: here) a project: toolctl.toml and a registry/ directory.

    From DIR and every directory below it, toolctl then reads registry/ first (then the
    user registry) and `register` writes there. A DIR that does not exist is created; one
    that is a project already is left as it is.
    """
    from toolctl.registry.scaffold import init_project
    from toolctl.terminal import render

    made = init_project(directory)
    file, registry = render.display_path(made.file), render.display_path(made.registry)
    line = f"created {file} and {registry}/: `toolctl register` now writes there"
    if not made.created:
        line = f"{file} exists already; nothing changed"
    document = {"created": made.created, "file": file, "registry": registry}
    render.outcome(document, line, as_json=json)
