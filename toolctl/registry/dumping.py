"""A registry file's text, as toolctl writes it (`register`, the imports, pins, announced
services kept): each entry a ``[[kind]]`` block, the way the docs and `toolctl new` show them.

tomli-w alone writes a kind whose entries are all short as one inline array
(``service = [{ name = "plain", mcp = { url = "..." } }]``), which a hand edit that adds a
``[service.mcp.headers]`` table turns into a TOML error ("cannot declare ... twice")."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any


def registry_toml(document: Mapping[str, Any]) -> str:
    """``document`` ({kind: [table, ...]}) as TOML, every entry a ``[[kind]]`` block; any
    other document as tomli-w writes it."""
    import tomli_w

    if not all(_entries(kind, value) for kind, value in document.items()):
        return tomli_w.dumps(document)
    blocks = []
    for kind, tables in document.items():
        head = f"[{kind}]\n"  # a table named ``kind``: its first line, when it has a value
        for table in tables:
            text = tomli_w.dumps({kind: table})
            blocks.append(f"[[{kind}]]\n{text.removeprefix(head)}")
    return "\n".join(blocks)


def _entries(kind: str, value: Any) -> bool:
    """Whether ``kind = value`` is a kind of entries: a bare key and a list of tables."""
    return (
        re.fullmatch(r"[A-Za-z0-9_-]+", kind) is not None
        and isinstance(value, list)
        and bool(value)
        and all(isinstance(table, Mapping) for table in value)
    )
