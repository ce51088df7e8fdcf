"""A tiny MCP server (stdio) on the official SDK's low-level API: two text tools.

The sample registry's service ``text-mcp`` starts it; its tools were imported with
``toolctl import mcp text-mcp`` and are pinned there. The tool definitions are written out
in full (not derived from type hints), so what ``tools/list`` sends, and so each pin,
stays the same across SDK versions. ``TEXT_MCP_DESCRIBE_REVERSE`` replaces the description
of ``reverse``: the demo's rug-pull.

It runs on the SDK's 1.x and 2.x alike (the README's tour starts it with the `python3` on
PATH, and `pip install mcp` there gives 2.x): 1.x registers handlers with decorators, 2.x
takes them in the constructor; both send the same tools/list and results.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TEXT_ONLY = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "The text"}},
    "required": ["text"],
    "additionalProperties": False,
}
TOOLS = [
    types.Tool(
        name="letter_count",
        description="Count the letters, digits and spaces in a text",
        inputSchema=TEXT_ONLY,
        annotations=types.ToolAnnotations(readOnlyHint=True),
    ),
    types.Tool(
        name="reverse",
        description=os.environ.get("TEXT_MCP_DESCRIBE_REVERSE", "Reverse a text"),
        inputSchema=TEXT_ONLY,
        annotations=types.ToolAnnotations(readOnlyHint=True),
    ),
]


def answer(name: str, arguments: dict[str, Any]) -> dict[str, int] | list[types.TextContent]:
    """A call's result as 1.x handlers return it: a dict is its structured content."""
    text = str(arguments.get("text", ""))
    if name == "letter_count":
        return {
            "letters": sum(c.isalpha() for c in text),
            "digits": sum(c.isdigit() for c in text),
            "spaces": sum(c.isspace() for c in text),
        }
    if name == "reverse":
        return [types.TextContent(type="text", text=text[::-1])]
    raise ValueError(f"unknown tool {name}")


def sdk1_server() -> Any:
    server = Server("text-mcp")

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return TOOLS

    @server.call_tool()  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        return answer(name, arguments)

    return server


def sdk2_server() -> Any:
    """(Type-checked against 1.x, which the dev environment has: the 2.x API is Any here.)"""
    sdk2: Any = types

    async def list_tools(context: Any, params: Any) -> Any:
        return sdk2.ListToolsResult(tools=TOOLS)

    async def call_tool(context: Any, params: Any) -> Any:
        try:
            result = answer(params.name, params.arguments or {})
        except ValueError as exc:
            return sdk2.CallToolResult(
                content=[types.TextContent(type="text", text=str(exc))], isError=True
            )
        if isinstance(result, dict):  # as 1.x sends a dict: structured, and as JSON text
            text = json.dumps(result, indent=2)
            content = [types.TextContent(type="text", text=text)]
            return sdk2.CallToolResult(content=content, structuredContent=result)
        return sdk2.CallToolResult(content=result)

    build: Any = Server
    return build("text-mcp", on_list_tools=list_tools, on_call_tool=call_tool)


server = sdk1_server() if hasattr(Server, "list_tools") else sdk2_server()


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
