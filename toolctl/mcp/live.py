"""What MCP servers offer now: ``import mcp``'s listing and ``check --live``'s comparison.

Both connect to servers the registry names; the registry itself is the caller's to open
(this room never imports it): they take the entries it resolved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolctl.errors import ToolctlError, UsageError
from toolctl.findings import Finding, Severity
from toolctl.mcp.pins import UPDATE_HINT, changed_fields, pin_of
from toolctl.mcp.service import Entry, connect, connect_budget

if TYPE_CHECKING:
    from toolctl.settings import Settings

LIVE_WORKERS = 8
"""Servers ``check --live`` connects to at once."""


def live_tools(
    settings: Settings, service: Entry, timeout: float | None = None
) -> list[dict[str, Any]]:
    """The tools MCP ``service`` offers now (connects, lists, closes)."""
    section = service.data.get("mcp")
    if not isinstance(section, Mapping):
        raise UsageError(
            f"service '{service.name}' is not an MCP service ({service.file}:{service.line})",
            hint="only a service with [service.mcp] offers MCP tools",
        )
    from toolctl.processes.reaper import Reaping

    budget = connect_budget(section, timeout)
    with Reaping(settings):  # what the server started in sessions of its own goes with it
        session = connect(settings, service.name, section, Path(service.file).parent, budget)
        try:
            return session.list_tools(budget)
        finally:
            session.close()


def live_check(
    settings: Settings, services: Iterable[Entry], tools: Iterable[Entry], *, strict: bool = False
) -> list[Finding]:
    """Connect to every active MCP service among ``services`` (in parallel, each bounded by
    its connect timeout) and compare with the MCP ``tools`` among ``tools`` (the registry's
    winners): changed pins and vanished tools are errors, tools not imported warnings, an
    unreachable server a warning (an error when ``strict``)."""
    from concurrent.futures import ThreadPoolExecutor

    mcp_services = [  # a disabled service is not connected to (its client config had it off)
        s
        for s in services
        if isinstance(s.data.get("mcp"), Mapping) and s.data.get("state", "active") == "active"
    ]
    mcp_tools = [t for t in tools if isinstance(t.data.get("mcp"), Mapping)]

    def listed(service: Entry) -> list[dict[str, Any]] | ToolctlError:
        section = service.data["mcp"]
        budget = connect_budget(section)
        try:
            session = connect(settings, service.name, section, Path(service.file).parent, budget)
            try:
                return session.list_tools(budget)
            finally:
                session.kill()
        except ToolctlError as exc:
            return exc

    from toolctl.processes.reaper import Reaping

    workers = min(LIVE_WORKERS, max(len(mcp_services), 1))
    with Reaping(settings), ThreadPoolExecutor(max_workers=workers) as pool:
        answers = list(pool.map(listed, mcp_services))
    found: list[Finding] = []
    for service, answer in zip(mcp_services, answers, strict=True):
        mine = [t for t in mcp_tools if t.data.get("service") == service.name]
        if isinstance(answer, ToolctlError):
            from toolctl.mcp.oauth import LoginNeeded

            severity: Severity = "error" if strict else "warning"
            if isinstance(answer, LoginNeeded):
                message = f"{answer.message}: {answer.hint}"
                found.append(Finding(severity, "mcp-login", service.file, service.line, message))
                continue
            message = f"MCP service '{service.name}' is unreachable: {answer.message}"
            found.append(Finding(severity, "mcp-unreachable", service.file, service.line, message))
            continue
        live = {str(each["name"]): each for each in answer}
        found += [f for tool in mine if (f := _compare(service, tool, live)) is not None]
        found += _not_imported(service, mine, live)
    return found


def _compare(service: Entry, tool: Entry, live: Mapping[str, Mapping[str, Any]]) -> Finding | None:
    """What is wrong with one imported tool of ``service``, given what it offers now."""
    section = tool.data["mcp"]
    remote = str(section["name"])
    if remote not in live:
        message = f"MCP tool '{remote}' of service '{service.name}' vanished from the server"
        return Finding("error", "mcp-vanished", tool.file, tool.line, message)
    if section.get("pin") is None:
        message = f"tool '{tool.name}' has no pin: its definition is never checked"
        return Finding("warning", "mcp-unpinned", tool.file, tool.line, message)
    if pin_of(live[remote]) != section["pin"]:
        changed = changed_fields(tool.data, section, live[remote])
        message = (
            f"MCP tool '{remote}' of service '{service.name}' changed since it was "
            f"pinned ({', '.join(changed)}); " + UPDATE_HINT.format(service=service.name)
        )
        return Finding("error", "mcp-pin", tool.file, tool.line, message)
    return None


def _not_imported(
    service: Entry, mine: list[Entry], live: Mapping[str, Mapping[str, Any]]
) -> list[Finding]:
    """The warning on a service that offers tools the registry has not imported."""
    new = sorted(set(live) - {str(t.data["mcp"]["name"]) for t in mine})
    if not new:
        return []
    shown = ", ".join(new[:10]) + (", ..." if len(new) > 10 else "")
    message = (
        f"MCP service '{service.name}' offers {len(new)} tool(s) not imported: "
        f"{shown} ('toolctl import mcp {service.name}')"
    )
    return [Finding("warning", "mcp-new", service.file, service.line, message)]
