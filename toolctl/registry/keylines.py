"""The line of a key inside one ``[[kind]]`` entry, so a finding about ``timeout`` or
``arguments.0.type`` points at that line rather than at the entry's header.

tomllib keeps no positions, so the entry's text is scanned: its headers (``[tool.local]``,
``[[tool.arguments]]``, counted) and its ``key =`` lines (dotted keys too) give each key
path a line, and a finding's location takes the line of its longest known prefix. Lines
inside multi-line strings are skipped; anything not understood leaves the header's line.
Only the text of a file that has a finding is scanned.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"|\'[^\']*\''
_KEY = rf"(?:{_BARE}|{_QUOTED})"
_DOTTED = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_ASSIGN = re.compile(rf"^\s*(?P<key>{_DOTTED})\s*=")
_HEADER = re.compile(rf"^\s*(?P<open>\[\[?)\s*(?P<key>{_DOTTED})\s*\]\]?\s*(?:#.*)?$")
_PART = re.compile(_KEY)

Path = tuple[str | int, ...]


def key_line(text: str, kind: str, header: int, loc: Sequence[str | int]) -> int:
    """The line of ``loc`` (a pydantic error location) in the ``[[kind]]`` entry whose
    header is on line ``header``; ``header`` when no key of it is found."""
    lines = _entry_keys(text.splitlines(), kind, header)
    best, found = -1, header
    for path, number in lines:
        length = _common(path, loc)
        if length == len(path) and length > best:
            best, found = length, number
    return found


def _common(path: Path, loc: Sequence[str | int]) -> int:
    """How long a prefix of ``loc`` ``path`` is (-1 when it is not one)."""
    if len(path) > len(loc) or any(a != b for a, b in zip(path, loc, strict=False)):
        return -1
    return len(path)


def _entry_keys(lines: list[str], kind: str, header: int) -> list[tuple[Path, int]]:
    """Each key path of the entry (relative to it) and its line, in order."""
    keys: list[tuple[Path, int]] = []
    table: Path = ()
    counts: dict[tuple[str, ...], int] = {}
    quote: str | None = None
    for number in range(header + 1, len(lines) + 1):
        line = lines[number - 1]
        if quote is not None:  # inside a multi-line string
            if line.count(quote) % 2 == 1:
                quote = None
            continue
        head = _HEADER.match(line)
        if head is not None:
            parts = _parts(head.group("key"))
            if not parts or parts[0] != kind or (head.group("open") == "[[" and len(parts) == 1):
                break  # the next entry, or another kind's
            table = _table(parts[1:], head.group("open") == "[[", counts)
            keys.append((table, number))
            continue
        assign = _ASSIGN.match(line)
        if assign is not None:
            keys.append(((*table, *_parts(assign.group("key"))), number))
            rest = line[assign.end() :]
            for mark in ('"""', "'''"):
                if rest.count(mark) % 2 == 1:
                    quote = mark
    return keys


def _table(parts: list[str], array: bool, counts: dict[tuple[str, ...], int]) -> Path:
    """A header's path inside the entry, an array of tables' index after its name
    (``[[tool.arguments]]`` the second time: ``("arguments", 1)``)."""
    if array:
        counts[tuple(parts)] = counts.get(tuple(parts), -1) + 1
    path: list[str | int] = []
    for end in range(1, len(parts) + 1):
        path.append(parts[end - 1])
        index = counts.get(tuple(parts[:end]))
        if index is not None:
            path.append(index)
    return tuple(path)


def _parts(dotted: str) -> list[str]:
    return [part[1:-1] if part[:1] in "\"'" else part for part in _PART.findall(dotted.strip())]
