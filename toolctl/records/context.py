"""What a worker needs to record the calls it serves, kept off the `toolctl run` path.

``CURRENT_ORIGIN``: the origin of the call a thread is serving, for a handler that calls
through calls/ itself: a worker hosting a registered tool (`worker --tool`) sets it around
the handler, which passes it to ``Caller.call``, so the call is recorded under the
request's trace and id. ``Hosted`` and ``Finished`` stand for a ToolSpec and a ToolResult
where a worker serves a service's handler, which has neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, NamedTuple

from toolctl.records import Origin

CURRENT_ORIGIN: ContextVar[Origin | None] = ContextVar("toolctl_origin", default=None)


class Finished(NamedTuple):
    """A result for a call that is not a ToolResult (a worker's handler answering)."""

    success: bool
    output: str = ""
    error: str | None = None
    exit_code: int | None = None
    truncated: int = 0


class Hosted(NamedTuple):
    """A tool for a record that is not a ToolSpec (a service's handler hosted by a worker)."""

    name: str
    runtime: str
    data: Mapping[str, Any] = {}
    service: Mapping[str, Any] | None = None
