"""`toolctl check`: every problem in the registry with file and line; exit 0 or 3."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from toolctl.cli.common import (
    AnnouncedOption,
    JsonOption,
    RegistryOption,
    StrictOption,
    output_format,
    settings_for,
)


class Format(StrEnum):
    text = "text"
    json = "json"
    github = "github"
    sarif = "sarif"


def install(app: typer.Typer) -> None:
    app.command("check")(check_command)


def check_command(
    context: typer.Context,
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
    announced: AnnouncedOption = None,
    strict: StrictOption = False,
    format: Annotated[
        Format,
        typer.Option(
            "--format",
            "-f",
            help="text, json, github (workflow annotations) or sarif (SARIF 2.1.0, code scanning).",
        ),
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
    otherwise; 2 for a bad option or a FILE that cannot be read.
    """
    from toolctl.registry.check import check
    from toolctl.terminal.views import print_findings

    settings = settings_for(registry, strict, announced=announced)
    result = check(settings, files=files or [], locked=locked, live=live)
    print_findings(result, output_format(context, json, format.value))
    if not result.ok:
        from toolctl.errors import RegistryError

        raise RegistryError("the registry has errors", quiet=True)  # the findings said so
