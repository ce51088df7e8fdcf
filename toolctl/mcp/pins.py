"""Pins: a tool definition's fingerprint, and which of its fields drifted since it was pinned.

A pin is ``sha256:`` + the SHA-256 of the canonical JSON of the whole tool object exactly as
the server sent it: keys sorted at every level, no whitespace, non-ASCII kept as UTF-8
(``ensure_ascii=False``), so the same definition gives the same pin whatever the key order
or spacing on the wire, and any change to any field (the rug-pull) gives another.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def pin_of(tool: Mapping[str, Any]) -> str:
    """The pin of a tool object from ``tools/list``: ``sha256:<64 hex digits>``."""
    return "sha256:" + hashlib.sha256(canonical_json(dict(tool))).hexdigest()


def diff_tool(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The top-level fields that differ (``description``, ``inputSchema``, ...), sorted."""
    return sorted(
        key
        for key in set(old) | set(new)
        if key not in old or key not in new or canonical_json(old[key]) != canonical_json(new[key])
    )


UPDATE_HINT = "review it with 'toolctl import mcp {service} --update'"
"""What to do about a pinned tool whose server changed it (format with ``service``)."""


def changed_fields(
    stored: Mapping[str, Any], section: Mapping[str, Any], live: Mapping[str, Any]
) -> list[str]:
    """The fields of ``live`` that differ from what the registry kept at import time: the
    tool's ``stored`` data and its ``[tool.mcp]`` ``section``."""
    changed = []
    if str(live.get("description") or "") != str(stored.get("description") or ""):
        changed.append("description")
    params = stored_schema(section)
    if params is not None and live.get("inputSchema") != params:
        changed.append("inputSchema")
    kept = section.get("annotations")
    now = live.get("annotations")
    if (kept or None) != (kept_annotations(now) or None if isinstance(now, dict) else None):
        changed.append("annotations")
    title, remote = stored.get("title"), section.get("name")
    renamed = title is not None and title == remote  # then the title holds the remote name
    if not renamed and (title or None) != (live.get("title") or None):
        changed.append("title")
    return changed or [NOT_KEPT]


NOT_KEPT = "a field toolctl keeps no copy of (outputSchema, _meta, icons...)"
"""What changed when none of the fields toolctl keeps did."""


def has_null(value: Any) -> bool:
    """Whether a JSON value holds a ``null`` anywhere (TOML cannot write one)."""
    if value is None:
        return True
    if isinstance(value, dict):
        return any(has_null(item) for item in value.values())
    if isinstance(value, list):
        return any(has_null(item) for item in value)
    return False


def schema_field(schema: Mapping[str, Any]) -> Any:
    """How ``[tool.mcp] parameters`` keeps ``schema``: as a table, or as JSON text when
    it holds a ``null`` (Python servers write ``"default": null`` for optional arguments)."""
    return canonical_json(schema).decode() if has_null(schema) else dict(schema)


def stored_schema(section: Mapping[str, Any]) -> Any:
    """``[tool.mcp] parameters`` as the schema it keeps (JSON text parsed)."""
    params = section.get("parameters")
    if isinstance(params, str):
        try:
            return json.loads(params)
        except ValueError:
            return params
    return params


def kept_annotations(annotations: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's annotations without their ``null`` values (TOML has no null; unset says
    the same)."""
    return {key: value for key, value in annotations.items() if value is not None}
