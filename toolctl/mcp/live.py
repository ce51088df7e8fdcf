"""What MCP servers offer now: ``import mcp``'s listing and ``check --live``'s comparison.

Both connect to servers the registry names; the registry itself is the caller's to open
(this room never imports it): they take the entries it resolved.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolctl.descriptor_env import descriptor_secrets, unleaked_error
from toolctl.errors import ToolctlError, UsageError
from toolctl.findings import Finding, Severity
from toolctl.mcp.pins import (
    CAPABILITY,
    OFFERS,
    UPDATE_HINT,
    Offers,
    by_name,
    changed_fields,
    needs_task,
    offer_drift,
    offer_key,
    offer_pins,
    pin_of,
)
from toolctl.mcp.service import Entry, connect, connect_budget
from toolctl.mcp.wire import METHOD_NOT_FOUND, ServerError

if TYPE_CHECKING:
    from toolctl.mcp.session import Session
    from toolctl.settings import Settings

LIVE_WORKERS = 8
"""Servers ``check --live`` connects to at once."""
MAX_PAGES = 100
"""Pages of resources, templates or prompts read from one server."""


def live_tools(
    settings: Settings, service: Entry, timeout: float | None = None
) -> list[dict[str, Any]]:
    """The tools MCP ``service`` offers now (connects, lists, closes)."""
    return live_offer(settings, service, timeout, offers=False)[0]


def live_offer(
    settings: Settings,
    service: Entry,
    timeout: float | None = None,
    *,
    offers: bool = True,
    not_tools: list[str] | None = None,
) -> tuple[list[dict[str, Any]], Offers]:
    """The tools MCP ``service`` offers now, and (``offers``) its resources, resource
    templates and prompts, over one session (connects, lists, closes); ``not_tools`` gets
    the entries of its tool list that are no tools, each said."""
    section = service.data.get("mcp")
    if not isinstance(section, Mapping):
        raise UsageError(
            f"service '{service.name}' is not an MCP service ({service.file}:{service.line})",
            hint="only a service with [service.mcp] offers MCP tools",
        )
    from toolctl.processes.reaper import Reaping

    budget = connect_budget(section, timeout)
    with Reaping(settings):  # what the server started in sessions of its own goes with it
        try:
            session = connect(settings, service.name, section, Path(service.file).parent, budget)
            try:
                tools = session.list_tools(budget)
                if not_tools is not None:
                    not_tools += session.not_tools
                return tools, list_offers(session, budget) if offers else {}
            finally:
                session.close()
        except ToolctlError as exc:
            raise _unleaked(exc, settings, service) from None


def _unleaked(error: ToolctlError, settings: Settings, service: Entry) -> ToolctlError:
    """``error`` with the values the service passes (``${env:}`` in its headers, env,
    command) masked: a server may echo a token it refused."""
    return unleaked_error(error, descriptor_secrets((service.data,), settings.environ))


def list_offers(session: Session, timeout: float) -> Offers:
    """What ``session``'s server offers besides tools, by kind and key; a kind its
    capabilities do not declare is empty (a server may refuse to list it)."""
    offers: Offers = {}
    for kind, (method, field, _) in OFFERS.items():
        items: dict[str, dict[str, Any]] = {}
        if CAPABILITY[kind] in session.capabilities:
            asked = functools.partial(session.request, method, timeout=timeout)
            for item in listed(asked, field):
                key = offer_key(kind, item)
                if key is not None:
                    items.setdefault(key, item)
        offers[kind] = items
    return offers


def listed(
    ask: Callable[[dict[str, Any] | None], dict[str, Any]], field: str
) -> Iterator[dict[str, Any]]:
    """The items of a paginated listing (``ask`` sends a page's params, None for the first),
    for an import and for the gateway alike: pages followed until the cursor ends, or comes
    round (a server whose cursors loop cost MAX_PAGES asks), MAX_PAGES at most. A server
    answering the method "not found" offers none: the SDK's low-level Server declares
    `resources` for list_resources alone and refuses resources/templates/list, which
    failed the whole import (exit 1, no tool) and the gateway's listing."""
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        try:
            result = ask({"cursor": cursor} if cursor else None)
        except ServerError as exc:
            if exc.code != METHOD_NOT_FOUND:
                raise
            return
        items = result.get(field)
        yield from (item for item in items or [] if isinstance(item, dict))
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str) or not cursor or cursor in seen:
            return
        seen.add(cursor)


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

    def listed(service: Entry) -> tuple[list[dict[str, Any]], Offers] | ToolctlError:
        section = service.data["mcp"]
        budget = connect_budget(section)
        try:
            session = connect(settings, service.name, section, Path(service.file).parent, budget)
            try:
                return session.list_tools(budget), list_offers(session, budget)
            finally:
                session.kill()
        except ToolctlError as exc:
            return _unleaked(exc, settings, service)

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
        listed_tools, offers = answer
        live = by_name(listed_tools)
        found += [f for tool in mine if (f := _compare(service, tool, live)) is not None]
        found += _not_imported(service, mine, live)
        found += _offers_drift(service, offers)
    return found


def _offers_drift(service: Entry, offers: Offers) -> list[Finding]:
    """What differs between the resources and prompts a service offers now and its pins:
    a changed or vanished one is an error, a new one a warning; a service without pins
    that offers some is a warning (the gateway serves them unchecked)."""
    pins = service.data["mcp"].get("pins")
    live = offer_pins(offers)
    where = (service.file, service.line)
    update = UPDATE_HINT.format(service=service.name)
    if pins is None:
        count = sum(len(items) for items in live.values())
        if not count:
            return []
        message = (
            f"MCP service '{service.name}' offers {count} resource(s), template(s) or "
            f"prompt(s) and pins none: they are served unchecked; pin them with "
            f"'toolctl import mcp {service.name} --update --yes'"
        )
        return [Finding("warning", "mcp-unpinned", *where, message)]
    found = []
    for drift in offer_drift(pins, live):
        if drift.state == "new":
            message = (
                f"{drift.describe(service.name)} (not served); pin it with "
                f"'toolctl import mcp {service.name} --update --yes'"
            )
            found.append(Finding("warning", "mcp-new", *where, message))
            continue
        code = "mcp-pin" if drift.state == "changed" else "mcp-vanished"
        found.append(Finding("error", code, *where, f"{drift.describe(service.name)}; {update}"))
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
    """The warning on a service that offers tools the registry has not imported (those that
    run only as tasks, which no import takes, are not missed)."""
    callable_ = {name for name, tool in live.items() if not needs_task(tool)}
    new = sorted(callable_ - {str(t.data["mcp"]["name"]) for t in mine})
    if not new:
        return []
    shown = ", ".join(new[:10]) + (", ..." if len(new) > 10 else "")
    message = (
        f"MCP service '{service.name}' offers {len(new)} tool(s) not imported: "
        f"{shown} ('toolctl import mcp {service.name}')"
    )
    return [Finding("warning", "mcp-new", service.file, service.line, message)]
