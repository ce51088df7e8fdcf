"""The REST routes: tool_agent's /health, /tools and /run_tool, plus /recommend,
/openapi.json and /metrics (Prometheus). Each handler parses, makes one call, and shapes
the answer; /run_tool continues the client's ``traceparent``."""

from __future__ import annotations

import json
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolctl import __version__
from toolctl.arguments import MAX_DEPTH, DuplicateKey, is_text, json_problem, unique_keys
from toolctl.errors import RegistryError, ToolctlError, UsageError
from toolctl.records import Origin
from toolctl.runners.base import ToolResult
from toolctl.runtimes import BY_NAME
from toolctl.serve.dispatch import Dispatcher

LISTED_RUNTIMES = ("local", "container", "http", "pulsar")
"""The runtimes ``GET /tools`` always lists, with no tool or many, in tool_agent's order;
any other runtime (``mcp``, a plugin's) follows when a tool uses it. Their names are the
table of runtimes' ``display_name``."""


def routes(dispatcher: Dispatcher) -> list[Route]:
    async def health(request: Request) -> Response:
        served = len(dispatcher.catalog.snapshot.tools)
        return json_body({"status": "ok", "version": __version__, "tools": served})

    async def tools(request: Request) -> Response:
        return json_body(await anyio.to_thread.run_sync(agent_tools, dispatcher))

    async def run_tool(request: Request) -> Response:
        try:
            tool_id, params = _run_request(await read_json(request))
        except ValueError as exc:
            return json_body({"success": False, "error": str(exc), "exit_code": 2}, 400)
        origin = Origin("serve", None, request.headers.get("traceparent"))
        try:
            _not_from_here(request, tool_id)
            result = await dispatcher.call(tool_id, params, via="rest", origin=origin)
        except ToolctlError as exc:
            status, body = failure_body(exc)
            return json_body(body, status)
        return json_body(result.to_json())

    async def recommend(request: Request) -> Response:
        try:
            document = await anyio.to_thread.run_sync(_recommend, dispatcher, request)
        except ToolctlError as exc:
            status, body = failure_body(exc)
            return json_body({"error": body["error"]}, status)
        return json_body(document)

    async def metrics(request: Request) -> Response:
        from toolctl.records.metrics import CONTENT_TYPE

        exposition = dispatcher.metrics.exposition() if dispatcher.metrics else b""
        return Response(exposition, headers={"Content-Type": CONTENT_TYPE})

    async def openapi(request: Request) -> Response:
        from toolctl.serve.openapi import document

        return json_body(document())

    return [
        Route("/health", health, methods=["GET"]),
        Route("/tools", tools, methods=["GET"]),
        Route("/run_tool", run_tool, methods=["POST"]),
        Route("/recommend", recommend, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]


def _not_from_here(request: Request, tool_id: str) -> None:
    """RegistryError for a call this gateway sent itself (see runners.tool_agent): a tool
    whose tool_agent router is this very server would call it again, and again."""
    from toolctl.runners.tool_agent import GATEWAY_HEADER, GATEWAY_ID

    if request.headers.get(GATEWAY_HEADER) == GATEWAY_ID:
        raise RegistryError(
            f"the call to '{tool_id}' came from this gateway: a tool it serves names it as "
            "its tool_agent router, which would call it again and again",
            hint="point that tool's options.router at tool_agent's router, or serve on "
            "another --port",
        )


def _run_request(body: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(body, dict):
        raise ValueError('the body must be a JSON object {"tool_id": ..., "params": {...}}')
    tool_id, params = body.get("tool_id"), body.get("params", {})
    if not isinstance(tool_id, str) or not tool_id:
        raise ValueError("tool_id must be a non-empty string")
    if not is_text(tool_id):
        raise ValueError("tool_id is not valid Unicode (a lone surrogate)")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ValueError("params must be a JSON object of arguments")
    return tool_id, params


def agent_tools(dispatcher: Dispatcher) -> dict[str, Any]:
    """tool_agent's /tools: backend runtimes with counts, groups, and the served tools."""
    from toolctl.processes.table import ProcessTable

    catalog = dispatcher.catalog
    snapshot = catalog.snapshot
    served = snapshot.tools
    groups = [
        {
            "group_id": name,
            "name": group.get("title") or name,  # as a tool's: its description is not it
            "description": group.get("description") or "",
            "tool_ids": [t for t in group["tools"] if t in served],
            "usage_order": [t for t in group.get("usage_order", []) if t in served],
        }
        for name, group in sorted(snapshot.groups.items())
        if any(t in served for t in group["tools"])
    ]
    member_of: dict[str, list[str]] = {}
    for name, group in sorted(snapshot.groups.items()):
        for tool in group["tools"]:
            member_of.setdefault(tool, []).append(name)
    table = ProcessTable(catalog.settings)
    counts: dict[str, int] = dict.fromkeys(LISTED_RUNTIMES, 0)
    tools = []
    for name, data in sorted(served.items()):
        runtime = data.get("runtime") or "unknown"
        counts[runtime] = counts.get(runtime, 0) + 1
        service = data.get("service")
        state = "ready"
        if service and runtime == "http":
            state = "running" if table.get(service) is not None else "stopped"
        tools.append(
            {
                "tool_id": name,
                "name": data.get("title") or name,
                "category": data.get("category"),
                "backend_runtime": runtime,
                "group_ids": member_of.get(name, []),
                "state": data.get("state") or state,
            }
        )
    runtimes = [
        {"backend_runtime": rt, "name": display_name(rt), "tool_count": n}
        for rt, n in counts.items()
    ]
    return {"backend_runtimes": runtimes, "groups": groups, "tools": tools}


def display_name(runtime: str) -> str:
    """The table of runtimes' name for ``runtime``; a plugin's runtime goes by its own."""
    row = BY_NAME.get(runtime)
    return row.display_name if row else runtime


def _recommend(dispatcher: Dispatcher, request: Request) -> dict[str, Any]:
    from dataclasses import replace

    from toolctl.errors import NotFound
    from toolctl.graph import DEFAULT_THRESHOLD, recommend
    from toolctl.registry.toolkit import load_toolkit

    actions = request.query_params.getlist("action")
    if not actions:
        raise UsageError("give at least one ?action=NAME")
    hops = _number(request, "hops", int, 0)
    threshold = _number(request, "threshold", float, DEFAULT_THRESHOLD)
    catalog = dispatcher.catalog
    with catalog.lock:
        registry = catalog.registry
        result = recommend(load_toolkit(registry, lazy=True), actions, hops, threshold)
        if not result.actions:
            name = result.unknown[0]
            raise NotFound("action", name, registry.suggest("action", name))
        served = catalog.snapshot.tools  # `serve --tool X`: nothing of the tools not served
    kept = replace(
        result,
        tools=tuple(t for t in result.tools if t.name in served),
        edges=tuple(e for e in result.edges if e.kind != "call" or e.target in served),
    )
    return kept.to_json()


def _number(request: Request, key: str, kind: type[int] | type[float], default: Any) -> Any:
    raw = request.query_params.get(key)
    if raw is None:
        return default
    try:
        return kind(raw)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise UsageError(f"{key} must be {what}, got {raw!r}") from None


STATUS_BY_EXIT = {1: 200, 2: 422, 3: 409, 4: 404, 5: 503, 124: 504}
STATUS_BY_EXIT.update(dict.fromkeys((129, 130, 131, 143), 503))  # a call a signal stopped


def failure_body(exc: ToolctlError) -> tuple[int, dict[str, Any]]:
    """A call that did not run (or ran out of time) as a status and a ToolResult body;
    ``exit_code`` there is the code `toolctl run` would have exited with."""
    status = STATUS_BY_EXIT.get(exc.exit_code, 500)
    return status, ToolResult.refused(exc).to_json()


def json_body(data: Any, status: int = 200) -> Response:
    return Response(
        json.dumps(data, sort_keys=True, separators=(",", ":")),
        status_code=status,
        media_type="application/json",
    )


async def read_json(request: Request) -> Any:
    """The request body as JSON; ValueError with a one-line reason otherwise."""
    body = await request.body()
    try:
        return json.loads(body, object_pairs_hook=unique_keys)
    except RecursionError:
        raise ValueError(f"the body nests deeper than JSON is read here ({MAX_DEPTH})") from None
    except DuplicateKey as exc:
        raise ValueError(f"the body gives {exc} twice") from None
    except ValueError as exc:  # UnicodeDecodeError is one
        raise ValueError(f"the body is not JSON: {json_problem(exc)}") from None
