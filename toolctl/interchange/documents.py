"""Foreign documents (JSON, JSONC, TOML, YAML) read with bounds, for every import format.

A file to import is someone else's: a YAML alias bomb (``&a [*b, *b, ...]`` nine levels
deep) loads in milliseconds as shared nodes, then costs gigabytes to anyone who walks it;
an alias to itself makes a cycle; nesting past the parser's recursion, integers past
Python's 4,300 digits and text that is not Unicode (``"\\ud800"``) all raise what no
reader catches. ``bounded`` walks a parsed document once (shared nodes counted as often as
they appear, in linear time) and refuses it with a one-line UsageError (exit 2) when its
expanded size passes ``MAX_NODES``, it nests past ``MAX_DEPTH``, it holds a cycle or text
that is not Unicode. Every reader here ends in ``bounded``.
"""

from __future__ import annotations

import json
from typing import Any

from toolctl.arguments import is_text
from toolctl.errors import UsageError

MAX_NODES = 1_000_000
"""The most values a document may hold with every alias expanded."""

MAX_DEPTH = 64
"""How deep a document may nest (the registry's own bound on a descriptor)."""


def bounded(value: Any, origin: str) -> Any:
    """``value`` when it is a document toolctl can walk; else a one-line UsageError."""
    problem = _problem(value)
    if problem:
        raise UsageError(f"{origin}: {problem}")
    return value


def _problem(root: Any) -> str | None:
    measured: dict[int, tuple[int, int]] = {}  # id of a container: (expanded size, height)
    open_ids: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        item, finishing = stack.pop()
        if not isinstance(item, (dict, list)):
            if isinstance(item, str) and not is_text(item):
                return "text that is not valid Unicode (a lone surrogate)"
            continue
        key = id(item)
        children = list(item.values()) if isinstance(item, dict) else item
        if finishing:
            open_ids.discard(key)
            sizes = [measured.get(id(c), (1, 0)) for c in children]
            size = 1 + sum(s for s, _ in sizes)
            height = 1 + max((h for _, h in sizes), default=0)
            if size > MAX_NODES:
                return f"over {MAX_NODES:,} values once its aliases are expanded (an alias bomb?)"
            if height > MAX_DEPTH:
                return f"nests deeper than {MAX_DEPTH} levels"
            measured[key] = (size, height)
            continue
        if key in measured:
            continue
        if key in open_ids:
            return "a value that contains itself (a self-referencing alias)"
        if len(open_ids) >= MAX_DEPTH:
            return f"nests deeper than {MAX_DEPTH} levels"
        open_ids.add(key)
        stack.append((item, True))
        if isinstance(item, dict):
            for name in item:
                if isinstance(name, str) and not is_text(name):
                    return "a key that is not valid Unicode (a lone surrogate)"
        stack.extend((child, False) for child in children if id(child) not in measured)
    return None


def parse_json(text: str, origin: str) -> Any:
    """JSON text as a bounded document; a one-line UsageError naming ``origin`` otherwise."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{origin}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise UsageError(f"{origin}: nests deeper than JSON is read here") from None
    except ValueError as exc:  # an integer past 4,300 digits
        raise UsageError(f"{origin}: not valid JSON: {short(exc)}") from None
    return bounded(value, origin)


def parse_yaml(text: str, origin: str) -> Any:
    """YAML text (safe: no tags that build objects) as a bounded document."""
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise UsageError(f"{origin}:{line}: not valid YAML: {short(exc)}") from None
    except RecursionError:
        raise UsageError(f"{origin}: nests deeper than YAML is read here") from None
    except (ValueError, TypeError, OverflowError) as exc:  # a huge integer, an odd key
        raise UsageError(f"{origin}: not valid YAML: {short(exc)}") from None
    return bounded(value, origin)


def short(exc: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message, at most ``limit`` characters."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= limit else text[:limit] + "…"
