"""Lexical relevance of a request to tools: Okapi BM25 over each tool's own words.

A tool's document is its name, its description, and each argument's name and description
(split at ``_``, ``-``, ``.`` and camelCase). Words are lower-cased and lightly stemmed
(a trailing ``s``, ``es``, ``ed`` or ``ing`` dropped, then a final ``e``), so "moving",
"moves" and "moved" all find ``move``. No model
weights: the whole ranking is in this file. Deterministic.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

K1 = 1.2
B = 0.75
_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_SUFFIXES = ("ing", "ed", "es", "s")


def words(text: str) -> list[str]:
    """The stemmed, lower-cased words of ``text``."""
    return [_stem(w.lower()) for w in _WORD.findall(_CAMEL.sub(r"\1 \2", text))]


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def tool_text(name: str, description: str, parameters: Mapping[str, Any]) -> str:
    """The text BM25 reads for one tool: name, description, argument names and descriptions."""
    parts = [name, description]
    properties = parameters.get("properties")
    if isinstance(properties, Mapping):
        for argument, schema in properties.items():
            parts.append(str(argument))
            if isinstance(schema, Mapping):
                parts.append(str(schema.get("description") or ""))
    return " ".join(parts)


class BM25:
    """An index over a few documents (the tools in play), scored against one query at a time."""

    def __init__(self, documents: Mapping[str, str]) -> None:
        self._terms = {name: Counter(words(text)) for name, text in documents.items()}
        self._lengths = {name: sum(terms.values()) for name, terms in self._terms.items()}
        count = len(self._terms)
        average = sum(self._lengths.values()) / count if count else 0.0
        self._average = average or 1.0
        frequency = Counter(w for terms in self._terms.values() for w in terms)
        self._idf = {w: math.log(1 + (count - n + 0.5) / (n + 0.5)) for w, n in frequency.items()}

    def scores(self, query: str, names: Iterable[str] | None = None) -> dict[str, float]:
        """BM25 of ``query`` for each document (or just ``names``); 0.0 shares no word."""
        asked = sorted(set(words(query)) & self._idf.keys())  # sorted: the same sum every run
        found: dict[str, float] = {}
        for name in self._terms if names is None else names:
            terms = self._terms.get(name)
            score = 0.0
            if terms:
                norm = K1 * (1 - B + B * self._lengths[name] / self._average)
                for word in asked:
                    f = terms.get(word)
                    if f:
                        score += self._idf[word] * f * (K1 + 1) / (f + norm)
            found[name] = score
        return found
