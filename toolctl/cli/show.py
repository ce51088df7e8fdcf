"""`toolctl show NAME`: the definition in force, where it lives, and what it shadows."""

from __future__ import annotations

from typing import Annotated

import typer

from toolctl.cli.common import JsonOption, RegistryOption, StrictOption, kind_of, settings_for


def install(app: typer.Typer) -> None:
    app.command("show")(show_command)


def show_command(
    name: Annotated[str, typer.Argument(metavar="NAME")],
    kind: Annotated[
        str | None,
        typer.Option("--kind", "-k", metavar="KIND", help="tool, service, action or group."),
    ] = None,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Show NAME with its winning file:line and every shadowed definition."""
    from toolctl.cli import render
    from toolctl.cli.common import open_registry
    from toolctl.errors import NotFound, UsageError
    from toolctl.names import KINDS
    from toolctl.registry.loader import Definition

    settings = settings_for(registry, strict)
    reg = open_registry(settings)
    kinds = [kind_of(kind)] if kind else list(KINDS)
    by_kind: dict[str, list[Definition]] = {}
    for definition in reg.find(name, kinds):
        by_kind.setdefault(definition.kind, []).append(definition)
    if not by_kind:
        suggestions = [s for k in kinds for s in reg.suggest(k, name)]
        kind = kinds[0] if len(kinds) == 1 else "name"
        raise NotFound(kind, name, suggestions[:3], searched=settings.search_path)
    if len(by_kind) > 1:
        raise UsageError(
            f"'{name}' names a {' and a '.join(by_kind)}", hint=f"pass --kind {'|'.join(by_kind)}"
        )
    ((winner, *shadowed),) = by_kind.values()
    if json:
        render.print_json(
            {
                "kind": winner.kind,
                "name": winner.name,
                "descriptor": winner.data,
                "file": render.display_path(winner.file),
                "line": winner.line,
                "shadowed": [
                    {"file": render.display_path(d.file), "line": d.line} for d in shadowed
                ],
            }
        )
        return
    where = f"{render.display_path(winner.file)}:{winner.line}"
    if winner.kind == "group":
        from toolctl.graph import usage_ordered

        fields = render.group_fields(winner.data, usage_ordered(winner.data))
    else:
        fields = render.flatten(
            {k: v for k, v in winner.data.items() if k not in ("schema", "name")}
        )
    if winner.data.get("title"):  # the name in the system it came from, first
        fields = [("title", winner.data["title"]), *(f for f in fields if f[0] != "title")]
    fields += [("shadows", f"{render.display_path(d.file)}:{d.line}") for d in shadowed]
    render.print_fields(f"{winner.kind} {winner.name}  ({where})", fields)
