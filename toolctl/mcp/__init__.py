"""toolctl's own small MCP client: stdio and streamable HTTP transports, sessions, pins.

Not the official ``mcp`` SDK on the ``toolctl run`` path, because of what it costs to load.
Measured on the project machine (2 shared cores, Python 3.11, median of 15 fresh
interpreters, `python -c "import ..."` wall time minus a bare `python -c pass`):

* ``import mcp.client.session, mcp.client.stdio`` (SDK 1.x, 1.27): see IMPORT_COST below
* the same with SDK 2.x (2.3.0)
* ``import toolctl.mcp.session, toolctl.mcp.stdio`` (this package)

IMPORT_COST is filled in by bench/mcp_client.py's import section; the figures are quoted in
the README's benchmark section. httpx is imported only when an HTTP server is used.
"""

from __future__ import annotations

from toolctl.mcp.pins import diff_tool, pin_of
from toolctl.mcp.results import Answer, map_result
from toolctl.mcp.session import (
    LATEST,
    LEGACY_VERSIONS,
    MODERN,
    Progress,
    Session,
    connect_http,
    connect_stdio,
)
from toolctl.mcp.wire import MAX_MESSAGE, ProtocolError, ServerError

__all__ = [
    "LATEST",
    "LEGACY_VERSIONS",
    "MAX_MESSAGE",
    "MODERN",
    "Answer",
    "Progress",
    "ProtocolError",
    "ServerError",
    "Session",
    "connect_http",
    "connect_stdio",
    "diff_tool",
    "map_result",
    "pin_of",
]
