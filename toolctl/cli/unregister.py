"""`toolctl unregister KIND NAME`: the file that defines it, out of the registry."""

from __future__ import annotations

from typing import Annotated

import typer

from toolctl.cli.common import (
    JsonOption,
    RegistryOption,
    settings_for,
)
from toolctl.terminal.completion import complete_kinds, complete_of_kind


def install(app: typer.Typer) -> None:
    app.command("unregister")(unregister_command)


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
