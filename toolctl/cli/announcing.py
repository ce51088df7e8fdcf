"""`toolctl keygen`, `toolctl trust add|list|remove` and `toolctl adopt`: signed
announcements."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolctl.cli.common import (
    AnnouncedOption,
    JsonOption,
    RegistryOption,
    reporter,
    settings_for,
)


def install(app: typer.Typer) -> None:
    app.command("keygen")(keygen_command)
    trust = typer.Typer(help="The keys whose announcements this registry believes.")
    trust.command("add")(trust_add_command)
    trust.command("list")(trust_list_command)
    trust.command("remove")(trust_remove_command)
    app.add_typer(trust, name="trust")
    app.command("adopt")(adopt_command)


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


def trust_add_command(
    key: Annotated[
        str,
        typer.Argument(
            metavar="PUBLIC_KEY",
            help='ed25519:BASE64; "any" opts in to unsigned or untrusted announcements.',
        ),
    ],
    services: Annotated[
        str,
        typer.Option("--services", metavar="PATTERN", help='Services it may announce ("joke-*").'),
    ],
    registry: RegistryOption = None,
    json: JsonOption = False,
) -> None:
    """Trust PUBLIC_KEY to announce the services matching PATTERN ([[trust]] in trust.toml)."""
    from toolctl.registry.announced_view import add_trust
    from toolctl.terminal import render

    path, added = add_trust(settings_for(registry), key, services)
    shown = render.display_path(path)
    line = (
        f"{'trusted' if added else 'already trusted:'} {key} for services {services!r} in {shown}"
    )
    document = {"key": key, "services": services, "file": shown, "added": added}
    render.outcome(document, line, as_json=json)


def trust_list_command(registry: RegistryOption = None, json: JsonOption = False) -> None:
    """List the [[trust]] entries in force: each key, the services it may announce, and
    the file and line that trust it (an entry that is not valid is warned of)."""
    from toolctl.registry.announced_view import trusted_keys
    from toolctl.terminal import views

    settings = settings_for(registry)
    entries, problems = trusted_keys(settings)
    told = reporter(settings)
    views.print_trusted(entries, problems, told, as_json=json, color=settings.color)


def trust_remove_command(
    key: Annotated[str, typer.Argument(metavar="PUBLIC_KEY", help="A key `trust list` shows.")],
    services: Annotated[
        str | None,
        typer.Option("--services", metavar="PATTERN", help="Only its entry for PATTERN."),
    ] = None,
    registry: RegistryOption = None,
    json: JsonOption = False,
) -> None:
    """Stop trusting PUBLIC_KEY: remove its [[trust]] entries (for PATTERN only, with
    --services) from the registry directory `register` writes to. Its announcements are
    refused from the next read on. Exit codes: 3 trusted from another directory (its -r is
    named; nothing removed), 4 not trusted."""
    from toolctl.registry.announced_view import remove_trust
    from toolctl.terminal import views

    removed = remove_trust(settings_for(registry), key, services)
    views.print_untrusted(key, removed, as_json=json)


def adopt_command(
    name: Annotated[str, typer.Argument(metavar="NAME", help="An announced tool or service.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Default: ./NAME.toml."),
    ] = None,
    registry: RegistryOption = None,
    announced: AnnouncedOption = None,
    json: JsonOption = False,
) -> None:
    """Write the announced NAME (and its service) into a file to review and register."""
    from toolctl.registry.announced_view import adopt
    from toolctl.terminal import render

    settings = settings_for(registry, announced=announced)
    written = adopt(settings, reporter(settings, notes=not json), name, output)
    shown = render.display_path(written)
    line = f"wrote {shown}; review it, then `toolctl register` it"
    render.outcome({"name": name, "file": shown}, line, as_json=json)
