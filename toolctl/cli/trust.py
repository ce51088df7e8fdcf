"""`toolctl trust add|list|remove`: the keys whose announcements this registry believes."""

from __future__ import annotations

from typing import Annotated

import typer

from toolctl.cli.common import (
    JsonOption,
    RegistryOption,
    reporter,
    settings_for,
)


def install(app: typer.Typer) -> None:
    trust = typer.Typer(help="The keys whose announcements this registry believes.")
    trust.command("add")(trust_add_command)
    trust.command("list")(trust_list_command)
    trust.command("remove")(trust_remove_command)
    app.add_typer(trust, name="trust")


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
