"""tool_agent's ``registry.json`` (ToolMeta) and ``groups.json`` (ToolGroup) → tools, groups.

Every tool_agent tool is reached through its router, ``POST /run_tool {tool_id, params}``
(the router starts local and docker tools on demand), so an imported tool gets the
``tool-agent`` runtime (``toolctl.runners.tool_agent``) with ``options.router`` set to
``http://127.0.0.1:8001``, the router's fixed port; edit it in the descriptor if yours
differs. ``input_schema`` becomes the tool's parameters, ``name`` its title, ``status``
its state (a tool that is not "active" is listed but `run` refuses it without
``--allow-staging``); ``backend_runtime`` is kept as a tag. What toolctl has no place for
(``output_schema``, ``stream_support``, ``group_ids``, unknown keys) is dropped and named.
"""

from __future__ import annotations

from typing import Any

from toolctl.errors import UsageError
from toolctl.interchange.entries import Tables, clean, items_of
from toolctl.interchange.slugs import slug
from toolctl.tool_state import STATES

ROUTER_URL = "http://127.0.0.1:8001"
TOOL_KEYS = {"tool_id", "name", "description", "category", "backend_runtime", "input_schema"}
TOOL_KEYS |= {"status"}
GROUP_KEYS = {"group_id", "name", "description", "category", "tool_ids", "usage_order"}
GROUP_KEYS |= {"usage_example"}


def convert(data: Any, source: str) -> Tables:
    result = Tables(source)
    dropped: dict[str, list[str]] = {}
    for item in _items(data, source):
        if "group_id" in item or "tool_ids" in item:
            result.tables.append(("group", _group(item)))
            known, name = GROUP_KEYS, str(item.get("group_id"))
        elif "tool_id" in item:
            result.tables.append(("tool", _tool(item, result)))
            known, name = TOOL_KEYS, str(item["tool_id"])
        else:
            raise UsageError(
                f"{source}: an object with neither tool_id nor group_id",
                hint="expected tool_agent's registry.json or groups.json",
            )
        for key in sorted(set(item) - known):
            if item[key] not in (None, [], {}, "", False):
                dropped.setdefault(key, []).append(name)
    for key, names in sorted(dropped.items()):
        result.notes.append(
            f"{source}: dropped '{key}' (toolctl has no place for it) from {', '.join(names)}"
        )
    return result


def _items(data: Any, source: str) -> list[dict[str, Any]]:
    """A list of objects, ``{"tools": [...]}``/``{"groups": [...]}``, or ``{id: object}``."""
    if isinstance(data, dict) and ("tools" in data or "groups" in data):
        data = [*(data.get("tools") or []), *(data.get("groups") or [])]
    elif isinstance(data, dict) and "tool_id" not in data and "group_id" not in data:
        data = [
            {"tool_id": key, **value}
            if "group_id" not in value and "tool_ids" not in value
            else {"group_id": key, **value}
            for key, value in data.items()
            if isinstance(value, dict)
        ]
    return items_of(data, source, "a tool_agent ToolMeta or ToolGroup")


def _tool(item: dict[str, Any], result: Tables) -> dict[str, Any]:
    schema = item.get("input_schema") or {}
    return clean(
        {
            "name": slug(str(item["tool_id"])),
            "title": item.get("name") if item.get("name") != item["tool_id"] else None,
            "description": item.get("description") or item.get("name"),
            "state": _state(item, result),
            "category": item.get("category"),
            "tags": [f"backend:{item['backend_runtime']}"] if item.get("backend_runtime") else [],
            "parameters": {"type": "object", **schema} if isinstance(schema, dict) else schema,
            "runtime": "tool-agent",
            "options": {"router": ROUTER_URL, "tool_id": item["tool_id"]},
        }
    )


def _state(item: dict[str, Any], result: Tables) -> str | None:
    status = item.get("status")
    if status is None or status == "active":
        return None  # the default
    if status in STATES:
        return str(status)
    result.notes.append(
        f"{result.source}: tool '{item['tool_id']}' has status {status!r}, which toolctl "
        "does not know; imported as staging (run it with --allow-staging)"
    )
    return "staging"


def _group(item: dict[str, Any]) -> dict[str, Any]:
    return clean(
        {
            "name": slug(str(item.get("group_id"))),
            "title": item.get("name") if item.get("name") != item.get("group_id") else None,
            "description": item.get("description") or item.get("name"),
            "category": item.get("category"),
            "tools": [slug(str(t)) for t in item.get("tool_ids") or []],
            "usage_order": [slug(str(t)) for t in item.get("usage_order") or []],
            "usage_example": item.get("usage_example"),
        }
    )
