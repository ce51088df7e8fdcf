"""Chat transcripts in the OpenAI chat format, read into the tool calls they hold.

A transcript file is JSON Lines, one conversation a line: ``{"messages": [...]}`` (an
``id`` beside it names the conversation). Assistant messages carry ``tool_calls``
(``{"id", "type": "function", "function": {"name", "arguments": "<JSON string>"}}``), and
the ``tool`` message answering one names it by ``tool_call_id``; the older
``function_call`` / ``function`` pair is read too. A call whose answer is an error (a JSON
object with an ``error`` or ``"success": false``, or text starting with "Error") did not
succeed. Pure parsing: no I/O but the lines given.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple


class TranscriptCall(NamedTuple):
    """One tool call of a conversation, in the order the assistant made them."""

    name: str
    arguments: dict[str, Any]
    call_id: str | None
    success: bool
    output: str | None
    """The tool's answer, when the transcript has it."""


class Transcript(NamedTuple):
    """One conversation: where it came from (``origin``:line), its id, its tool calls."""

    origin: str
    line: int
    id: str
    calls: list[TranscriptCall]
    queries: list[str]
    """The user's turns, in order."""


class TranscriptError(ValueError):
    """A line that is not a conversation; carries where it is."""

    def __init__(self, origin: str, line: int, reason: str) -> None:
        super().__init__(f"{origin}:{line}: {reason}")
        self.origin, self.line, self.reason = origin, line, reason


def read_transcripts(
    lines: Iterable[str], origin: str, *, errors: list[TranscriptError] | None = None
) -> Iterator[Transcript]:
    """The conversations of JSONL ``lines`` (blank lines skipped). A malformed line raises
    TranscriptError, or, when ``errors`` is given, is added to it and skipped."""
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            yield _transcript(text, origin, number)
        except TranscriptError as exc:
            if errors is None:
                raise
            errors.append(exc)


def _transcript(text: str, origin: str, number: int) -> Transcript:
    try:
        conversation = json.loads(text)
    except ValueError as exc:
        raise TranscriptError(origin, number, f"not JSON ({exc})") from None
    messages = conversation.get("messages") if isinstance(conversation, dict) else None
    if not isinstance(messages, list):
        raise TranscriptError(origin, number, 'not a {"messages": [...]} conversation')
    answers = _answers(messages)
    calls, queries = [], []
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            queries.append(message["content"])
        for call_id, name, arguments in _calls_of(message):
            answer = answers.get(call_id or f"function:{name}")
            calls.append(TranscriptCall(name, arguments, call_id, _succeeded(answer), answer))
    given = conversation.get("id")
    return Transcript(origin, number, str(given) if given else f"{origin}:{number}", calls, queries)


def _calls_of(message: dict[str, Any]) -> Iterator[tuple[str | None, str, dict[str, Any]]]:
    if message.get("role") != "assistant":
        return
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            yield call.get("id"), function["name"], _arguments(function.get("arguments"))
    legacy = message.get("function_call")
    if isinstance(legacy, dict) and isinstance(legacy.get("name"), str):
        yield None, legacy["name"], _arguments(legacy.get("arguments"))


def _arguments(given: Any) -> dict[str, Any]:
    if isinstance(given, str):
        try:
            given = json.loads(given) if given.strip() else {}
        except ValueError:
            return {}
    return given if isinstance(given, dict) else {}


def _answers(messages: list[Any]) -> dict[str, str]:
    """Each call's answer by its id (legacy ``function`` answers by ``function:NAME``)."""
    found: dict[str, str] = {}
    for message in messages:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        if message.get("role") == "tool" and message.get("tool_call_id"):
            found[str(message["tool_call_id"])] = text
        elif message.get("role") == "function" and message.get("name"):
            found.setdefault(f"function:{message['name']}", text)
    return found


def _succeeded(answer: str | None) -> bool:
    if answer is None:
        return True
    stripped = answer.strip()
    if stripped.lower().startswith("error"):
        return False
    if stripped.startswith("{"):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return True
        if isinstance(parsed, dict):
            return not parsed.get("error") and parsed.get("success", True) is not False
    return True
