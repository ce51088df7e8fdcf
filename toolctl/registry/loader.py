"""Registry files to definitions: walking the search path and parsing one TOML file.

A file that does not parse, or an entry that does not validate, becomes a ``Finding`` (code
``parse``) with file and line instead of an exception, so one broken file never hides the rest.
"""

from __future__ import annotations

import datetime
import math
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from toolctl.arguments import is_text, printable_os
from toolctl.findings import PARSE, Finding, Severity
from toolctl.names import KINDS, NAME_PATTERN, TABLES

# NamedTuples rather than frozen dataclasses: these modules load on every command, and a
# frozen dataclass costs ~0.6 ms to define against ~0.1 ms for a NamedTuple.


class Definition(NamedTuple):
    """One validated descriptor, where it came from, and its normalised data."""

    kind: str
    name: str
    file: str
    line: int
    data: dict[str, Any]


class ParsedFile(NamedTuple):
    """One file's valid definitions, its problems, and its raw tables by kind; ``texts``
    holds the index's JSON of each definition that is a plain tool (None for the others)."""

    definitions: list[Definition]
    problems: list[Finding]
    raw: dict[str, list[dict[str, Any]]]
    texts: tuple[str | None, ...] = ()


class FileStat(NamedTuple):
    """A registry file as found on disk; ``root`` is its index on the search path and
    ``rel`` its path relative to that root (what orders files inside a root)."""

    path: str
    root: int
    size: int
    mtime_ns: int
    rel: str = ""
    stamp: int | None = None
    """What the index compares to see a change (``stamp``); None: as the cache has it."""


MAX_DIR_DEPTH = 32
"""Directories below a registry root deeper than this are not read."""


def walk(
    roots: tuple[Path, ...], unreadable: list[str] | None = None
) -> tuple[list[FileStat], list[tuple[str, int, int]]]:
    """Every ``*.toml`` below the roots in precedence order, and every directory seen.

    Roots keep their search-path order; inside a root, files sort bytewise by relative
    path. Directories come back with their mtime and ``stamp`` (-1 for a root that does not
    exist), which the cache compares to notice files being added, removed or renamed. A file or
    directory whose name is not UTF-8 is left out (its path, printable, goes to
    ``unreadable``): descriptors name their files, and such a name cannot be told or stored;
    so is a ``*.toml`` symlink whose target does not exist (told, never silently skipped).
    """
    files: list[FileStat] = []
    dirs: list[tuple[str, int, int]] = []
    seen: set[str] = set()  # a root below (or above) an earlier one: each place counts once
    for index, root in enumerate(roots):
        if str(root) in seen:
            continue
        try:
            st = os.stat(root)
        except OSError:
            dirs.append((str(root), -1, -1))
            seen.add(str(root))
            continue
        below: list[tuple[str, int, int]] = [(str(root), st.st_mtime_ns, stamp(st))]
        found = sorted(
            _walk_root(str(root), st, below, unreadable), key=lambda item: os.fsencode(item[0])
        )
        dirs += [d for d in below if d[0] not in seen]
        seen.update(d for d, _, _ in below)
        for rel, path, size, st in found:
            if path not in seen:
                seen.add(path)
                files.append(FileStat(path, index, size, st.st_mtime_ns, rel, stamp(st)))
    return files, dirs


def _walk_root(
    root: str,
    root_stat: os.stat_result,
    dirs: list[tuple[str, int, int]],
    unreadable: list[str] | None,
) -> Iterator[tuple[str, str, int, os.stat_result]]:
    """Each directory once: a symlinked directory already visited (an ancestor, a loop,
    a second link to one place) is not entered again, and depth is bounded. Names are
    visited in sorted order, so which of two links to one directory counts is stable."""
    visited = {(root_stat.st_dev, root_stat.st_ino)}
    prefix = root if root.endswith(os.sep) else root + os.sep  # what scandir puts before names
    stack = [(root, 0)]
    while stack:
        directory, depth = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: os.fsencode(e.name))
        except OSError:
            continue
        subdirectories = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if not is_text(entry.name):
                if unreadable is not None and (entry.name.endswith(".toml") or _is_dir(entry)):
                    unreadable.append(f"{printable_os(entry.path)}\t{NOT_UTF8}")
                continue
            try:
                if entry.is_dir():
                    st = entry.stat()
                    if depth >= MAX_DIR_DEPTH or (st.st_dev, st.st_ino) in visited:
                        continue
                    visited.add((st.st_dev, st.st_ino))
                    dirs.append((entry.path, st.st_mtime_ns, stamp(st)))
                    subdirectories.append((entry.path, depth + 1))
                elif entry.name.endswith(".toml") and entry.is_file():
                    st = entry.stat()
                    yield entry.path[len(prefix) :], entry.path, st.st_size, st
                elif entry.name.endswith(".toml") and unreadable is not None:
                    why = DANGLING if _dangling(entry) else NOT_A_FILE
                    unreadable.append(f"{entry.path}\t{why}")
            except OSError as exc:  # a symlink loop, no permission to look
                if entry.name.endswith(".toml") and unreadable is not None:
                    unreadable.append(f"{entry.path}\tit cannot be read: {exc.strerror} (skipped)")
                continue
        stack.extend(reversed(subdirectories))


def stamp(st: os.stat_result) -> int:
    """What the index compares to see that a file or directory changed: its mtime and its
    ctime, as one number. The mtime alone can be set back (``touch -d``; ``cp -p``, ``rsync
    -a``, ``tar x`` and a container's COPY keep it), so an edit of the same size read as
    unchanged and a run ran the old command; the ctime is the kernel's own, set to now by
    any change, even of the mtime. (Whether a time is too recent to trust is still the
    mtime's question: see ``index``.)"""
    return hash((st.st_mtime_ns, st.st_ctime_ns))  # ints hash the same in every process


NOT_UTF8 = "the name is not UTF-8 (skipped); rename it"
DANGLING = "a symlink to nothing: its target does not exist (skipped)"
NOT_A_FILE = "not a regular file (a FIFO, a socket or a device: skipped)"
"""Why the walk leaves out a file it lists in ``unreadable`` (``PATH\tREASON`` each)."""


def _dangling(entry: os.DirEntry[str]) -> bool:
    """A symlink whose target does not exist."""
    return entry.is_symlink() and not os.path.exists(entry.path)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


_TOML_LINE = re.compile(r"at line (\d+)")


def parse_file(path: str) -> ParsedFile:
    """Parse and validate one registry file; problems instead of exceptions."""
    import tomllib

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return ParsedFile([], [], {})  # removed since the walk (an unregister): simply gone
    except OSError as exc:
        return ParsedFile([], [_problem("error", path, 1, f"unreadable: {exc}", skipped=True)], {})
    from toolctl.targets import NotUtf8, utf8_text

    try:
        text = utf8_text(data)
    except NotUtf8 as exc:
        return ParsedFile([], [_problem("error", path, exc.line, str(exc), skipped=True)], {})
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_LINE.search(str(exc))
        line = int(match.group(1)) if match else 1
        problem = _problem("error", path, line, f"TOML syntax error: {exc}", skipped=True)
        return ParsedFile([], [problem], {})
    except RecursionError:
        message = f"nested too deeply to read (toolctl reads up to {MAX_DEPTH} levels)"
        return ParsedFile([], [_problem("error", path, 1, message, skipped=True)], {})
    except ValueError as exc:  # tomllib lets int()'s digit limit through
        problem = _problem("error", path, 1, f"TOML value error: {exc}", skipped=True)
        return ParsedFile([], [problem], {})
    return parse_document(document, text, path)


def parse_document(document: dict[str, Any], text: str, path: str) -> ParsedFile:
    """Validate the tables of one parsed TOML document (plain tools without pydantic)."""
    from toolctl.registry.plain import plain_text, plain_tool

    definitions: list[Definition] = []
    texts: list[str | None] = []
    problems: list[Finding] = []
    raw: dict[str, list[dict[str, Any]]] = {}
    for key, value in document.items():
        if key not in KINDS:
            if key in TABLES:  # [[trust]]: read by toolctl.registry.trust, not indexed
                continue
            expected = ", ".join(f"[[{k}]]" for k in TABLES)
            problems.append(
                _problem(
                    "error",
                    path,
                    first_key_line(text, key),
                    f"unknown table '{key}': expected {expected}",
                )
            )
            continue
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            problems.append(
                _problem(
                    "error",
                    path,
                    first_key_line(text, key),
                    f"'{key}' must be an array of tables: write [[{key}]]",
                    skipped=True,
                )
            )
            continue
        lines = _header_lines(text, key, len(value))
        raw[key] = value
        for position, (entry, line) in enumerate(zip(value, lines, strict=True), start=1):
            data = plain_tool(entry) if key == "tool" else None
            if data is not None:
                definitions.append(Definition(key, data["name"], path, line, data))
                texts.append(plain_text(data))
                continue
            refused = refuse_values(entry)
            if refused is not None:
                from toolctl.registry.keylines import key_line

                label = _label(key, entry, position)
                at = key_line(text, key, line, [refused.partition(":")[0]])
                problems.append(_problem("error", path, at, f"{label}: {refused}", skipped=True))
                continue
            from toolctl.models import MODELS

            outcome = _validate(MODELS[key], key, entry, (path, text, line), position)
            if isinstance(outcome, Definition):
                definitions.append(outcome)
                texts.append(None)
            else:
                problems.extend(outcome)
    problems.extend(_hidden_text(text, path))
    return ParsedFile(definitions, problems, raw, tuple(texts))


HIDDEN = "hidden"
"""The code of a file holding characters that hide or reorder text (``_hidden_text``)."""
_HIDDEN = re.compile(
    "[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]"
    # or written as TOML escapes (\u202e, \U000E0041), as such a file usually has them
    r"|\\u(?:061[cC]|200[eEfF]|202[a-eA-E]|206[6-9])|\\U000[eE]00[0-7][0-9a-fA-F]"
)


def _code(match: str) -> str:
    """``U+202E`` for the character or its escape."""
    return f"U+{ord(match):04X}" if len(match) == 1 else f"U+{match[2:].lstrip('0').upper():0>4}"


def _hidden_text(text: str, path: str) -> list[Finding]:
    """A warning for a file holding bidirectional controls ("Trojan Source") or TAG
    characters ("ASCII smuggling": instructions a model reads in a description and a
    person reviewing it does not see); at the first, with how many there are."""
    found = _HIDDEN.search(text)
    if found is None:
        return []
    line = text.count("\n", 0, found.start()) + 1
    column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
    count = len(_HIDDEN.findall(text))
    message = (
        f"holds {count} character(s) that hide or reorder text ({_code(found.group())} at "
        f"column {column} the first): a model reads what a person reviewing it does not see; "
        "remove them"
    )
    return [Finding("warning", HIDDEN, path, line, message)]


def _validate(
    model: Any, kind: str, entry: dict[str, Any], where: tuple[str, str, int], position: int
) -> Definition | list[Finding]:
    """The entry as a Definition, or a finding for each error, at the line of its key
    (``where``: the file's path, its text, the entry's header line)."""
    from pydantic import ValidationError

    from toolctl.models import normalise

    path, text, line = where
    try:
        validated = model.model_validate(entry)
    except ValidationError as exc:
        from toolctl.registry.keylines import key_line

        label = _label(kind, entry, position)
        return [
            _problem(
                "error",
                path,
                key_line(text, kind, line, error["loc"]),
                f"{label}: {_describe(error, model)}",
                skipped=True,
            )
            for error in exc.errors()
        ]
    return Definition(kind, validated.name, path, line, normalise(kind, validated))


def _label(kind: str, entry: dict[str, Any], position: int) -> str:
    name = entry.get("name", entry.get("id"))
    return f"{kind} '{name}'" if isinstance(name, str) else f"{kind} #{position}"


MAX_DEPTH = 64
"""How deeply values may nest inside one descriptor (JSON output and validation recurse)."""


def refuse_values(entry: dict[str, Any]) -> str | None:
    """Why an entry's values cannot be kept, or None: nesting past MAX_DEPTH, a non-finite
    number (``nan``, ``inf``) or a TOML date or time, which JSON cannot carry."""
    for key, value in entry.items():
        stack = [(value, 1)]
        while stack:
            item, depth = stack.pop()
            if isinstance(item, float) and not math.isfinite(item):
                return f"{key}: {item} is not a finite number"
            if isinstance(item, datetime.date | datetime.time):
                return f"{key}: {item.isoformat()} is a TOML date or time (quote it: JSON has none)"
            if isinstance(item, dict | list):
                if depth > MAX_DEPTH:
                    return f"{key}: nested deeper than {MAX_DEPTH} levels"
                values = item.values() if isinstance(item, dict) else item
                stack.extend((child, depth + 1) for child in values)
    return None


def _describe(error: Any, model: Any = None) -> str:
    where = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden" and error["loc"]:
        return _unknown_field(error["loc"], model)
    if error["type"] == "string_pattern_mismatch" and error.get("ctx", {}).get("pattern") == (
        NAME_PATTERN
    ):
        from toolctl.names import name_problem

        message = name_problem(str(error["input"])) or message
    return f"{where}: {message}" if where else message


def _unknown_field(loc: Sequence[Any], model: Any) -> str:
    """``unknown field 'descripton' (did you mean 'description'?)``: the fields the model
    holds where the unknown one stands, the closest named."""
    import difflib

    for part in loc[:-1]:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(part)
        model = _model_in(field.annotation) if field is not None else None
    known = [] if model is None else [f.alias or n for n, f in model.model_fields.items()]
    name = str(loc[-1])
    where = ".".join(str(part) for part in loc[:-1])
    text = f"{where}: unknown field '{name}'" if where else f"unknown field '{name}'"
    close = difflib.get_close_matches(name, known, n=1)
    return f"{text} (did you mean '{close[0]}'?)" if close else text


def _model_in(annotation: Any) -> Any:
    """The pydantic model an annotation holds (``X``, ``X | None``, ``list[X]``), or None."""
    import typing

    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in typing.get_args(annotation):
        found = _model_in(argument)
        if found is not None:
            return found
    return None


def _header_lines(text: str, kind: str, count: int) -> list[int]:
    """The line of each ``[[kind]]`` header; TOML keeps array-of-table order. (TOML's
    lines end at LF only: U+2028 is no line break; a header inside a multi-line string
    is none, so such a file's lines are read string by string.)"""
    pattern = re.compile(rf"^\s*\[\[\s*{kind}\s*\]\]\s*(#.*)?$")
    if '"""' in text or "'''" in text:
        from toolctl.registry.keylines import outside_strings

        numbered = outside_strings(text.split("\n"))
    else:
        numbered = enumerate(text.split("\n"), start=1)
    lines = [n for n, line in numbered if pattern.match(line)]
    if len(lines) == count:
        return lines
    # An inline array (`tool = [{...}]`) has no headers: point at its key instead.
    return [first_key_line(text, kind)] * count


def first_key_line(text: str, key: str) -> int:
    """The line of the first ``key =`` or ``[key...]`` of a TOML text (1 when none)."""
    pattern = re.compile(rf"^\s*\[*\s*{re.escape(key)}\b")
    for number, line in enumerate(text.split("\n"), start=1):
        if pattern.match(line):
            return number
    return 1


def _problem(
    severity: Severity, path: str, line: int, message: str, *, skipped: bool = False
) -> Finding:
    return Finding(severity, PARSE, path, line, message, skipped)
