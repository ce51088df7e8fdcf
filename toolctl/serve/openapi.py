"""The OpenAPI 3.1 document of `toolctl serve`'s REST part (what /openapi.json answers)."""

from __future__ import annotations

from typing import Any

from toolctl import __version__

_RESULT = {
    "type": "object",
    "description": "A ToolResult. For a call that did not run, exit_code is toolctl's exit code.",
    "required": ["success", "output", "data", "error"],
    "properties": {
        "success": {"type": "boolean"},
        "output": {"type": "string", "description": "The text observation."},
        "data": {"description": "The parsed JSON answer, when the tool answered JSON."},
        "error": {"type": ["string", "null"]},
        "exit_code": {"type": ["integer", "null"]},
        "duration_ms": {"type": "number"},
        "transport": {"type": "string"},
    },
}
_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"success": {"type": "boolean"}, "error": {"type": "string"}},
}


def _answer(description: str, ref: str = "ToolResult") -> dict[str, Any]:
    schema = {"$ref": f"#/components/schemas/{ref}"}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _common() -> dict[str, Any]:
    return {
        "401": _answer("Missing or wrong bearer token (when the server has one)", "Error"),
        "403": _answer("A browser page on another origin", "Error"),
        "421": _answer("A Host this server does not answer for", "Error"),
    }


def document() -> dict[str, Any]:
    run_responses = {
        "200": _answer("The tool ran: success true, or false when it failed"),
        "400": _answer("The body is not a JSON object with tool_id and params", "Error"),
        "404": _answer("No such tool is served"),
        "409": _answer("The registry is refused (--strict and it has problems)"),
        "413": _answer("The body is over 1 MiB", "Error"),
        "422": _answer("The params do not match the tool's schema; nothing ran"),
        "503": _answer("The transport is unavailable, or every slot and the queue are full"),
        "504": _answer("The tool ran past its timeout and was killed"),
        **_common(),
    }
    json_object = {"type": "object", "additionalProperties": True}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "toolctl serve",
            "version": __version__,
            "description": "tool_agent's gateway over a toolctl registry; MCP is at /mcp.",
        },
        "components": {
            "schemas": {"ToolResult": _RESULT, "Error": _ERROR},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{}, {"bearer": []}],
        "paths": {
            "/health": {
                "get": {
                    "summary": "Liveness, the version and how many tools are served",
                    "security": [],
                    "responses": {"200": {"description": "Serving", "content": _json(json_object)}},
                }
            },
            "/tools": {
                "get": {
                    "summary": "tool_agent's tool table: backend_runtimes, groups, tools",
                    "responses": {
                        "200": {"description": "The table", "content": _json(json_object)},
                        **_common(),
                    },
                }
            },
            "/run_tool": {
                "post": {
                    "summary": "Call a tool by name: {tool_id, params}",
                    "requestBody": {
                        "required": True,
                        "content": _json(
                            {
                                "type": "object",
                                "required": ["tool_id"],
                                "properties": {
                                    "tool_id": {"type": "string"},
                                    "params": json_object,
                                },
                            }
                        ),
                    },
                    "responses": run_responses,
                }
            },
            "/recommend": {
                "get": {
                    "summary": "Actions and tools near the start actions (`recommend --json`)",
                    "parameters": [
                        _query("action", {"type": "array", "items": {"type": "string"}}, True),
                        _query("hops", {"type": "integer", "minimum": 0}),
                        _query("threshold", {"type": "number", "minimum": 0, "maximum": 1}),
                    ],
                    "responses": {
                        "200": {"description": "The recommendation", "content": _json(json_object)},
                        "404": _answer("No start action exists", "Error"),
                        "422": _answer("A bad action, hops or threshold", "Error"),
                        **_common(),
                    },
                }
            },
            "/openapi.json": {
                "get": {
                    "summary": "This document",
                    "responses": {
                        "200": {"description": "OpenAPI 3.1", "content": _json(json_object)}
                    },
                }
            },
        },
    }


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _query(name: str, schema: dict[str, Any], required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": schema}
