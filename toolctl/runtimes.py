"""The table of runtimes: one row per built-in runtime, from which the rest derives.

A row holds a runtime's descriptor sections (``[tool.X]``, ``[service.X]``) and their
pydantic models, its runner's entry point, its display name, and what ``list services``
and ``service up`` say of it. models/, registry/lint.py, ``list``, ``service`` and the
gateway's ``GET /tools`` read this table, and ``toolctl.runners`` finds runners with it,
so adding a runtime (an MCP one, say) is its own module(s) plus one row here. Rows hold
dotted names, never classes: this module sits with models and errors at the bottom, loads
on every ``toolctl run`` and imports nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

MCP_IDLE_TIMEOUT = 600.0
"""Seconds a kept MCP session a run started waits for another call (``idle_timeout``)."""


class Runtime(NamedTuple):
    """One runtime: its descriptor sections, its runner, its names, its listing column."""

    name: str
    runner: str
    """``module:Class`` of its runner: must match its ``toolctl.runners`` entry point."""
    display_name: str
    """What a person reads for it (tool_agent's ``GET /tools`` lists runtimes so)."""
    tool_model: str | None = None
    """``module:Model`` of ``[tool.NAME]``, or None when a tool names it only via a service."""
    service_model: str | None = None
    """``module:Model`` of ``[service.NAME]``, or None when it has no services."""
    tool_needs: str = ""
    """What a tool naming a service of this runtime must put in its ``[tool.NAME]``
    (HTTP's ``path``); empty when such a tool needs no section of its own."""
    endpoint: Callable[[Mapping[str, Any]], str] = lambda section: ""
    """The ENDPOINT column of ``list services``, from the service's section."""
    not_managed: tuple[str, str] = ("", "")
    """What ``service up`` says (message, hint) of such a service toolctl does not start;
    formatted with ``name`` and the keys of the service's section."""
    local_images: str | None = None
    """``module:Factory`` of what `check` asks whether an image is present locally
    (``registry.runnable.ImageLookup``), for a runtime that runs images."""


def _http_endpoint(section: Mapping[str, Any]) -> str:
    return str(section.get("url") or "managed: " + " ".join(section.get("start") or []))


RUNTIMES: tuple[Runtime, ...] = (
    Runtime(
        "local",
        "toolctl.runners.local:LocalRunner",
        "Local subprocess",
        "toolctl.models.tool_sections:LocalRuntime",
    ),
    Runtime(
        "container",
        "toolctl.runners.container:ContainerRunner",
        "Container (docker/podman)",
        "toolctl.models.tool_sections:ContainerRuntime",
        local_images="toolctl.runners.images:LocalImages",
    ),
    Runtime(
        "pulsar",
        "toolctl.runners.pulsar:PulsarRunner",
        "Apache Pulsar service",
        None,
        "toolctl.models.service_sections:PulsarService",
        endpoint=lambda section: str(section["request_queue"]),
        not_managed=(
            "service '{name}' is a Pulsar service; toolctl does not start it",
            "host its handler with 'toolctl worker {name}'",
        ),
    ),
    Runtime(
        "http",
        "toolctl.runners.http:HttpRunner",
        "HTTP service",
        "toolctl.models.tool_sections:HttpRuntime",
        "toolctl.models.service_sections:HttpService",
        tool_needs="path",
        endpoint=_http_endpoint,
        not_managed=(
            "service '{name}' has a fixed url ({url}); it is not managed",
            "only a service with 'start' is started by toolctl",
        ),
    ),
    Runtime(
        "mcp",
        "toolctl.runners.mcp:McpRunner",
        "MCP server",
        "toolctl.models.tool_sections:McpRuntime",
        "toolctl.models.service_sections:McpService",
        tool_needs="with the server's tool name (toolctl import mcp writes it)",
        endpoint=lambda section: str(section.get("url") or " ".join(section.get("command") or [])),
        not_managed=(
            "service '{name}' is an MCP server at {url}; toolctl does not start it",
            "only a stdio MCP server ('command') can be kept running by toolctl",
        ),
    ),
)
"""The built-in runtimes, in the order messages name their sections."""

BY_NAME: dict[str, Runtime] = {row.name: row for row in RUNTIMES}
TOOL_SECTIONS = tuple(row.name for row in RUNTIMES if row.tool_model)
SERVICE_SECTIONS = tuple(row.name for row in RUNTIMES if row.service_model)
STARTS_NOTHING = frozenset({"http", "pulsar", "tool-agent"})
"""Runtimes whose calls start no process (a request over the network): a call of theirs
needs no reaping (``processes.reaper.Reaping``, ~0.25 ms of CPU a call: ``serve``'s
/run_tool of a Pulsar tool lost ~10% of its calls/s to it)."""
OWN_PLUGINS = ("tool-agent",)
"""Runtimes toolctl registers as any plugin does (``runtime = "tool-agent"``: the
``toolctl.runners`` entry points of pyproject.toml), not rows of the table."""


def import_dotted(target: str) -> Any:
    """The object ``module:attribute.path`` names."""
    import importlib

    module, _, attribute = target.partition(":")
    found: Any = importlib.import_module(module)
    for part in attribute.split("."):
        found = getattr(found, part)
    return found
