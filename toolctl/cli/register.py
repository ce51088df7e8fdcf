"""`toolctl register FILE...` and `toolctl unregister KIND NAME`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolctl.cli.common import (
    JsonOption,
    RegistryOption,
    settings_for,
)
from toolctl.terminal.completion import complete_kinds, complete_of_kind


def install(app: typer.Typer) -> None:
    app.command("register")(register_command)
    app.command("unregister")(unregister_command)


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


def unregister_command(
    kind: Annotated[
        str,
        typer.Argument(
            metavar="KIND", help="tool, service, action or group.", autocompletion=complete_kinds
        ),
    ],
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="NAME",
            help="The name to remove.",
            show_default=False,
            autocompletion=complete_of_kind,
        ),
    ] = None,
    with_tools: Annotated[
        bool, typer.Option("--with-tools", help="A service: remove the tools naming it too.")
    ] = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="Remove it though definitions in force name it."),
    ] = False,
    registry: RegistryOption = None,
    json: JsonOption = False,
) -> None:
    """Remove the file that defines KIND NAME (only a file holding just that entry) from
    the directory `register` writes to (`toolctl where`); a definition elsewhere on the
    search path is refused (exit 3), naming the -r that removes it there. So is one that
    definitions in force name (a service its tools, a tool the actions and groups naming
    it), unless --with-tools (a service's tools go with it) or --force."""
    from toolctl.registry.query import kind_and_name
    from toolctl.registry.writer import unregister
    from toolctl.terminal import views

    chosen = kind_and_name(kind, name, "unregister")
    done = unregister(*chosen, settings_for(registry), with_tools=with_tools, force=force)
    views.print_unregistered(done, as_json=json)
