"""Indented, sorted JSON written as it is produced, byte-identical to ``render.to_json``.

``json.dumps(indent=2)`` runs the pure-Python encoder (the C one only does compact
output): a generator frame per container and several calls per item, ~35 µs a row of
`list --json`. Here one function walks the value, quotes every string with the C string
encoder and appends finished pieces (indent, key and value in one string): ~40% of
``json.dumps``'s CPU time on those rows (the per-container C runs with markers this
replaced took ~65%). A long list is written a batch of items at a time, so a listing
never holds its whole text in memory. Anything but the exact JSON types (a subclass, a
tuple, a key that is not a string) goes through ``json.dumps`` itself.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Iterable
from typing import Any, TextIO

_quote: Callable[[str], str] = json.encoder.encode_basestring  # the C one when available
_int = int.__repr__
_float = float.__repr__
_INFINITY = float("inf")
_newline = ["\n" + "  " * depth for depth in range(64)]
_keys: dict[str, str] = {}  # '"name": ' for every key seen: the same few thousand recur


def _number(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return _float(value)


def _other(value: Any, depth: int) -> str:
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    return text.replace("\n", _newline[depth]) if "\n" in text else text


def _scalar(value: Any, depth: int) -> str:
    kind = type(value)
    if kind is str:
        return _quote(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return _int(value)
    if kind is float:
        return _number(value)
    if kind is dict and not value:
        return "{}"
    if kind is list and not value:
        return "[]"
    return _other(value, depth)


def _write(value: Any, depth: int, out: list[str]) -> None:
    """Append ``value`` at nesting ``depth`` to ``out``."""
    kind = type(value)
    if kind is not dict and kind is not list:
        out.append(_scalar(value, depth))
        return
    if not value:
        out.append("{}" if kind is dict else "[]")
        return
    if depth + 2 >= len(_newline):
        _newline.extend("\n" + "  " * d for d in range(len(_newline), depth + 64))
    inner = _newline[depth + 1]
    lead, separator = ("{" if kind is dict else "[") + inner, "," + inner
    if kind is list:
        for item in value:
            kind = type(item)
            if kind is str:
                out.append(lead + _quote(item))
            elif (kind is dict or kind is list) and item:
                out.append(lead)
                _write(item, depth + 1, out)
            else:
                out.append(lead + _scalar(item, depth + 1))
            lead = separator
        out.append(_newline[depth] + "]")
        return
    start = len(out)
    for key, item in sorted(value.items()):
        name = _keys.get(key)
        if name is None:
            if type(key) is not str:  # a key JSON itself never makes: dumps' own rules
                del out[start:]
                out.append(_other(value, depth))
                return
            name = _quote(key) + ": "
            if len(_keys) < 65536:
                _keys[key] = name
        kind = type(item)
        if kind is str:  # the common cases first, without a call
            out.append(lead + name + _quote(item))
        elif item is None:
            out.append(lead + name + "null")
        elif kind is dict or kind is list:
            if item:
                out.append(lead + name)
                _write(item, depth + 1, out)
            else:
                out.append(lead + name + ("{}" if kind is dict else "[]"))
        else:
            out.append(lead + name + _scalar(item, depth + 1))
        lead = separator
    out.append(_newline[depth] + "}")


def pretty(value: Any, indent: str = "") -> str:
    """``value`` as ``json.dumps(indent=2, sort_keys=True, ensure_ascii=False)`` writes it
    when it starts at nesting ``indent`` (a string of spaces)."""
    out: list[str] = []
    _write(value, len(indent) // 2, out)
    return "".join(out)


def write_list(
    stream: TextIO,
    items: Iterable[Any],
    *,
    indent: str = "",
    batch: int = 256,
    shown: Callable[[str], str] = str,
) -> None:
    """A JSON list of ``items`` at nesting ``indent``, written a batch of items at a time
    (no newline after the closing bracket); each batch's text passes through ``shown``
    (render.shown: invisible characters as escapes)."""
    depth = len(indent) // 2 + 1
    separator = ",\n" + indent + "  "
    out: list[str] = []
    lead = "[\n" + indent + "  "
    for number, item in enumerate(items, 1):
        out.append(lead)
        _write(item, depth, out)
        lead = separator
        if number % batch == 0:
            stream.write(shown("".join(out)))
            out.clear()
    stream.write(shown("".join(out)) + (f"\n{indent}]" if lead == separator else "[]"))
