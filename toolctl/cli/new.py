"""`toolctl new tool NAME`: a descriptor to edit (and for a local tool, its script)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from toolctl.cli.common import JsonOption
from toolctl.runtimes import TOOL_SECTIONS

Runtime = StrEnum("Runtime", {name: name for name in TOOL_SECTIONS})  # type: ignore[misc]


def install(app: typer.Typer) -> None:
    new = typer.Typer(help="Scaffold a descriptor to edit.", no_args_is_help=True)
    new.command("tool")(new_tool_command)
    app.add_typer(new, name="new")


def new_tool_command(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The tool's name.")],
    runtime: Annotated[Runtime, typer.Option("--runtime", help="How the tool runs.")] = Runtime[
        "local"
    ],
    json: JsonOption = False,
) -> None:
    """Write NAME.toml here, with the fields the runtime needs, and for a local tool
    NAME.py, a script that reads its arguments as JSON on stdin: edit them, then
    `toolctl register` and `toolctl run NAME`. A NAME `register` would refuse (a
    look-alike of a tool in force, or one another registry directory holds) is exit 3,
    nothing written.
    """
    from pathlib import Path

    from toolctl.registry.scaffold import new_tool
    from toolctl.terminal import render

    made = new_tool(name, runtime.value, Path.cwd())
    if json:
        files = [render.display_path(path) for path in made.files]
        render.print_json({"name": name, "runtime": runtime.value, "files": files, "run": made.run})
    else:
        shown = " and ".join(render.display_path(path) for path in made.files)
        render.note(f"created {shown}; edit, then: toolctl register && {made.run}")
    if made.warning is not None:
        render.warn(render.relativise(made.warning))
