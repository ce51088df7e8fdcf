"""`toolctl register FILE...`: descriptor files into the registry directory it writes to."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolctl.cli.common import (
    JsonOption,
    RegistryOption,
    settings_for,
)


def install(app: typer.Typer) -> None:
    app.command("register")(register_command)


def register_command(
    files: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="FILE...",
            help="Descriptor files (default: those in the current directory).",
            show_default=False,
        ),
    ] = None,
    registry: RegistryOption = None,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Update a definition of the same name in the directory register writes to.",
        ),
    ] = False,
    json: JsonOption = False,
) -> None:
    """Validate descriptors and write each entry into the registry directory in force
    (`toolctl where` shows it), paths relative to the file rewritten to point where they did.

    A definition already in force is left unchanged (exit 0). A name taken anywhere on the
    search path, or confusable with one, is refused (exit 3) and nothing is written;
    --replace updates one held by the directory register writes to.
    """
    from toolctl.registry.writer import register_files
    from toolctl.terminal import views

    written = register_files(files or [], settings_for(registry), replace=replace)
    views.print_registered(written, as_json=json)
