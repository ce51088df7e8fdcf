"""`toolctl register FILE...` and `toolctl unregister KIND NAME`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolctl.cli.common import JsonOption, RegistryOption, settings_for


def install(app: typer.Typer) -> None:
    app.command("register")(register_command)
    app.command("unregister")(unregister_command)


def register_command(
    files: Annotated[list[Path], typer.Argument(metavar="FILE...", help="Descriptor files.")],
    registry: RegistryOption = None,
    json: JsonOption = False,
) -> None:
    """Validate descriptors and write each entry into the first writable registry directory.

    A name already taken anywhere on the search path, or confusable with one, is refused
    (exit 3) and nothing is written.
    """
    from toolctl.cli import render
    from toolctl.registry.writer import register_files

    written = register_files(files, settings_for(registry))
    if json:
        render.print_json(
            [{"kind": w.kind, "name": w.name, "file": render.display_path(w.path)} for w in written]
        )
        return
    for w in written:
        render.note(f"registered {w.kind} '{w.name}' in {render.display_path(w.path)}")


def unregister_command(
    kind: Annotated[str, typer.Argument(metavar="KIND", help="tool, service, action or group.")],
    name: Annotated[str, typer.Argument(metavar="NAME")],
    registry: RegistryOption = None,
) -> None:
    """Remove the file that defines KIND NAME (only a file holding just that entry)."""
    from toolctl.cli import render
    from toolctl.registry.query import kind_of
    from toolctl.registry.writer import unregister

    removed, now = unregister(kind_of(kind), name, settings_for(registry))
    render.note(f"unregistered {removed.kind} '{name}' ({render.display_path(removed.file)})")
    if now is not None:
        render.warn(
            f"the shadowed definition in {render.display_path(now.file)}:{now.line} is now in force"
        )
