"""`toolctl check`: every problem in the registry with file and line; exit 0 or 3."""

from __future__ import annotations

from enum import StrEnum
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
    """Check every descriptor: syntax, fields, references, names, the toolkit graph.

    Shadowed names and symlinks leaving a registry directory are warnings, errors under
    --strict; --strict also compares with toolctl.lock when there is one. Exit 0 when
    clean, 3 otherwise.
    """
    from toolctl.cli.views import print_findings
    from toolctl.registry.check import check

    result = check(settings_for(registry, strict), locked=locked, live=live)
    print_findings(result, "json" if json else format.value)
    if not result.ok:
        from toolctl.errors import RegistryError

        raise RegistryError("the registry has errors", quiet=True)  # the findings said so
