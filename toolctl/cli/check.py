"""`toolctl check`: every problem in the registry with file and line; exit 0 or 3."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from toolctl.cli.common import JsonOption, RegistryOption, StrictOption, settings_for


class Format(StrEnum):
    text = "text"
    json = "json"
    github = "github"


def install(app: typer.Typer) -> None:
    app.command("check")(check_command)


def check_command(
    files: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="FILE...",
            help="Check these descriptor files against the registry in force, as `register` "
            "would take them, writing nothing.",
            show_default=False,
        ),
    ] = None,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    format: Annotated[
        Format, typer.Option("--format", "-f", help="text, json, or github (workflow annotations).")
    ] = Format.text,
    json: JsonOption = False,
    locked: Annotated[
        bool,
        typer.Option(
            "--locked", help="Also report every name that differs from toolctl.lock (errors)."
        ),
    ] = False,
    live: Annotated[
        bool,
        typer.Option(
            "--live",
            help="Also connect to every MCP service: changed pins and vanished tools are "
            "errors, tools not imported and unreachable servers warnings (errors with --strict).",
        ),
    ] = False,
) -> None:
    """Check every descriptor: syntax, fields, references, names, the toolkit graph, and
    what would stop one from running here.

    A {placeholder} naming no argument is an error. Shadowed names, symlinks leaving a
    registry directory, an executable not on PATH, a missing cwd and a container image
    not present locally (asked of the engine, never pulled) are warnings, errors under
    --strict; --strict also compares with toolctl.lock when there is one. With FILE...,
    only those files are checked, against the registry in force. Exit 0 when clean, 3
    otherwise.
    """
    from toolctl.cli import render
    from toolctl.cli.common import require_directories
    from toolctl.registry.candidates import check_files
    from toolctl.registry.check import run_check
    from toolctl.runners.images import LocalImages

    settings = settings_for(registry, strict)
    require_directories(settings)
    images = LocalImages(settings)
    if files:
        result = check_files(files, settings, images=images)
    else:
        result = run_check(settings, locked=locked, images=images)
    if live:
        from dataclasses import replace

        from toolctl.registry.check import Finding
        from toolctl.runners.mcp import live_check

        found = [Finding(*each) for each in live_check(settings, strict=settings.strict)]
        result = replace(result, findings=[*result.findings, *found])
    chosen = Format.json if json else format
    if chosen is Format.json:
        render.print_json(result.to_json(render.display_path))
    else:
        for finding in result.findings:
            where = render.display_path(finding.file)
            message = render.relativise(finding.message)
            if chosen is Format.github:
                where, message = _escape(where, True), _escape(message, False)
                typer.echo(f"::{finding.severity} file={where},line={finding.line}::{message}")
            else:
                typer.echo(f"{where}:{finding.line}: {finding.severity}: {message}")
        for note in result.notes:
            render.note(note)
        render.note(result.summary())
    if not result.ok:
        from toolctl.errors import RegistryError

        raise RegistryError("the registry has errors", quiet=True)  # the findings said so


def _escape(text: str, is_property: bool) -> str:
    """GitHub workflow-command escaping (``%``, CR and LF; also ``:`` and ``,`` in properties)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if is_property else text
