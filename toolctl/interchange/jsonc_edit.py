"""Set one member of a JSON object inside a JSON or JSONC text, keeping the rest as written.

MCP client configs are edited by people: VS Code's ``mcp.json`` is JSONC, with comments
and trailing commas. Parsing and dumping would drop the comments and reorder the file, so
``set_member`` edits the text itself: it finds the object at a key path (creating what is
missing) and replaces, or appends, one member; every other byte stays.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


class JsoncError(ValueError):
    """The text is not a JSON object toolctl can edit."""


def set_member(text: str, path: Sequence[str], key: str, value: Any) -> str:
    """``text`` with ``object-at-path[key] = value``; objects on ``path`` are created."""
    start = _skip(text, 0)
    if start >= len(text):
        text, start = "{}\n", 0
    if text[start] != "{":
        raise JsoncError("the file does not hold a JSON object")
    for depth, name in enumerate(path):
        span = _member(text, start, name)
        if span is None:
            missing: Any = value
            for inner in reversed([*path[depth + 1 :], key]):
                missing = {inner: missing}
            return _append(text, start, name, missing, depth + 1)
        start = span[0]
        if text[start] != "{":
            raise JsoncError(f"'{name}' is not a JSON object")
    span = _member(text, start, key)
    if span is None:
        return _append(text, start, key, value, len(path) + 1)
    indent = _indent_at(text, span[0])
    return text[: span[0]] + _dumps(value, indent) + text[span[1] :]


def has_member(text: str, path: Sequence[str], key: str) -> bool:
    """Whether the object at ``path`` in ``text`` has ``key`` (what ``set_member`` replaces)."""
    start = _skip(text, 0)
    if start >= len(text) or text[start] != "{":
        return False
    for name in path:
        span = _member(text, start, name)
        if span is None or text[span[0]] != "{":
            return False
        start = span[0]
    return _member(text, start, key) is not None


def _dumps(value: Any, indent: str) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)


def _indent_at(text: str, position: int) -> str:
    line_start = text.rfind("\n", 0, position) + 1
    line = text[line_start:position]
    return line[: len(line) - len(line.lstrip())]


def _append(text: str, start: int, key: str, value: Any, depth: int) -> str:
    """Add ``"key": value`` as the last member of the object that opens at ``start``."""
    end, last = _object_end(text, start)
    outer = _indent_at(text, start) if depth > 1 else ""
    inner = outer + "  "
    member = f"{json.dumps(key)}: {_dumps(value, inner)}"
    if last is None:  # an empty object; its comments (servers commented out) kept
        within = text[start + 1 : end].rstrip()
        return text[: start + 1] + within + f"\n{inner}{member}\n{outer}" + text[end:]
    before = text[: last + 1]
    after = text[last + 1 :]
    comma = _skip(text, last + 1)
    if comma < end and text[comma] == ",":  # a trailing comma (JSONC) stays after ours
        before, after = text[: comma + 1], text[comma + 1 :]
        return before + f"\n{inner}{member}," + after
    return before + f",\n{inner}{member}" + after


def _member(text: str, start: int, key: str) -> tuple[int, int] | None:
    """The span of the value of ``key`` in the object opening at ``start``, or None."""
    position = _skip(text, start + 1)
    while position < len(text) and text[position] != "}":
        if text[position] == ",":
            position = _skip(text, position + 1)
            continue
        name_end = _string_end(text, position)
        try:
            name = json.loads(text[position:name_end])
        except ValueError:  # JSON5's own escapes (\x41), a raw control character
            key = text[position:name_end][:40]
            raise JsoncError(f"a key it cannot read as JSON: {key}") from None
        colon = _skip(text, name_end)
        if colon >= len(text) or text[colon] != ":":
            raise JsoncError(f"expected ':' after {text[position:name_end]}")
        value_start = _skip(text, colon + 1)
        value_end = _value_end(text, value_start)
        if name == key:
            return value_start, value_end
        position = _skip(text, value_end)
    return None


def _object_end(text: str, start: int) -> tuple[int, int | None]:
    """Where the object opening at ``start`` closes, and where its last value ends."""
    position = _skip(text, start + 1)
    last = None
    while position < len(text) and text[position] != "}":
        if text[position] == ",":
            position = _skip(text, position + 1)
            continue
        name_end = _string_end(text, position)
        colon = _skip(text, name_end)
        value_start = _skip(text, colon + 1)
        value_end = _value_end(text, value_start)
        last = value_end - 1
        position = _skip(text, value_end)
    if position >= len(text):
        raise JsoncError("an object is not closed")
    return position, last


def _value_end(text: str, start: int) -> int:
    if start >= len(text):
        raise JsoncError("a value is missing")
    opening = text[start]
    if opening == '"':
        return _string_end(text, start)
    if opening in "{[":
        depth, position = 0, start
        while position < len(text):
            char = text[position]
            if char == '"':
                position = _string_end(text, position)
                continue
            if text.startswith(("//", "/*"), position):
                position = _skip(text, position)
                continue
            if char in "{[":
                depth += 1
            elif char in "}]":
                depth -= 1
                if depth == 0:
                    return position + 1
            position += 1
        raise JsoncError("an object or array is not closed")
    position = start
    while position < len(text) and text[position] not in ",}] \t\r\n/":
        position += 1
    return position


def _string_end(text: str, start: int) -> int:
    if start >= len(text) or text[start] != '"':
        raise JsoncError(f"expected a string at offset {start}")
    position = start + 1
    while position < len(text):
        if text[position] == "\\":
            position += 2
            continue
        if text[position] == '"':
            return position + 1
        position += 1
    raise JsoncError("a string is not closed")


def _skip(text: str, position: int) -> int:
    """Past whitespace and comments (``//`` to the end of the line, ``/* … */``)."""
    while position < len(text):
        if text[position] in " \t\r\n":
            position += 1
        elif text.startswith("//", position):
            end = text.find("\n", position)
            position = len(text) if end < 0 else end + 1
        elif text.startswith("/*", position):
            end = text.find("*/", position + 2)
            if end < 0:
                raise JsoncError("a comment is not closed")
            position = end + 2
        else:
            break
    return position
