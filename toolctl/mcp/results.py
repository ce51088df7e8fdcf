"""What a ``tools/call`` result means for toolctl: text output, JSON data, and the error flag.

Text content joined is ``output``; ``structuredContent`` (or text that is JSON) is ``data``.
Images, audio and resources keep their whole content items under ``data["content"]``
(with ``data["structuredContent"]`` beside them when the server sent one), and one line
naming them is added to ``output``, so a terminal never receives base64.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple


class Answer(NamedTuple):
    output: str
    data: Any
    is_error: bool


def map_result(result: Mapping[str, Any]) -> Answer:
    """Read a ``tools/call`` result object (``content``, ``structuredContent``, ``isError``).
    A result whose ``content`` is not a list of objects breaks the protocol: an error,
    never a success with nothing in it."""
    content = result.get("content")
    malformed = _malformed(content, result)
    if malformed:
        return Answer(f"the MCP server's result is malformed: {malformed}", None, True)
    items = (
        [item for item in content if isinstance(item, dict)] if isinstance(content, list) else []
    )
    texts = [str(item.get("text", "")) for item in items if item.get("type") == "text"]
    others = [item for item in items if item.get("type") != "text"]
    output = "\n".join(texts)
    structured = result.get("structuredContent")
    data: Any = structured if structured is not None else _json_text(texts)
    if others:
        summary = "[" + ", ".join(_summary(item) for item in others) + "]"
        output = f"{output}\n{summary}" if output else summary
        data = {"content": others, **({"structuredContent": structured} if structured else {})}
    return Answer(output, data, result.get("isError") is True)


def _malformed(content: Any, result: Mapping[str, Any]) -> str | None:
    flag = result.get("isError")
    if flag is not None and not isinstance(flag, bool):  # "yes" read as a success
        return f"'isError' is {type(flag).__name__}, not true or false"
    if content is None:
        if result.get("structuredContent") is None:  # `{}`: nothing, read as a success
            return "it has no 'content'"
        return None  # older servers answered structuredContent alone; taken as given
    if not isinstance(content, list):
        return f"'content' is {type(content).__name__}, not a list"
    odd = next((item for item in content if not isinstance(item, dict)), None)
    if odd is not None:
        return f"a 'content' item is {type(odd).__name__}, not an object"
    return None


def _json_text(texts: list[str]) -> Any:
    if len(texts) != 1 or not texts[0].lstrip().startswith(("{", "[")):
        return None
    try:
        return json.loads(texts[0])
    except ValueError:
        return None


def _summary(item: Mapping[str, Any]) -> str:
    kind = str(item.get("type", "unknown"))
    if kind in ("image", "audio"):
        size = len(str(item.get("data", ""))) * 3 // 4
        return f"{kind} {item.get('mimeType', '?')}, {_size(size)}"
    if kind == "resource":
        resource = item.get("resource")
        uri = resource.get("uri", "?") if isinstance(resource, dict) else "?"
        return f"resource {uri}"
    if kind == "resource_link":
        return f"resource link {item.get('uri', '?')}"
    return f"{kind} content"


def _size(count: int) -> str:
    return f"{count} B" if count < 1024 else f"{count / 1024:.1f} KiB"
