"""Whether a tool may run: only an "active" tool runs unless the caller allows the others.

Kept apart from ``models`` so the run path checks it without importing pydantic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolctl.errors import UsageError

STATES = ("active", "staging", "disabled", "deprecated")
"""A tool's ``state``; tool_agent's ``status`` imports as one of these."""


def check_runnable(tool_data: Mapping[str, Any], allow_staging: bool) -> None:
    """Refuse a tool that is not "active", unless ``allow_staging`` (then any state runs)."""
    state = tool_data.get("state") or "active"
    if state == "active" or allow_staging:
        return
    raise UsageError(
        f"tool '{tool_data['name']}' is {state}, not active; it does not run by default",
        hint='pass --allow-staging to run it anyway, or set state = "active"',
    )


def check_service_runnable(tool: str, service: Mapping[str, Any], allow_staging: bool) -> None:
    """Refuse a tool whose service is disabled (a client config had the server off),
    unless ``allow_staging``."""
    if service.get("state", "active") == "active" or allow_staging:
        return
    raise UsageError(
        f"tool '{tool}' runs on service '{service['name']}', which is {service['state']}; "
        "it does not run by default",
        hint=f'pass --allow-staging to run it anyway, or set state = "active" in service '
        f"'{service['name']}'",
    )


def not_runnable(tool_data: Mapping[str, Any], service: Mapping[str, Any] | None) -> str | None:
    """Why a tool does not run by default (its state, or its service's), or None when it
    does: what the MCP doors leave out of ``tools/list``, as `run` refuses it."""
    try:
        check_runnable(tool_data, allow_staging=False)
        if service is not None:
            check_service_runnable(tool_data["name"], service, allow_staging=False)
    except UsageError as exc:
        return exc.message
    return None
