"""Chat transcripts in the OpenAI chat format (JSON Lines) read as sessions of tool calls.

One line is one conversation: ``{"messages": [...], "tools": [...]}``. Each assistant
message's ``tool_calls`` (or a legacy ``function_call``) is a call; the user message before
it is the request in force (the query); the ``tool`` (or legacy ``function``) message that
answers it says whether it succeeded. The top-level ``tools`` (OpenAI function definitions,
as OpenAI's fine-tuning format has them; legacy ``functions`` too) are the tools in play.

A tool message says a call failed when its content is a JSON object with ``"success":
false``, a non-empty ``"error"``, or ``"isError": true`` (MCP's flag), or when the message
itself carries ``"is_error": true``; it says it succeeded with ``"success": true``, or with
any other content. A call with no answer has unknown success (``None``).

Pure: the caller opens the file and passes its lines. A line that is not a conversation
raises ``UsageError`` naming ``origin:line``; blank lines are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from toolctl.errors import UsageError


@dataclass(frozen=True)
class Call:
    """One tool call: what was called, with what, under which request, and how it went."""

    tool: str
    arguments: Mapping[str, Any]
    call_id: str | None
    query: str
    success: bool | None = None
    answer: str | None = None
    """The text of the tool message that answered it (None: no answer in the transcript)."""


@dataclass(frozen=True)
class ToolSpec:
    """A tool in play, as an OpenAI function definition names it."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Transcript:
    """One conversation: its calls in order and the tools it offered (may be empty)."""

    origin: str
    line: int
    calls: tuple[Call, ...]
    tools: tuple[ToolSpec, ...] = ()
    id: str | None = None

    @property
    def where(self) -> str:
        return f"{self.origin}:{self.line}"


class _Bad(ValueError):
    """What is wrong with one line; turned into a UsageError with origin:line."""


def read_transcripts(lines: Iterable[str], origin: str) -> Iterator[Transcript]:
    """Each non-blank line of ``lines`` as a Transcript; ``origin`` names the source."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield _transcript(line, origin, number)
        except _Bad as exc:
            raise UsageError(
                f"{origin}:{number}: {exc}",
                hint='expected one {"messages": [...]} conversation per line (OpenAI chat JSONL)',
            ) from None


def _transcript(line: str, origin: str, number: int) -> Transcript:
    try:
        document = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise _Bad(f"not JSON ({exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        raise _Bad('not a conversation: no "messages" list')
    calls = _calls(document["messages"])
    tools = _tools(document.get("tools", document.get("functions")) or [])
    name = document.get("id")
    return Transcript(origin, number, calls, tools, name if isinstance(name, str) else None)


def _calls(messages: list[Any]) -> tuple[Call, ...]:
    calls: list[Call] = []
    pending: dict[str, int] = {}  # call id (or function name, legacy) -> index in calls
    query = ""
    for position, message in enumerate(messages, 1):
        if not isinstance(message, dict):
            raise _Bad(f"message {position} is not an object")
        role = message.get("role")
        if role == "user":
            query = _text(message.get("content"))
        elif role == "assistant":
            for call in _requested(message, position, query):
                pending[call.call_id or call.tool] = len(calls)
                calls.append(call)
        elif role in ("tool", "function"):
            key = message.get("tool_call_id") if role == "tool" else message.get("name")
            index = pending.pop(key, None) if isinstance(key, str) else None
            if index is not None:
                answer = _text(message.get("content"))
                calls[index] = replace(calls[index], success=_succeeded(message), answer=answer)
    return tuple(calls)


def _requested(message: Mapping[str, Any], position: int, query: str) -> list[Call]:
    requested = message.get("tool_calls") or []
    if message.get("function_call"):
        requested = [{"id": None, "function": message["function_call"]}]
    if not isinstance(requested, list):
        raise _Bad(f'message {position}: "tool_calls" is not a list')
    calls = []
    for item in requested:
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise _Bad(f"message {position}: a tool call without a function name")
        call_id = item.get("id")
        arguments = _arguments(function.get("arguments"), position, function["name"])
        calls.append(
            Call(function["name"], arguments, call_id if isinstance(call_id, str) else None, query)
        )
    return calls


def _arguments(raw: Any, position: int, name: str) -> Mapping[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            raise _Bad(f"message {position}: the arguments of '{name}' are not JSON") from None
    if not isinstance(raw, dict):
        raise _Bad(f"message {position}: the arguments of '{name}' are not a JSON object")
    return raw


def _succeeded(message: Mapping[str, Any]) -> bool:
    if message.get("is_error") is True:
        return False
    try:
        answer = json.loads(_text(message.get("content")))
    except (ValueError, RecursionError):
        return True
    if not isinstance(answer, dict):
        return True
    if isinstance(answer.get("success"), bool):
        return bool(answer["success"])
    return not (answer.get("error") or answer.get("isError") is True)


def _text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _tools(items: Any) -> tuple[ToolSpec, ...]:
    if not isinstance(items, list):
        raise _Bad('"tools" is not a list')
    specs = []
    for item in items:
        function = item.get("function", item) if isinstance(item, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise _Bad('a tool in "tools" without a function name')
        parameters = function.get("parameters")
        specs.append(
            ToolSpec(
                function["name"],
                str(function.get("description") or ""),
                parameters if isinstance(parameters, dict) else {},
            )
        )
    return tuple(specs)
