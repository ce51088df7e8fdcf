"""`toolctl where`: the registry search path, where `register` writes, the config in force."""

from __future__ import annotations

import typer

from toolctl.cli.common import JsonOption, RegistryOption, settings_for


def install(app: typer.Typer) -> None:
    app.command("where")(where_command)


def where_command(registry: RegistryOption = None, json: JsonOption = False) -> None:
    """Show where toolctl looks and writes: the registry directories in order (first wins),
    the one `register` writes to, the config files in force, the data, cache and state
    directories.

    A project is the nearest directory at or above this one holding toolctl.toml (`toolctl
    init` makes one); outside a project, the user registry is read and written.
    """
    from toolctl.registry.locations import locations
    from toolctl.terminal.views import print_locations

    print_locations(locations(settings_for(registry)), as_json=json)
