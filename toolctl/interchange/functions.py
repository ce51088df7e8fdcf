"""Tools as LLM function definitions: OpenAI ``tools`` entries and an MCP ``tools/list``."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

OPENAI_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What OpenAI accepts as a function name (toolctl names may also hold '.' and be longer)."""


def input_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's argument schema, the single source; an empty ``required`` is left out
    (older JSON Schema drafts forbid it, and it says nothing)."""
    schema = dict(tool["schema"])
    if not schema.get("required"):
        schema.pop("required", None)
    return schema


def openai_functions(tools: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """``[{"type": "function", "function": {name, description, parameters}}]``, by name."""
    functions, notes = [], []
    for tool in sorted(tools, key=lambda t: str(t["name"])):
        if not OPENAI_NAME.match(tool["name"]):
            notes.append(
                f"left out tool '{tool['name']}': OpenAI function names allow only letters, "
                "digits, '_' and '-', at most 64"
            )
            continue
        function = {
            "name": tool["name"],
            "description": tool.get("description") or "",
            "parameters": input_schema(tool),
        }
        functions.append({"type": "function", "function": function})
    return functions, notes


def mcp_tools(tools: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """An MCP ``tools/list`` result: ``{"tools": [{name, description, inputSchema}]}``."""
    listed = [
        {
            "name": tool["name"],
            "description": tool.get("description") or "",
            "inputSchema": input_schema(tool),
        }
        for tool in sorted(tools, key=lambda t: str(t["name"]))
    ]
    return {"tools": listed}, []
