"""Filters over definitions, shared by `list` and anything else that narrows a listing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def matches(
    data: Mapping[str, Any],
    *,
    category: str | None = None,
    runtime: str | None = None,
    word: str | None = None,
) -> bool:
    """Whether a definition passes every filter given (None means 'any')."""
    if category is not None and (data.get("category") or "").casefold() != category.casefold():
        return False
    if runtime is not None and (data.get("runtime") or data.get("transport")) != runtime:
        return False
    if word is not None:
        haystack = " ".join([data["name"], data.get("description") or "", *data.get("tags", [])])
        return word.casefold() in haystack.casefold()
    return True
