"""tool_agent's ``registry.json`` (ToolMeta) and ``groups.json`` (ToolGroup) → tools, groups.

Every tool_agent tool is reached through its router, ``POST /run_tool {tool_id, params}``
(the router starts local and docker tools on demand), so an imported tool runs a small
shim that posts its JSON arguments there: ``http://127.0.0.1:8001`` by default, the
router's fixed port; edit the URL in the descriptor if yours differs. ``input_schema``
becomes the tool's parameters; the tool_agent ``backend_runtime`` is kept as a tag.
"""

from __future__ import annotations

from typing import Any

from toolctl.errors import UsageError
from toolctl.interchange.entries import Tables, clean, items_of

ROUTER_URL = "http://127.0.0.1:8001"
SHIM = """\
import json, sys, urllib.error, urllib.request
url, tool_id = sys.argv[1].rstrip("/"), sys.argv[2]
body = json.dumps({"tool_id": tool_id, "params": json.load(sys.stdin)}).encode()
request = urllib.request.Request(url + "/run_tool", body, {"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request) as response:
        sys.stdout.write(response.read().decode())
except (urllib.error.URLError, OSError) as exc:
    sys.exit(f"tool_agent router {url}: {exc}")
"""


def convert(data: Any, source: str) -> Tables:
    result = Tables(source)
    for item in _items(data, source):
        if "group_id" in item or "tool_ids" in item:
            result.tables.append(("group", _group(item)))
        elif "tool_id" in item:
            result.tables.append(("tool", _tool(item)))
        else:
            raise UsageError(
                f"{source}: an object with neither tool_id nor group_id",
                hint="expected tool_agent's registry.json or groups.json",
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


def _tool(item: dict[str, Any]) -> dict[str, Any]:
    schema = item.get("input_schema") or {}
    return clean(
        {
            "name": item["tool_id"],
            "description": item.get("description") or item.get("name"),
            "category": item.get("category"),
            "tags": [f"backend:{item['backend_runtime']}"] if item.get("backend_runtime") else [],
            "parameters": {"type": "object", **schema} if isinstance(schema, dict) else schema,
            "local": {"command": ["python3", "-c", SHIM, ROUTER_URL, item["tool_id"]]},
        }
    )


def _group(item: dict[str, Any]) -> dict[str, Any]:
    return clean(
        {
            "name": item.get("group_id"),
            "description": item.get("description") or item.get("name"),
            "category": item.get("category"),
            "tools": item.get("tool_ids"),
            "usage_order": item.get("usage_order"),
            "usage_example": item.get("usage_example"),
        }
    )
