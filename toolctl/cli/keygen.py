"""`toolctl keygen`: a signing key for a worker's announcements."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolctl.cli.common import JsonOption


def install(app: typer.Typer) -> None:
    app.command("keygen")(keygen_command)


def keygen_command(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="Where to write the key.")],
    json: JsonOption = False,
) -> None:
    """Write a new Ed25519 signing key to FILE (mode 0600) and print its public key.

    Workers sign with it (`worker SERVICE --announce --key FILE`); readers trust the
    public key (`toolctl trust add KEY --services PATTERN`). Exit 2 if FILE exists.
    """
    from toolctl.signing import generate
    from toolctl.terminal import render

    public = generate(file)
    if json:
        render.print_json({"file": render.display_path(file), "public_key": public})
        return
    typer.echo(public)
