"""TrustGraph tool services: config items out (the JSON `tg-put-config-item` takes) and in.

A TrustGraph *tool service* (``tool-service/NAME``) is a toolctl service with
``[service.pulsar]``; a TrustGraph *tool* (``tool/NAME``, type ``tool-service``) is a
toolctl tool with ``service`` and ``config``, whose config values TrustGraph keeps as
top-level keys next to its own fields. Only Pulsar services, and tools on them, map.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from toolctl.errors import UsageError
from toolctl.interchange.entries import Tables, clean, items_of

TOOL_FIELDS = ("type", "name", "description", "service", "arguments")
ARGUMENT_KEYS = ("name", "type", "description", "required", "default", "enum")
LISTED = 10

# -- export ---------------------------------------------------------------------------------


def export_items(
    tools: Sequence[Mapping[str, Any]],
    services: Mapping[str, Mapping[str, Any]],
    *,
    narrowed: bool,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Config items for the tools on Pulsar services and those services, sorted by key.

    Without ``narrowed`` every Pulsar service is exported, used or not; with it only the
    services the chosen tools use.
    """
    items: list[dict[str, Any]] = []
    notes: list[str] = []
    skipped: list[str] = []
    used: set[str] = set()
    for tool in tools:
        service = services.get(tool.get("service") or "")
        if service is None or service.get("transport") != "pulsar":
            skipped.append(tool["name"])
            continue
        value = _tool_value(tool, notes)
        if value is not None:
            items.append({"key": f"tool/{tool['name']}", "value": value})
            used.add(service["name"])
    if not narrowed:
        used.update(n for n, s in services.items() if s.get("transport") == "pulsar")
    items += [{"key": f"tool-service/{n}", "value": _service_value(services[n])} for n in used]
    if skipped:
        shown = ", ".join(skipped[:LISTED]) + (", ..." if len(skipped) > LISTED else "")
        notes.append(
            f"left out {len(skipped)} tool(s) not on a Pulsar service "
            f"(only those map to TrustGraph): {shown}"
        )
    return sorted(items, key=lambda item: str(item["key"])), notes


def _service_value(service: Mapping[str, Any]) -> dict[str, Any]:
    pulsar = service["pulsar"]
    return {
        "id": service["name"],
        "request-queue": pulsar["request_queue"],
        "response-queue": pulsar["response_queue"],
        "config-params": [
            {"name": p["name"], "required": bool(p.get("required"))}
            for p in pulsar.get("config_params") or []
        ],
    }


def _tool_value(tool: Mapping[str, Any], notes: list[str]) -> dict[str, Any] | None:
    value: dict[str, Any] = {
        "type": "tool-service",
        "name": tool["name"],
        "description": tool.get("description") or "",
        "service": tool["service"],
        "arguments": _arguments(tool, notes),
    }
    config = tool.get("config") or {}
    clash = sorted(set(config) & set(TOOL_FIELDS))
    if clash:
        notes.append(
            f"left out tool '{tool['name']}': its config key(s) {', '.join(clash)} "
            "would overwrite TrustGraph's own fields"
        )
        return None
    return value | dict(config)


def _arguments(tool: Mapping[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    """TrustGraph arguments carry name, type and description; say what else is dropped."""
    declared = tool.get("arguments") or []
    if not declared:  # `parameters = {...}`: read the JSON Schema
        properties = tool["schema"].get("properties") or {}
        declared = [
            {
                "name": name,
                "type": prop.get("type") if isinstance(prop.get("type"), str) else "string",
                "description": prop.get("description") or "",
            }
            for name, prop in properties.items()
        ]
    dropped = [
        a["name"]
        for a in declared
        if a.get("default") is not None or a.get("enum") is not None or a.get("required") is False
    ]
    if dropped:
        notes.append(
            f"tool '{tool['name']}': TrustGraph arguments have no default, enum or optional; "
            f"dropped them from {', '.join(dropped)}"
        )
    return [
        {
            "name": a["name"],
            "type": a.get("type") or "string",
            "description": a.get("description") or "",
        }
        for a in declared
    ]


# -- import ---------------------------------------------------------------------------------


def convert(data: Any, source: str) -> Tables:
    """Config items (a list, or one ``{key, value}``) or bare values → service/tool tables."""
    result = Tables(source)
    for item in items_of(data, source, "a TrustGraph config item or value"):
        kind, name, value = _classify(item, source)
        if kind == "tool-service":
            result.tables.append(("service", _service_table(value, name, result.notes)))
        elif kind == "tool" and value.get("type") == "tool-service":
            result.tables.append(("tool", _tool_table(value, name)))
        elif kind == "tool":
            result.notes.append(
                f"{source}: left out tool '{value.get('name') or name}' of TrustGraph type "
                f"'{value.get('type')}': only 'tool-service' tools run outside TrustGraph"
            )
        else:
            result.notes.append(f"{source}: left out config item '{name}': not a tool or service")
    return result


def _classify(item: dict[str, Any], source: str) -> tuple[str, str, dict[str, Any]]:
    """(kind, name from the key, value) of one item, bare or ``{key, value}``."""
    if "key" in item and "value" in item:
        kind, _, name = str(item["key"]).partition("/")
        value = item["value"]
        if isinstance(value, str):  # the config service keeps values as JSON strings
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise UsageError(f"{source}: value of '{item['key']}' is not JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise UsageError(f"{source}: value of '{item['key']}' is not a JSON object")
        return kind, name, value
    if "request-queue" in item or "request_queue" in item:
        return "tool-service", str(item.get("id") or ""), item
    if "type" in item:
        return "tool", str(item.get("name") or ""), item
    raise UsageError(
        f"{source}: not a TrustGraph config item, tool service or tool",
        hint='expected {"key": "tool/NAME", "value": {...}} or a descriptor with "type"',
    )


def _service_table(value: dict[str, Any], name: str, notes: list[str]) -> dict[str, Any]:
    spellings = {
        "request-queue": "request_queue",
        "response-queue": "response_queue",
        "config-params": "config_params",
    }
    pulsar: dict[str, Any] = {}
    for key, item in value.items():
        if key in ("id", "name", "description"):
            continue
        if spellings.get(key, key) in ("request_queue", "response_queue", "config_params"):
            pulsar[spellings.get(key, key)] = item
        else:
            notes.append(f"service '{value.get('id') or name}': ignored unknown key '{key}'")
    table = {"name": value.get("id") or value.get("name") or name, "pulsar": pulsar}
    return clean(table | {"description": value.get("description")})


def _tool_table(value: dict[str, Any], name: str) -> dict[str, Any]:
    arguments = [
        {k: v for k, v in a.items() if k in ARGUMENT_KEYS} if isinstance(a, dict) else a
        for a in value.get("arguments") or []
    ]
    table = {
        "name": value.get("name") or name,
        "description": value.get("description"),
        "service": value.get("service"),
        "config": {k: v for k, v in value.items() if k not in TOOL_FIELDS},
        "arguments": arguments,
    }
    return clean(table)
