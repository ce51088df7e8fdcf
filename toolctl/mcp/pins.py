"""Pins: a tool definition's fingerprint, and which of its fields drifted since it was pinned;
and the pins of what a server offers besides tools (resources, resource templates, prompts),
kept in ``[service.mcp.pins]``, each item's pin made the same way.

A pin is ``sha256:`` + the SHA-256 of the canonical JSON of the whole tool object exactly as
the server sent it: keys sorted at every level, no whitespace, non-ASCII kept as UTF-8
(``ensure_ascii=False``), so the same definition gives the same pin whatever the key order
or spacing on the wire, and any change to any field (the rug-pull) gives another.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


def needs_task(tool: Mapping[str, Any]) -> bool:
    """Whether a live tool can only be called as a task (``execution.taskSupport =
    required``): toolctl does not call tasks, so it is neither imported nor missed."""
    execution = tool.get("execution")
    return isinstance(execution, dict) and execution.get("taskSupport") == "required"


def by_name(listed: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """A server's tools by name, the first of a name it lists twice kept: as `import mcp`
    pinned it (a run, `check --live` and `--update` took the last, and called the tool
    "changed since it was pinned")."""
    tools: dict[str, Mapping[str, Any]] = {}
    for each in listed:
        tools.setdefault(str(each["name"]), each)
    return tools


def canonical_json(value: Any) -> bytes:
    """Sorted, compact JSON as UTF-8; a lone surrogate a server sent (``"\\ud800"``) as
    ``surrogatepass`` writes it, where it made listing a server exit 70 (every other text
    gives the same bytes as before)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass")


UNPINNABLE = "sha256:" + hashlib.sha256(b"a tool nested past what JSON is written to").hexdigest()
"""The pin of a tool nested too deep to write (no import takes one: it never matches)."""


def pin_of(tool: Mapping[str, Any]) -> str:
    """The pin of a tool object from ``tools/list``: ``sha256:<64 hex digits>``."""
    try:
        return "sha256:" + hashlib.sha256(canonical_json(dict(tool))).hexdigest()
    except RecursionError:
        return UNPINNABLE


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
    output = stored_schema(section, "output_schema")
    if output is not None and live.get("outputSchema") != output:
        changed.append("outputSchema")
    kept = section.get("annotations")
    now = live.get("annotations")
    if (kept or None) != (kept_annotations(now) or None if isinstance(now, dict) else None):
        changed.append("annotations")
    title, remote = stored.get("title"), section.get("name")
    renamed = title is not None and title == remote  # then the title holds the remote name
    if not renamed and (title or None) != (live.get("title") or None):
        changed.append("title")
    return changed or [NOT_KEPT]


NOT_KEPT = "a field toolctl keeps no copy of (_meta, icons...)"
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


def stored_schema(section: Mapping[str, Any], key: str = "parameters") -> Any:
    """``[tool.mcp] parameters`` (or ``output_schema``) as the schema it keeps (JSON text
    parsed)."""
    params = section.get(key)
    if isinstance(params, str):
        try:
            return json.loads(params)
        except ValueError:
            return params
    return params


ANNOTATION_TYPES: dict[str, type] = {
    "title": str,
    "readOnlyHint": bool,
    "destructiveHint": bool,
    "idempotentHint": bool,
    "openWorldHint": bool,
}
"""MCP's ToolAnnotations: each one's JSON type (other keys are the server's own)."""


def kept_annotations(annotations: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's annotations without their ``null`` values (TOML has no null; unset says
    the same), nor one of MCP's of another type (``"title": 5``): kept, it failed
    `mcp serve`'s whole `tools/list`, every tool with it."""
    return {
        key: value
        for key, value in annotations.items()
        if value is not None and isinstance(value, ANNOTATION_TYPES.get(key, object))
    }


# -- what a server offers besides tools: resources, resource templates, prompts --------------

OFFERS: dict[str, tuple[str, str, str]] = {
    # kind (the key under [service.mcp.pins]): (list method, the result's field, item key)
    "resources": ("resources/list", "resources", "uri"),
    "resource_templates": ("resources/templates/list", "resourceTemplates", "uriTemplate"),
    "prompts": ("prompts/list", "prompts", "name"),
}
"""The lists a server's resources and prompts come in, each item named by its key."""
CAPABILITY = {"resources": "resources", "resource_templates": "resources", "prompts": "prompts"}
"""The server capability that says it offers each kind."""
SINGULAR = {"resources": "resource", "resource_templates": "resource template", "prompts": "prompt"}

Offers = dict[str, dict[str, dict[str, Any]]]
"""What a server offers besides tools: ``{kind: {key: item as listed}}``."""
Pins = dict[str, dict[str, str]]
"""``[service.mcp.pins]``: ``{kind: {key: pin}}``."""


def offer_pins(offers: Offers) -> Pins:
    """The pin of every item offered, by kind and key (every kind, maybe empty)."""
    return {
        kind: {key: pin_of(item) for key, item in offers.get(kind, {}).items()} for kind in OFFERS
    }


def offer_key(kind: str, item: Mapping[str, Any]) -> str | None:
    """The key an offered item is pinned under (its URI, URI template or name)."""
    key = item.get(OFFERS[kind][2])
    return key if isinstance(key, str) else None


@dataclass(frozen=True)
class Drift:
    """One offered item that differs from the service's pins."""

    kind: str
    key: str
    state: str
    """``changed`` (its pin differs), ``vanished`` (pinned, no longer offered) or ``new``
    (offered, not pinned)."""

    def describe(self, service: str) -> str:
        what = f"MCP {SINGULAR[self.kind]} '{self.key}' of service '{service}'"
        if self.state == "changed":
            return f"{what} changed since it was pinned"
        if self.state == "vanished":
            return f"{what} vanished from the server"
        return f"{what} is not pinned"


def offer_drift(pinned: Mapping[str, Any], live: Pins) -> list[Drift]:
    """How the live pins differ from ``[service.mcp.pins]``, sorted by kind and key."""
    drift = []
    for kind in OFFERS:
        kept = pinned.get(kind) or {}
        now = live.get(kind) or {}
        for key in sorted(set(kept) | set(now)):
            if key not in now:
                drift.append(Drift(kind, key, "vanished"))
            elif key not in kept:
                drift.append(Drift(kind, key, "new"))
            elif kept[key] != now[key]:
                drift.append(Drift(kind, key, "changed"))
    return drift


def served_pinned(pins: Mapping[str, Any] | None, kind: str, item: Mapping[str, Any]) -> bool:
    """Whether the gateway may serve an offered item: always when its service has no pins
    (never imported with them), else only when it is pinned and matches its pin."""
    if pins is None:
        return True
    key = offer_key(kind, item)
    kept = (pins.get(kind) or {}).get(key) if key is not None else None
    return kept is not None and kept == pin_of(item)
