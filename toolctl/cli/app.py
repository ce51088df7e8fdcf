"""The typer application: one module per command or command group, assembled here."""

from __future__ import annotations

from typing import Any

import typer

from toolctl import __version__
from toolctl.cli import (
    broker,
    check,
    graph,
    interchange,
    listing,
    recommend,
    register,
    run,
    service,
    show,
    worker,
)

app = typer.Typer(
    name="toolctl",
    help="A first-wins registry and runner for agent tools.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"toolctl {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Keep, check, run and recommend agent tools. Exit codes: see `toolctl --help` in README."""


COMMANDS = (
    register,
    listing,
    show,
    check,
    run,
    service,
    worker,
    broker,
    recommend,
    graph,
    interchange,
)
for module in COMMANDS:
    module.install(app)


def command() -> Any:
    """The click command behind the app (built on demand: it is what `main` runs)."""
    return typer.main.get_command(app)
