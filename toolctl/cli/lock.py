"""`toolctl lock`: record the names in force in toolctl.lock for `check --locked`."""

from __future__ import annotations

import typer

from toolctl.cli.common import AnnouncedOption, JsonOption, RegistryOption, settings_for


def install(app: typer.Typer) -> None:
    app.command("lock")(lock_command)


def lock_command(
    registry: RegistryOption = None, announced: AnnouncedOption = None, json: JsonOption = False
) -> None:
    """Write toolctl.lock in the first writable registry directory.

    It records, for every name in force, its kind, file and a hash of its definition (in
    a project, the user registry read after it is left out: it is one person's, and CI
    runs without it); `toolctl check --locked` then reports every name that moved,
    changed, appeared or vanished (exit 3). A registry with errors is not locked (exit
    3): fix them first.
    """
    from toolctl.registry.lockfile import lock
    from toolctl.terminal import render

    path, count = lock(settings_for(registry, announced=announced))
    shown = render.display_path(path)
    line = f"locked {count} name(s) in {shown}"
    render.outcome({"file": shown, "names": count}, line, as_json=json)
