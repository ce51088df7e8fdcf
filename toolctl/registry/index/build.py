"""A cold build of the index: every file parsed, the winners found, everything linted.

Also the rows a build and a re-index (``reindex``) both write: every definition is kept
with its place in precedence order (``seq``, a BLOB that sorts bytewise as (root on the
search path, relative path, position in the file)), so rows can be added and removed for
one file while ``ORDER BY seq`` still gives the search-path order, and which definition
wins can be asked of the index instead of a whole rebuild.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import struct
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from toolctl.names import fold
from toolctl.registry.index.database import INDEXES, SCHEMA, open_target, publish, stable
from toolctl.registry.loader import Definition, FileStat

if TYPE_CHECKING:
    from toolctl.findings import Finding
    from toolctl.registry.index.parsing import Parsed
    from toolctl.registry.lint import Attached


def file_seq(root: int, relative: str) -> bytes:
    """A file's place in precedence order: its root, then its relative path bytewise."""
    return struct.pack(">I", root) + os.fsencode(relative)


def def_seq(file_key: bytes, position: int) -> bytes:
    """A definition's place: its file's, then document order (NUL sorts before any path)."""
    return file_key + b"\0" + struct.pack(">I", position)


def parse_problem_seq(position: int) -> bytes:
    return b"\0" + struct.pack(">I", position)


def lint_problem_seq(category: int, definition_seq: bytes, position: int) -> bytes:
    """Lint after parse problems, by rule kind, then definition, then in the order found."""
    return bytes([1 + category]) + definition_seq + struct.pack(">I", position)


class Rows(NamedTuple):
    """Rows to insert, and the definitions (``light`` data) with their ids and keys."""

    files: list[tuple[Any, ...]]
    defs: list[tuple[Any, ...]]
    refs: list[tuple[Any, ...]]
    problems: list[tuple[Any, ...]]
    definitions: list[Definition]
    seqs: list[bytes]
    ids: list[int]

    @classmethod
    def empty(cls) -> Rows:
        return cls([], [], [], [], [], [], [])

    def add(self, stat: FileStat, parsed: Parsed, started: int, next_id: int) -> int:
        """The rows of one file (winners and lint left for later); the next free id."""
        key = file_seq(stat.root, stat.rel or stat.path)
        self.files.append(
            (stat.path, key, stat.root, stat.size, stable(stat.mtime_ns, stat.stamp, started))
        )
        for position, (d, text) in enumerate(zip(parsed.definitions, parsed.texts, strict=True)):
            seq = def_seq(key, position)
            runtime = d.data.get("runtime") if d.kind == "tool" else None
            self.defs.append(
                (next_id, seq, d.kind, d.name, fold(d.name), d.file, d.line, 0, runtime, text)
            )
            self.refs.extend((next_id, kind, name) for kind, name in references(d))
            self.definitions.append(d)
            self.seqs.append(seq)
            self.ids.append(next_id)
            next_id += 1
        self.problems.extend(
            (parse_problem_seq(n), None, "parse", *_columns(f), int(f.skipped))
            for n, f in enumerate(parsed.problems)
        )
        return next_id


def references(definition: Definition) -> Iterator[tuple[str, str]]:
    """The (kind, name)s a definition refers to; what a change of those names re-lints."""
    data = definition.data
    if definition.kind == "tool" and data.get("service"):
        yield "service", data["service"]
    elif definition.kind == "action":
        yield from (("tool", edge["tool"]) for edge in data["tools"])
        yield from (("action", edge["action"]) for edge in data["next"])
    elif definition.kind == "group":
        yield from (("tool", name) for name in data["tools"])


def insert(db: sqlite3.Connection, rows: Rows) -> None:
    db.executemany("INSERT INTO files VALUES (?, ?, ?, ?, ?)", rows.files)
    db.executemany("INSERT INTO defs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows.defs)
    db.executemany("INSERT INTO refs VALUES (?, ?, ?)", rows.refs)
    insert_problems(db, rows.problems)


def insert_problems(db: sqlite3.Connection, problems: Iterable[tuple[Any, ...]]) -> None:
    db.executemany(
        "INSERT INTO problems(seq, def, origin, code, severity, file, line, message, skipped) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        problems,
    )


def lint_rows(
    found: Iterable[Attached], ids: dict[int, tuple[int, bytes]]
) -> list[tuple[Any, ...]]:
    """Rows of lint findings; ``ids`` maps ``id()`` of a definition to its row id and seq.
    Positions count within one (category, definition)."""
    rows = []
    previous: tuple[int, int] | None = None
    position = 0
    for category, definition, finding in found:
        row_id, seq = ids[id(definition)]
        position = position + 1 if previous == (category, row_id) else 0
        previous = (category, row_id)
        order = lint_problem_seq(category, seq, position)
        rows.append((order, row_id, "lint", *_columns(finding), 0))
    return rows


def _columns(finding: Finding) -> tuple[str, str, str, int, str]:
    """The code, severity, file, line and message columns of a finding's row."""
    return finding.code, finding.severity, finding.file, finding.line, finding.message


def write_dirs(
    db: sqlite3.Connection,
    dirs: Iterable[tuple[str, int | None]],
    unreadable: list[str] | None = None,
) -> None:
    """The directories seen and what the cache keeps of each (``stable``); ``unreadable``,
    when given, the paths the walk left out (non-UTF-8 names), which every command warns
    about while the cache holds."""
    db.execute("DELETE FROM dirs")
    db.executemany("INSERT INTO dirs VALUES (?, ?)", list(dirs))
    if unreadable is not None:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('unreadable', ?)", ("\n".join(unreadable),))


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic GC off: a build makes ~10 objects a definition, none in a cycle, and the
    collector's full passes over that growing heap were a third of a cold build of 100,000
    tools, finding nothing."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@collector_paused()
def build(
    path: Path | None,
    key: str,
    files: list[FileStat],
    dirs: Sequence[tuple[str, int | None]],
    started: int,
    unreadable: list[str] | None = None,
) -> sqlite3.Connection:
    """Parse every file, find the winners, lint everything, and publish a new cache
    (``dirs``: each directory and what the cache keeps of it, ``stable``)."""
    from toolctl.registry.index.parsing import parse_many
    from toolctl.registry.lint import in_force, lint_attached, resolve_runtime

    rows = Rows.empty()
    next_id = 1
    for stat, parsed in zip(
        files, parse_many([s.path for s in files], size=sum(s.size for s in files)), strict=True
    ):
        next_id = rows.add(stat, parsed, started, next_id)
    first = in_force(rows.definitions)
    services = {name: d for (kind, name), d in first.items() if kind == "service"}
    by_object = {
        id(d): (n, seq) for d, n, seq in zip(rows.definitions, rows.ids, rows.seqs, strict=True)
    }
    for index, d in enumerate(rows.definitions):
        winner = int(first.get((d.kind, d.name)) is d)
        if winner or (d.kind == "tool" and d.data.get("service")):
            runtime = resolve_runtime(d.data, services) if d.kind == "tool" else None
            rows.defs[index] = (*rows.defs[index][:7], winner, runtime, rows.defs[index][9])
    rows.problems.extend(lint_rows(lint_attached(rows.definitions, first), by_object))

    target, temporary = open_target(path)
    try:
        return _write(target, temporary, path, key, rows, dirs, unreadable or [])
    except (OSError, sqlite3.Error):
        if temporary is None:
            raise
        # the cache could not be written (a full disk, a file system gone read-only): the
        # index is a cache, so this command builds it in memory and the next one tries again
        target.close()
        temporary.unlink(missing_ok=True)
        memory, _ = open_target(None)
        return _write(memory, None, None, key, rows, dirs, unreadable or [])


def _write(
    target: sqlite3.Connection,
    temporary: Path | None,
    path: Path | None,
    key: str,
    rows: Rows,
    dirs: Sequence[tuple[str, int | None]],
    unreadable: list[str],
) -> sqlite3.Connection:
    with target:
        target.executescript(SCHEMA)
        target.execute("INSERT INTO meta VALUES ('key', ?)", (key,))
        write_dirs(target, dirs, unreadable)
        insert(target, rows)
        target.executescript(INDEXES)
    return publish(target, temporary, path, key)
