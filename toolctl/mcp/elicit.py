"""An MCP server's elicitation with nobody at a terminal: declared answers, or a decline.

A service may declare answers (``[service.mcp] elicit = { KEY = "VALUE" }``, and with
``elicit_defaults = true`` the defaults the server's form gives) and a run may give more
(``run --elicit KEY=VALUE``). When they cover every field the server requires,
the elicitation is accepted with them, each converted to the type the server's schema
asks for; otherwise it is declined at once. Either way the call goes on: never a hang.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def declared_answer(
    params: Mapping[str, Any], answers: Mapping[str, str], *, defaults: bool = False
) -> dict[str, Any]:
    """The ``elicitation/create`` result for ``params`` from the declared ``answers`` (and,
    with ``defaults``, the defaults the form itself gives, SEP-1034)."""
    schema = params.get("requestedSchema")
    if not isinstance(schema, dict) or params.get("mode", "form") != "form":
        return {"action": "decline"}
    fields = schema.get("properties")
    fields = fields if isinstance(fields, dict) else {}
    required = schema.get("required")
    needed = [str(name) for name in required] if isinstance(required, list) else []
    given = {
        name: field["default"]
        for name, field in fields.items()
        if defaults and isinstance(field, dict) and "default" in field
    }
    if not (answers or given) or any(name not in answers and name not in given for name in needed):
        return {"action": "decline"}
    content: dict[str, Any] = dict(given)
    for name, field in fields.items():
        if name in answers:
            value = _typed(answers[name], field if isinstance(field, dict) else {})
            if value is None:
                return {"action": "decline"}
            content[name] = value
    return {"action": "accept", "content": content}


def _typed(text: str, field: Mapping[str, Any]) -> Any:
    """``text`` as the field's type (string, integer, number, boolean, array of strings);
    None when it is not one."""
    kind = field.get("type", "string")
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
        if kind == "boolean":
            return {"true": True, "false": False}[text.strip().lower()]
        if kind == "array":
            value = json.loads(text) if text.lstrip().startswith("[") else text.split(",")
            return [str(item).strip() for item in value]
    except (ValueError, KeyError):
        return None
    return text
