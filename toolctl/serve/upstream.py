"""The MCP servers behind the served tools: their resources, templates, prompts and
completions, served by the MCP doors too.

The servers are the services of the served MCP tools, in the registry's order of services.
A service whose ``[service.mcp.pins]`` holds pins (`import mcp` writes them) has only its
pinned, unchanged items served, as its tools are called only while they match their pins;
the others are logged and left out (a read or get of one is refused as unknown).
As for tools, first wins: the first service offering a resource URI, a template or a prompt
name holds it (a later one's is shadowed), and a prompt whose name is confusable with an
earlier one's is left out (the look-alike rule). A request naming one of them goes to the
service that holds it, over the session the MCP runner keeps for that service's calls; its
answer comes back as the server gave it. This runs on worker threads: sessions block.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from toolctl.errors import NotFound, ToolctlError
from toolctl.mcp.live import listed
from toolctl.mcp.pins import SINGULAR, UPDATE_HINT, served_pinned
from toolctl.names import fold

if TYPE_CHECKING:
    from toolctl.mcp import Session
    from toolctl.runners.base import ToolSpec
    from toolctl.serve.dispatch import Dispatcher

TIMEOUT = 30.0
"""Seconds an upstream server has to answer a listing, a read or a prompt."""
DOWN_FOR = 60.0
"""Seconds a service whose session could not be had is left out of the lists: a server
stuck in its handshake cost every resources/list and prompts/list its 30 s, one after
another (clients list both as they connect), and logged the same warning each time."""

LISTS = {
    # method: (the result's field, an item's key, the capability that offers it, its kind
    # under [service.mcp.pins])
    "resources/list": ("resources", "uri", "resources", "resources"),
    "resources/templates/list": (
        "resourceTemplates",
        "uriTemplate",
        "resources",
        "resource_templates",
    ),
    "prompts/list": ("prompts", "name", "prompts", "prompts"),
}


class Upstreams:
    """What the MCP services of a door's tools offer besides tools."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self._owners: dict[str, dict[str, ToolSpec]] = {}
        self._warned: set[tuple[str, str, str]] = set()
        self._down: dict[str, float] = {}
        """Services whose session could not be had, until when they are left out."""

    def listing(self, method: str) -> dict[str, Any]:
        """``resources/list``, ``resources/templates/list`` or ``prompts/list`` of every
        service, first wins."""
        field, key, capability, kind = LISTS[method]
        merged: list[dict[str, Any]] = []
        owners: dict[str, ToolSpec] = {}
        held: set[str] = set()
        for tool, session in self._sessions():
            if capability not in session.capabilities:
                continue
            pins = _pins(tool)
            for item in self._pages(tool, method, field):
                name = item.get(key)
                if not isinstance(name, str):
                    continue
                if not served_pinned(pins, kind, item):
                    self._unpinned(tool, kind, name, pins)
                    continue  # changed since it was pinned, or never pinned: not served
                look = fold(name) if key == "name" else name
                if look in held:
                    continue  # shadowed by an earlier service's, or a look-alike of it
                held.add(look)
                owners[name] = tool
                merged.append(item)
        self._owners[method] = owners
        return {field: merged}

    def read(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._forward("resources/read", params, self._resource_owner(params.get("uri")))

    def subscription(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._forward(method, params, self._resource_owner(params.get("uri")))
        return {}

    def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        owner = self._owner("prompts/list", params.get("name"))
        if owner is None:
            raise NotFound("prompt", str(params.get("name")), [])
        return self._forward("prompts/get", params, owner)

    def complete(self, params: dict[str, Any]) -> dict[str, Any]:
        ref = params.get("ref") or {}
        if ref.get("type") == "ref/prompt":
            owner = self._owner("prompts/list", ref.get("name"))
        else:
            owner = self._owner("resources/templates/list", ref.get("uri"))
        if owner is None:
            return {"completion": {"values": [], "total": 0, "hasMore": False}}
        return self._forward("completion/complete", params, owner)

    def _unpinned(self, tool: ToolSpec, kind: str, name: str, pins: Any) -> None:
        """Log, once per item and state, one the gateway leaves out for its pin."""
        service = str(tool.data.get("service"))
        state = "changed since it was pinned" if name in (pins.get(kind) or {}) else "not pinned"
        if (kind, name, state) in self._warned:
            return
        self._warned.add((kind, name, state))
        self.dispatcher.log_sink.warning(
            f"MCP {SINGULAR[kind]} '{name}' of service '{service}' is {state}: not served; "
            + UPDATE_HINT.format(service=service)
        )

    # -- owners and sessions ------------------------------------------------------------------

    def _owner(self, method: str, name: Any) -> ToolSpec | None:
        if not isinstance(name, str):
            return None
        if name not in self._owners.get(method, {}):
            self.listing(method)  # a client may ask without listing first
        return self._owners[method].get(name)

    def _resource_owner(self, uri: Any) -> ToolSpec:
        owner = self._owner("resources/list", uri)
        if owner is None and isinstance(uri, str):
            self._owner("resources/templates/list", "")
            templates = self._owners.get("resources/templates/list", {})
            owner = next((t for pattern, t in templates.items() if _matches(pattern, uri)), None)
        if owner is None:
            raise NotFound("resource", str(uri), [])
        return owner

    def _forward(
        self, method: str, params: dict[str, Any] | None, owner: ToolSpec
    ) -> dict[str, Any]:
        """``method`` of ``owner``'s service, over its calls' session (a refreshed login
        sends it again, as a call)."""
        result: dict[str, Any] = self._runner().request(owner, method, params, TIMEOUT)
        return result

    def _services(self) -> list[ToolSpec]:
        """One served tool of each MCP service, in the registry's order of services."""
        catalog = self.dispatcher.catalog
        first: dict[str, str] = {}
        for name, data in catalog.snapshot.tools.items():
            if data.get("runtime") == "mcp" and data.get("service"):
                first.setdefault(str(data["service"]), name)
        order = [d.name for d in catalog.registry.winners("service")]
        ranked = sorted(first, key=lambda s: order.index(s) if s in order else len(order))
        return [catalog.resolve(first[service]) for service in ranked]

    def _sessions(self) -> Iterator[tuple[ToolSpec, Session]]:
        for tool in self._services():
            service = str(tool.data.get("service"))
            if time.monotonic() < self._down.get(service, 0.0):
                continue  # failed a moment ago: not waited for again on every list
            try:
                yield tool, self._session(tool)
            except ToolctlError as exc:  # one server down: the others still list
                self._down[service] = time.monotonic() + DOWN_FOR
                self.dispatcher.log_sink.warning(f"{tool.name}: {exc}")

    def _session(self, tool: ToolSpec) -> Session:
        session: Session = self._runner().session(tool, TIMEOUT)
        return session

    def _runner(self) -> Any:
        return self.dispatcher.caller.runner("mcp")

    def _pages(self, tool: ToolSpec, method: str, field: str) -> Iterator[dict[str, Any]]:
        return listed(lambda params: self._forward(method, params, tool), field)


def _pins(tool: ToolSpec) -> Mapping[str, Any] | None:
    """The ``[service.mcp.pins]`` of the service ``tool`` runs through (None: none kept)."""
    section = (tool.service or {}).get("mcp")
    pins = section.get("pins") if isinstance(section, Mapping) else None
    return pins if isinstance(pins, Mapping) else None


def _matches(template: str, uri: str) -> bool:
    """Whether ``uri`` is one of ``template``'s (RFC 6570 ``{name}``: one path segment)."""
    parts = re.split(r"\{[^}]*\}", template)
    pattern = "[^/]+".join(re.escape(part) for part in parts)
    return re.fullmatch(pattern, uri) is not None


def install(server: Any, upstreams: Upstreams) -> None:
    """The SDK server's handlers for resources, templates, prompts and completion: each
    answered on a worker thread by ``upstreams``, a refusal as the JSON-RPC error the
    upstream server gave (or -32602 for a name nobody offers)."""
    import anyio
    from mcp import types
    from mcp.shared.exceptions import McpError

    from toolctl.mcp import ServerError

    def handler(result: Any, answer: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
        async def handle(request: Any) -> types.ServerResult:
            params = (
                request.params.model_dump(by_alias=True, mode="json", exclude_none=True)
                if request.params
                else {}
            )
            try:
                answered = await anyio.to_thread.run_sync(lambda: answer(params))
            except ServerError as exc:
                raise McpError(types.ErrorData(code=exc.code, message=exc.server_message)) from None
            except NotFound as exc:
                raise McpError(
                    types.ErrorData(code=types.INVALID_PARAMS, message=str(exc))
                ) from None
            except ToolctlError as exc:
                raise McpError(
                    types.ErrorData(code=types.INTERNAL_ERROR, message=str(exc))
                ) from None
            return types.ServerResult(result.model_validate(answered))

        return handle

    handlers = server.request_handlers
    handlers[types.ListResourcesRequest] = handler(
        types.ListResourcesResult, lambda _: upstreams.listing("resources/list")
    )
    handlers[types.ListResourceTemplatesRequest] = handler(
        types.ListResourceTemplatesResult, lambda _: upstreams.listing("resources/templates/list")
    )
    handlers[types.ReadResourceRequest] = handler(types.ReadResourceResult, upstreams.read)
    handlers[types.SubscribeRequest] = handler(
        types.EmptyResult, lambda p: upstreams.subscription("resources/subscribe", p)
    )
    handlers[types.UnsubscribeRequest] = handler(
        types.EmptyResult, lambda p: upstreams.subscription("resources/unsubscribe", p)
    )
    handlers[types.ListPromptsRequest] = handler(
        types.ListPromptsResult, lambda _: upstreams.listing("prompts/list")
    )
    handlers[types.GetPromptRequest] = handler(types.GetPromptResult, upstreams.prompt)
    handlers[types.CompleteRequest] = handler(types.CompleteResult, upstreams.complete)
