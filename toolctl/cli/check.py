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
    from toolctl.cli import render
    from toolctl.cli.common import require_directories
    from toolctl.registry.check import run_check

    settings = settings_for(registry, strict)
    require_directories(settings)
    result = run_check(settings, locked=locked)
    if live:
        from dataclasses import replace

        from toolctl.mcp.live import live_check
        from toolctl.registry.index import Registry

        reg = Registry.open(settings, full=True)
        found = live_check(
            settings, reg.winners("service"), reg.winners("tool"), strict=settings.strict
        )
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
        render.note(result.summary())
    if not result.ok:
        from toolctl.errors import RegistryError

        raise RegistryError("the registry has errors", quiet=True)  # the findings said so


def _escape(text: str, is_property: bool) -> str:
    """GitHub workflow-command escaping (``%``, CR and LF; also ``:`` and ``,`` in properties)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if is_property else text
