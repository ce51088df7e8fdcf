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
    from toolctl.cli import render
    from toolctl.registry.locations import locations

    found = locations(settings_for(registry))
    if json:
        render.print_json(found.to_json())
        return
    lines = [f"project: {found.project or '(none: outside a project)'}"]
    if found.ignored_project is not None:
        lines.append(f"  ignored: {found.ignored_project} (another user owns it)")
    lines.append("search path (first wins):")
    for number, directory in enumerate(found.search_path, start=1):
        missing = "" if directory.exists else ", not created yet"
        lines.append(f"  {number}. {directory.path}  ({directory.source}{missing})")
    lines.append(f"register writes to: {found.writes_to or '(no writable directory)'}")
    lines.append("config files:")
    lines += [f"  {file}" for file in found.config_files] or ["  (none)"]
    if found.user_config not in found.config_files:
        lines.append(f"  ({found.user_config} would hold your defaults)")
    shown = {k: f"{v:g} s" if isinstance(v, float) else v for k, v in found.defaults.items()}
    lines += [f"{key}: {value}" for key, value in shown.items() if value is not None]
    lines += [f"data: {found.data_dir}", f"cache: {found.cache_dir}", f"state: {found.state_dir}"]
    typer.echo("\n".join(lines))
