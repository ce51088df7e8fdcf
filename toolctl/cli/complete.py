"""Shell completion from the registry in force: what typer calls for a value being typed.

Each function runs only while a shell asks for completions (``_TOOLCTL_COMPLETE`` set); a
command line that runs pays nothing for them but this small module's import.
"""

from __future__ import annotations

from typing import Any


def _settings(ctx: Any) -> Any:
    from toolctl.cli.common import settings_for

    return settings_for(ctx.params.get("registry"))


def _names(kind: str) -> Any:
    def complete(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
        from toolctl.registry.query import complete_names

        return complete_names(_settings(ctx), kind, incomplete)

    complete.__name__ = f"complete_{kind}"
    return complete


tools = _names("tool")
services = _names("service")
actions = _names("action")
groups = _names("group")


def arguments(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """``--arg NAME=``: the argument names of the tool named on the line so far."""
    from toolctl.registry.query import complete_arguments

    # `run NAME --arg <TAB>`: click stops parsing at the --arg that lacks its value, before
    # NAME is assigned, and leaves NAME among the context's extra args
    tool = ctx.params.get("name") or next(iter(ctx.args), None)
    if not tool or "=" in incomplete:
        return []
    return complete_arguments(_settings(ctx), tool, incomplete)


def kinds(incomplete: str) -> list[str]:
    return [k for k in ("tool", "service", "action", "group") if k.startswith(incomplete)]


def anything(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """`show NAME`: names of every kind (of ``--kind`` when given)."""
    from toolctl.registry.query import complete_names

    kind = ctx.params.get("kind")
    chosen = [kind.rstrip("s")] if kind else ["tool", "service", "action", "group"]
    settings = _settings(ctx)
    return sorted({item for k in chosen for item in complete_names(settings, k, incomplete)})


def of_kind(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """`unregister KIND NAME`: names of the kind given before."""
    from toolctl.registry.query import complete_names

    kind = str(ctx.params.get("kind") or "").rstrip("s")
    if kind not in ("tool", "service", "action", "group"):
        return []
    return complete_names(_settings(ctx), kind, incomplete)
