# mypy: disable-error-code="untyped-decorator,no-untyped-call,arg-type,unused-ignore"
"""The conformance suite's reference server, written here from its scenario descriptions
with the official Python SDK's low-level Server (stdio).

The suite's own (``examples/servers/typescript/everything-server.ts``) lives only in its
git repository, not in any npm package, and is not built from fetched code here; this one
offers what every server scenario of @modelcontextprotocol/conformance 0.1.16 asks for:
its tools (content of every kind, logging, progress, an error, sampling, elicitation, a
JSON Schema 2020-12 schema), resources and a template, subscriptions, prompts and
completion. `toolctl serve` re-serves it in tests/mcp/test_conformance.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.stdio import stdio_server

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000100e2212bc0000000"
        "0049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(
    b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00D\xac\x00\x00\x88X\x01\x00"
    b"\x02\x00\x10\x00data\x00\x00\x00\x00"
).decode()

server: Server[Any, Any] = Server("conformance-everything", version="1.0.0")


def _tool(name: str, description: str, schema: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool(
        name=name,
        description=description,
        inputSchema=schema or {"type": "object", "properties": {}},
    )


def _text_arg(name: str, description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
    }


TOOLS = [
    _tool("test_simple_text", "Returns simple text"),
    _tool("test_image_content", "Returns a 1x1 PNG"),
    _tool("test_audio_content", "Returns a short WAV"),
    _tool("test_embedded_resource", "Returns an embedded resource"),
    _tool("test_multiple_content_types", "Returns text, an image and a resource"),
    _tool("test_tool_with_logging", "Logs three messages while it runs"),
    _tool("test_tool_with_progress", "Reports progress 0, 50, 100 of 100"),
    _tool("test_error_handling", "Always fails"),
    _tool("test_sampling", "Asks the client's LLM", _text_arg("prompt", "The prompt")),
    _tool("test_elicitation", "Asks the user", _text_arg("message", "What to ask")),
    _tool("test_elicitation_sep1034_defaults", "Asks with defaults for every primitive"),
    _tool("test_elicitation_sep1330_enums", "Asks with every kind of enum"),
    _tool(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    ),
]

SEP1034 = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {
            "type": "string",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "default": True},
    },
}
SEP1330 = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                ]
            },
        },
    },
}


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    return TOOLS


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


@server.call_tool(validate_input=False)
async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
    context = server.request_context
    session, related = context.session, context.request_id
    if name == "test_simple_text":
        return _text("This is a simple text response for testing.")
    if name == "test_image_content":
        return [types.ImageContent(type="image", data=PNG, mimeType="image/png")]
    if name == "test_audio_content":
        return [types.AudioContent(type="audio", data=WAV, mimeType="audio/wav")]
    if name == "test_embedded_resource":
        return [_embedded("test://embedded-resource", "This is an embedded resource content.")]
    if name == "test_multiple_content_types":
        mixed = json.dumps({"test": "data", "value": 123})
        return [
            *_text("Multiple content types test:"),
            types.ImageContent(type="image", data=PNG, mimeType="image/png"),
            _embedded("test://mixed-content-resource", mixed, "application/json"),
        ]
    if name == "test_tool_with_logging":
        for step, message in enumerate(
            ("Tool execution started", "Tool processing data", "Tool execution completed")
        ):
            if step:
                await asyncio.sleep(0.05)
            await session.send_log_message("info", message, related_request_id=related)
        return _text("Logged three messages")
    if name == "test_tool_with_progress":
        token = context.meta.progressToken if context.meta is not None else None
        for step in (0, 50, 100):
            if token is not None:
                await session.send_progress_notification(
                    token, step, 100, related_request_id=related
                )
            await asyncio.sleep(0.05)
        return _text("Progress reported")
    if name == "test_error_handling":
        raise RuntimeError("This tool intentionally returns an error for testing")
    if name == "test_sampling":
        return await _sample(session, str(arguments.get("prompt", "")), related)
    if name == "test_elicitation":
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        return await _elicit(session, str(arguments.get("message", "")), schema, related)
    if name == "test_elicitation_sep1034_defaults":
        return await _elicit(session, "Please confirm your details", SEP1034, related)
    if name == "test_elicitation_sep1330_enums":
        return await _elicit(session, "Please choose", SEP1330, related)
    if name == "json_schema_2020_12_tool":
        return _text(f"Received: {json.dumps(arguments, sort_keys=True)}")
    raise ValueError(f"unknown tool {name}")


def _embedded(uri: str, text: str, mime: str = "text/plain") -> types.EmbeddedResource:
    resource = types.TextResourceContents(uri=uri, mimeType=mime, text=text)  # type: ignore[arg-type]
    return types.EmbeddedResource(type="resource", resource=resource)


async def _sample(session: Any, prompt: str, related: Any) -> list[types.ContentBlock]:
    message = types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=prompt)
    )
    answer = await session.create_message(
        messages=[message], max_tokens=100, related_request_id=related
    )
    content = answer.content
    text = content.text if isinstance(content, types.TextContent) else str(content)
    return _text(f"LLM response: {text}")


async def _elicit(
    session: Any, message: str, schema: dict[str, Any], related: Any
) -> list[types.ContentBlock]:
    answer = await session.elicit(message, schema, related_request_id=related)
    content = json.dumps(answer.content, sort_keys=True)
    return _text(f"Elicitation completed: action={answer.action}, content={content}")


RESOURCES = {
    "test://static-text": ("This is the content of the static text resource.", "text/plain"),
    "test://static-binary": (base64.b64decode(PNG), "image/png"),
    "test://watched-resource": ("Watched resource content.", "text/plain"),
}


@server.list_resources()
async def list_resources() -> list[types.Resource]:
    return [
        types.Resource(
            uri=uri, name=uri.rsplit("/", 1)[-1], description=f"The {uri} resource", mimeType=mime
        )  # type: ignore[arg-type]
        for uri, (_, mime) in RESOURCES.items()
    ]


@server.list_resource_templates()
async def list_templates() -> list[types.ResourceTemplate]:
    return [
        types.ResourceTemplate(
            uriTemplate="test://template/{id}/data",
            name="template-data",
            description="Data for an id",
            mimeType="application/json",
        )
    ]


@server.read_resource()
async def read_resource(uri: Any) -> list[ReadResourceContents]:
    text = str(uri)
    if text in RESOURCES:
        content, mime = RESOURCES[text]
        return [ReadResourceContents(content=content, mime_type=mime)]
    if text.startswith("test://template/") and text.endswith("/data"):
        ident = text.removeprefix("test://template/").removesuffix("/data")
        body = {"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"}
        return [ReadResourceContents(content=json.dumps(body), mime_type="application/json")]
    raise ValueError(f"unknown resource {text}")


@server.subscribe_resource()
async def subscribe(uri: Any) -> None:
    return None


@server.unsubscribe_resource()
async def unsubscribe(uri: Any) -> None:
    return None


PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A simple prompt"),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with two arguments",
        arguments=[
            types.PromptArgument(name="arg1", description="First test argument", required=True),
            types.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt embedding a resource",
        arguments=[types.PromptArgument(name="resourceUri", description="URI", required=True)],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt with an image"),
]


@server.list_prompts()
async def list_prompts() -> list[types.Prompt]:
    return PROMPTS


@server.get_prompt()
async def get_prompt(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
    given = arguments or {}

    def user(content: Any) -> types.PromptMessage:
        return types.PromptMessage(role="user", content=content)

    if name == "test_simple_prompt":
        messages = [
            user(types.TextContent(type="text", text="This is a simple prompt for testing."))
        ]
    elif name == "test_prompt_with_arguments":
        text = f"Prompt with arguments: arg1='{given.get('arg1')}', arg2='{given.get('arg2')}'"
        messages = [user(types.TextContent(type="text", text=text))]
    elif name == "test_prompt_with_embedded_resource":
        uri = given.get("resourceUri", "test://example-resource")
        messages = [
            user(_embedded(uri, "Embedded resource content for testing.")),
            user(
                types.TextContent(type="text", text="Please process the embedded resource above.")
            ),
        ]
    elif name == "test_prompt_with_image":
        messages = [
            user(types.ImageContent(type="image", data=PNG, mimeType="image/png")),
            user(types.TextContent(type="text", text="Please analyze the image above.")),
        ]
    else:
        raise ValueError(f"unknown prompt {name}")
    return types.GetPromptResult(description=name, messages=messages)


@server.completion()
async def complete(ref: Any, argument: types.CompletionArgument, context: Any) -> types.Completion:
    words = ["paris", "park", "party"]
    values = [word for word in words if word.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), hasMore=False)


@server.set_logging_level()
async def set_level(level: types.LoggingLevel) -> None:
    return None


async def main() -> None:
    options = server.create_initialization_options(NotificationOptions(), {})
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)
