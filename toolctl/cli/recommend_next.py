"""`toolctl recommend --after TOOL... [--query TEXT] --top K`: the next tools, ranked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolctl.settings import Settings


def recommend_after(
    action: Sequence[str] | None,
    after: Sequence[str] | None,
    query: str,
    top: int,
    settings: Settings,
    format: str,
    as_json: bool,
) -> None:
    """Blend the learned transitions, the toolkit graph and the request; only tools in force.

    Without a learned file the ranking still uses the graph and the request (a note says
    so). A --after name that is no tool in force is still context (a warning says so).
    """
    from toolctl.cli.common import open_registry
    from toolctl.errors import UsageError
    from toolctl.learning.usecases import recommend_next
    from toolctl.terminal import render

    if action:
        raise UsageError("--action and --after cannot be combined")
    if not after:
        raise UsageError("give --action (the toolkit graph) or --after (the next tools)")
    if format in ("dot", "mermaid"):
        raise UsageError(f"--format {format} draws --action results; --after prints table or json")
    result = recommend_next(open_registry(settings), after, query, top)
    for name in result.unknown:
        render.warn(f"tool '{name}' is not in force; used as context only")
    if result.learned is None:
        render.note(
            "no learned file on the search path (`toolctl graph learn`): graph and query only"
        )
    if as_json or format == "json":
        return render.print_json(result.to_json())
    rows = [[str(i), s.name, f"{s.score:.4f}"] for i, s in enumerate(result.ranked, 1)]
    render.print_table(["RANK", "TOOL", "SCORE"], rows, color=settings.color)
