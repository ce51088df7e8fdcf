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
    """Make DIR (default: here) a project: toolctl.toml and a registry/ directory (with a
    .gitignore for the lock `register` takes there).

    From DIR and every directory below it, toolctl then reads registry/ first (then the
    user registry) and `register` writes there. A DIR that does not exist is created; one
    that is a project already keeps its toolctl.toml, and the registry directories it
    names inside DIR are made if missing (git keeps no empty directory).
    """
    from toolctl.registry.scaffold import init_project
    from toolctl.terminal import render

    made = init_project(directory)
    file, registry = render.display_path(made.file), render.display_path(made.registry)
    line = f"created {file} and {registry}/: `toolctl register` now writes there"
    made_now = [render.display_path(d) for d in made.made]
    if not made.created:
        line = f"{file} exists already; " + (
            f"made {', '.join(f'{d}/' for d in made_now)}" if made_now else "nothing changed"
        )
    document = {"created": made.created, "file": file, "registry": registry, "made": made_now}
    render.outcome(document, line, as_json=json)
    if made.outer is not None:  # as git does not: a project in a project hides the outer one
        outer = render.display_path(made.outer)
        render.warn(f"this project is inside {outer}'s: from here down, that one is not read")
