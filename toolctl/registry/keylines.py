"""The line of a key inside one ``[[kind]]`` entry, so a finding about ``timeout`` or
``arguments.0.type`` points at that line rather than at the entry's header.

tomllib keeps no positions, so the entry's text is scanned: its headers (``[tool.local]``,
``[[tool.arguments]]``, counted) and its ``key =`` lines (dotted keys too) give each key
path a line, and a finding's location takes the line of its longest known prefix. Lines
inside multi-line strings are skipped; anything not understood leaves the header's line.
Only the text of a file that has a finding is scanned.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence

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
    if not loc:
        return header
    lines = _keys_of(text, kind, header)
    best, found = -1, header
    for path, number in lines:
        length = _common(path, loc)
        if length == len(path) and length > best:
            best, found = length, number
    if best < len(loc):  # loc names a table its keys are dotted under (`tool.timeout = ...`)
        below = next(
            (
                n
                for path, n in lines
                if len(path) > len(loc) and _common(tuple(loc), path) == len(loc)
            ),
            None,
        )
        if below is not None and best <= 0:
            return below
    return found


@functools.lru_cache(maxsize=32)
def _keys_of(text: str, kind: str, header: int) -> tuple[tuple[Path, int], ...]:
    """``_entry_keys`` of one entry, scanned once however many findings it has (a group
    naming 20,000 unknown tools: each finding scanned the file again, for minutes)."""
    return tuple(_entry_keys(text.split("\n"), kind, header))  # TOML's lines: no U+2028


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
    within: str | None = None  # the multi-line string a line starts in (its delimiter)
    for number in range(header + 1, len(lines) + 1):
        line = lines[number - 1]
        if within is not None:
            within = _strings(line, within)
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
            within = _strings(line[assign.end() :], None)
    return keys


def outside_strings(lines: list[str]) -> Iterator[tuple[int, str]]:
    """Each line (numbered from 1) that does not start inside a multi-line string."""
    within: str | None = None
    for number, line in enumerate(lines, start=1):
        if within is None:
            yield number, line
        within = _strings(line, within)


def _strings(text: str, within: str | None) -> str | None:
    """The multi-line string (``\"\"\"`` or ``'''``) ``text`` ends inside of, read from
    ``within`` (None: outside any): strings of one line, escapes and comments read as
    TOML reads them, so a ``\"\"\"`` in a literal string or a comment opens nothing."""
    at = 0
    while at < len(text):
        if within is not None:  # find its end: \"\"\" (not escaped) or '''
            if within == '"""':
                while at < len(text) and not text.startswith(within, at):
                    at += 2 if text[at] == "\\" else 1
            else:
                found = text.find(within, at)
                at = len(text) if found < 0 else found
            if at >= len(text):
                return within
            at += 3
            while at < len(text) and text[at] == within[0]:  # up to two more quotes belong
                at += 1
            within = None
            continue
        char = text[at]
        if char == "#":
            return None
        if text.startswith('"""', at) or text.startswith("'''", at):
            within, at = text[at : at + 3], at + 3
        elif char == '"':
            at += 1
            while at < len(text) and text[at] != '"':
                at += 2 if text[at] == "\\" else 1
            at += 1
        elif char == "'":
            found = text.find("'", at + 1)
            at = len(text) if found < 0 else found + 1
        else:
            at += 1
    return within


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
