"""The learned graph drawn (`graph --learned`), and DOT turned into SVG or PNG by Graphviz."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolctl.settings import Settings


def draw_learned(format: str, registry: list[Path] | None, as_json: bool) -> None:
    """Draw the learned file the search path finds (exit 4 when there is none)."""
    from toolctl.cli.common import settings_for
    from toolctl.errors import NotFound, UsageError
    from toolctl.learning.draw import learned_dot
    from toolctl.learning.store import find_learned, read_learned
    from toolctl.terminal import render

    settings = settings_for(registry)
    path = find_learned(settings)
    if path is None:
        raise NotFound("learned file", "toolctl.learned", hint="run `toolctl graph learn` first")
    if as_json or format not in ("dot", "svg", "png"):
        raise UsageError("--learned draws dot, svg or png")
    dot = learned_dot(read_learned(path))
    if format == "dot":
        render.write_stdout(dot)
    else:
        write_picture(dot, format, settings)


def write_picture(dot: str, format: str, settings: Settings) -> None:
    """SVG or PNG bytes of the DOT text on standard output."""
    from toolctl.learning.draw import graphviz

    picture = graphviz(dot, format, settings.environ.get("PATH", ""))
    sys.stdout.buffer.write(picture)
    sys.stdout.flush()
