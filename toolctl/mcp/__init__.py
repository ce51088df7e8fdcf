"""toolctl's own small MCP client: stdio and streamable HTTP transports, sessions, pins.

Not the official ``mcp`` SDK on the ``toolctl run`` path, because of what it costs to load.
bench/mcp_client.py, 2 shared cores, Python 3.11, byte-compiled, medians of 11 and 15 fresh
interpreters alternating in one run each, wall time added over ``python -c pass``:

* ``import mcp.client.session, mcp.client.stdio``, SDK 1.30.0: +1,060 ms (+2,720 ms loaded)
* the same with SDK 2.3.0: +1,515 ms (+3,696 ms on the loaded machine)
* ``import toolctl.mcp.session, toolctl.mcp.stdio``: +49 ms (+141 ms loaded), of which
  ``-X importtime`` puts ~28 ms in our modules (the rest: json, subprocess, threading)

The whole start-up of one call (import, spawn the SDK 1.x probe server, handshake, one
``tools/call``, close) is 0.52x-0.56x of the official SDK 1.x client doing the same against
the same server (2,056 against 3,950 ms; 1,931 against 3,443 ms), where the server's own
start (~1 s on the SDK) dominates both. httpx is imported only when an HTTP server is used.
"""

from __future__ import annotations

from toolctl.mcp.asks import Progress
from toolctl.mcp.connect import connect_http, connect_stdio
from toolctl.mcp.pins import diff_tool, pin_of
from toolctl.mcp.results import Answer, map_result
from toolctl.mcp.session import LATEST, LEGACY_VERSIONS, MODERN, Session
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
