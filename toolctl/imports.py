"""Heavy libraries imported without the parts toolctl never uses.

``import httpx`` also imports httpx's command line (``httpx._main``, and with it click,
rich and pygments) whenever click is installed, as it is beside typer: a third of a
one-call `run --batch`, for a ``main()`` toolctl never calls. The HTTP runner and the MCP
client over HTTP import httpx through ``skip_httpx_cli`` first.
"""

from __future__ import annotations

import sys


def skip_httpx_cli() -> None:
    """Make the next ``import httpx`` skip ``httpx._main``: a stand-in module takes its
    place (its ``main`` says so), unless httpx is loaded already."""
    if "httpx" in sys.modules or "httpx._main" in sys.modules:
        return
    import types

    def main() -> None:
        raise RuntimeError("httpx's command line is not loaded inside toolctl; run `httpx`")

    stand_in = types.ModuleType("httpx._main")
    stand_in.main = main  # type: ignore[attr-defined]
    sys.modules["httpx._main"] = stand_in
