"""Indented, sorted JSON written as it is produced, byte-identical to ``render.to_json``.

``json.dumps(indent=2)`` runs the pure-Python encoder (the C one only does compact
output), which costs ~100 µs a row for `list --json` on a registry of 100,000 tools. Here
each container is handed to the C encoder with separators that already carry its indent
(nested containers stand in as markers, encoded the same way and put in their place), and
a long list is written item by item, so a listing never holds its whole text in memory.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Iterable
from typing import Any, TextIO

_STEP = "  "
_quote: Callable[[str], str] = json.encoder.encode_basestring  # the C one when available
_encoders: dict[str, Callable[[Any, bool], Any]] = {}


def _unencodable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _encoder(inner: str) -> Callable[[Any, bool], Any]:
    """A C encoder whose item separator starts a new line at indent ``inner``."""
    encoder = _encoders.get(inner)
    if encoder is not None:
        return encoder
    make: Any = getattr(json.encoder, "c_make_encoder", None)
    if make is not None:
        encoder = make(None, _unencodable, _quote, None, ": ", ",\n" + inner, True, False, True)
    else:  # no _json module: the stdlib's own encoder, same bytes
        plain = json.JSONEncoder(
            sort_keys=True, ensure_ascii=False, separators=(",\n" + inner, ": ")
        )
        encoder = plain.iterencode
    _encoders[inner] = encoder
    return encoder


_MARK = "\udfff"
"""Stands in for a nested container while its parent is encoded: a lone surrogate, which
registry data never holds (TOML files are UTF-8) and the C encoder writes unescaped."""


def _encode(value: Any, inner: str) -> str:
    return "".join(_encoder(inner)(value, False))


def pretty(value: Any, indent: str = "") -> str:
    """``value`` as ``json.dumps(indent=2, sort_keys=True, ensure_ascii=False)`` writes it
    when it starts at nesting ``indent`` (a string of spaces)."""
    inner = indent + _STEP
    kind = type(value)
    if kind is dict:
        nested: list[Any] = [
            k for k, v in value.items() if (type(v) is dict or type(v) is list) and v
        ]
        copy: Any = dict(value)
    elif kind is list:
        nested = [i for i, v in enumerate(value) if (type(v) is dict or type(v) is list) and v]
        copy = list(value)
    else:
        return _encode(value, inner)
    if not value:
        return "{}" if kind is dict else "[]"
    for number, key in enumerate(nested):
        copy[key] = f"{_MARK}{number}"
    body = _encode(copy, inner)[1:-1]
    if nested and body.count(_MARK) != len(nested):  # the data held the marker after all
        text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
        return text.replace("\n", "\n" + indent)
    for number, key in enumerate(nested):
        body = body.replace(f'"{_MARK}{number}"', pretty(value[key], inner), 1)
    opening, closing = ("{", "}") if kind is dict else ("[", "]")
    return f"{opening}\n{inner}{body}\n{indent}{closing}"


def write_list(stream: TextIO, items: Iterable[Any], *, indent: str = "", batch: int = 256) -> None:
    """A JSON list of ``items`` at nesting ``indent``, written a batch of items at a time
    (no newline after the closing bracket)."""
    inner = indent + _STEP
    separator = ",\n" + inner
    pending: list[str] = []
    started = False
    for item in items:
        pending.append(pretty(item, inner))
        if len(pending) >= batch:
            stream.write(("[\n" + inner if not started else separator) + separator.join(pending))
            started, pending = True, []
    if pending:
        stream.write(("[\n" + inner if not started else separator) + separator.join(pending))
        started = True
    stream.write(f"\n{indent}]" if started else "[]")
