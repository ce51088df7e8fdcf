"""Placeholder: the `worker` command is being built; it registers nothing yet."""

from __future__ import annotations

import typer


def install(app: typer.Typer) -> None:
    """Add this module's commands to the app."""
