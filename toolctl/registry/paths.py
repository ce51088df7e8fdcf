"""Paths a descriptor gives relative to its own file, and keeping them right when it moves.

A ``cwd`` of a local tool, a managed HTTP service or a stdio MCP server is relative to the
directory of the file that defines it. `register` copies a definition into another file,
so it rewrites each such path for the file it writes (``rewrite``); deciding whether two
definitions are the same compares them with those paths made absolute (``absolute``).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FILE_RELATIVE: dict[str, tuple[tuple[str, str], ...]] = {
    "tool": (("local", "cwd"),),
    "service": (("http", "cwd"), ("mcp", "cwd")),
}
"""(section, key) of every value, by kind, that names a directory relative to the file."""


def file_relative(kind: str, data: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(section, key, value) of each path in ``data`` that is relative to its file."""
    for section, key in FILE_RELATIVE.get(kind, ()):
        table = data.get(section)
        value = table.get(key) if isinstance(table, dict) else None
        if isinstance(value, str) and not os.path.isabs(value):
            yield section, key, value


def absolute(kind: str, data: dict[str, Any], base: Path) -> dict[str, Any]:
    """``data`` with every file-relative path made absolute against ``base``."""
    found = list(file_relative(kind, data))
    if not found:
        return data
    data = copy.deepcopy(data)
    for section, key, value in found:
        data[section][key] = os.path.normpath(base / value)
    return data


def rewrite(
    kind: str, table: dict[str, Any], source: Path, target: Path, project: Path | None
) -> dict[str, Any]:
    """A raw descriptor table read from a file in ``source`` made right for a file in
    ``target``: each file-relative path points where it pointed. It stays relative when
    both the place it names and ``target`` lie inside the ``project`` (which may move as a
    whole, as a clone does); otherwise it becomes absolute."""
    found = list(file_relative(kind, table))
    if not found:
        return table
    table = copy.deepcopy(table)
    for section, key, value in found:
        place = os.path.normpath(source / value)
        if project is not None and _inside(place, project) and _inside(str(target), project):
            table[section][key] = os.path.relpath(place, target)
        else:
            table[section][key] = place
    return table


def _inside(path: str, root: Path) -> bool:
    return os.path.commonpath([os.path.abspath(path), os.path.abspath(root)]) == os.path.abspath(
        root
    )
