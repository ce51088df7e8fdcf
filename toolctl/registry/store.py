"""The index file: its tables, the rows of one registry file, a cold build, publishing.

A cache file is never changed once it is in place: every build, and every re-index of a
few files (``toolctl.registry.reindex``), writes a new file beside it and renames it over
the old one. A process reading the old file keeps a consistent index, two processes
building at once each publish a whole one, and a re-index may start from a plain copy.

Every definition is kept with its place in precedence order (``seq``, a BLOB that sorts
bytewise as (root on the search path, relative path, position in the file)), so rows can
be added and removed for one file while ``ORDER BY seq`` still gives the search-path
order, and which definition wins can be asked of the index instead of a whole rebuild.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import struct
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from toolctl.errors import RegistryError
from toolctl.names import fold
from toolctl.registry.index import RACY_NS
from toolctl.registry.loader import Definition, FileStat

if TYPE_CHECKING:
    from toolctl.registry.indexing import Parsed
    from toolctl.registry.lint import Attached


SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE dirs(path TEXT PRIMARY KEY, mtime_ns INTEGER);
CREATE TABLE files(path TEXT PRIMARY KEY, seq BLOB, root INTEGER, size INTEGER,
                   mtime_ns INTEGER);
CREATE TABLE defs(id INTEGER PRIMARY KEY, seq BLOB, kind TEXT, name TEXT, folded TEXT,
                  file TEXT, line INTEGER, winner INTEGER, runtime TEXT, data TEXT);
CREATE TABLE refs(def INTEGER, kind TEXT, name TEXT);
CREATE TABLE problems(id INTEGER PRIMARY KEY, seq BLOB, def INTEGER, origin TEXT, code TEXT,
                      severity TEXT, file TEXT, line INTEGER, message TEXT, skipped INTEGER);
"""
"""``winner`` is 1 for the definition in force (the first of its name, and not confusable
with an earlier winner); ``refs`` are the names a definition refers to (a tool's service,
an action's tools and next actions, a group's tools); a lint problem keeps the ``def`` it
is on, a parse problem has none. ``seq`` orders problems of one file and line."""

INDEXES = """
CREATE INDEX defs_by_name ON defs(kind, name, seq);
CREATE INDEX defs_by_folded ON defs(kind, folded, seq);
CREATE INDEX defs_by_file ON defs(file);
CREATE INDEX refs_by_target ON refs(kind, name);
CREATE INDEX refs_by_def ON refs(def);
CREATE INDEX problems_by_file ON problems(file);
CREATE INDEX problems_by_def ON problems(def);
"""  # made after the rows are in: one sort each instead of a b-tree insert per row


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


def stable_mtime(mtime_ns: int | None, started: int) -> int | None:
    """None for a time too close to the scan to be trusted (see ``index``'s docstring)."""
    return None if mtime_ns is None or mtime_ns > started - RACY_NS else mtime_ns


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
            (stat.path, key, stat.root, stat.size, stable_mtime(stat.mtime_ns, started))
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
            (parse_problem_seq(n), None, "parse", "parse", *p[:4], int(p.skipped))
            for n, p in enumerate(parsed.problems)
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
    """Problem rows of lint findings; ``ids`` maps ``id()`` of a definition to its row id
    and seq. Positions count within one (category, definition)."""
    rows = []
    previous: tuple[int, int] | None = None
    position = 0
    for category, definition, code, p in found:
        row_id, seq = ids[id(definition)]
        position = position + 1 if previous == (category, row_id) else 0
        previous = (category, row_id)
        rows.append((lint_problem_seq(category, seq, position), row_id, "lint", code, *p[:4], 0))
    return rows


def write_dirs(
    db: sqlite3.Connection, dirs: Iterable[tuple[str, int | None]], started: int
) -> None:
    db.execute("DELETE FROM dirs")
    db.executemany(
        "INSERT INTO dirs VALUES (?, ?)", [(p, stable_mtime(m, started)) for p, m in dirs]
    )


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
    dirs: list[tuple[str, int]],
    started: int,
) -> sqlite3.Connection:
    """Parse every file, find the winners, lint everything, and publish a new cache."""
    from toolctl.registry.indexing import parse_many
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
    with target:
        target.executescript(SCHEMA)
        target.execute("INSERT INTO meta VALUES ('key', ?)", (key,))
        write_dirs(target, dirs, started)
        insert(target, rows)
        target.executescript(INDEXES)
    return publish(target, temporary, path, key)


def publish(
    target: sqlite3.Connection, temporary: Path | None, path: Path | None, key: str
) -> sqlite3.Connection:
    """Rename a finished temporary over the cache and open it read-only."""
    from toolctl.registry.index import connect

    if temporary is None or path is None:
        return target
    target.close()
    os.replace(temporary, path)
    fresh = connect(path, key)
    if fresh is not None:
        return fresh
    raise RegistryError(f"cannot read the registry cache just written to {path}")


def temporary_for(path: Path) -> Path:
    """A build file next to the cache, one per process and thread (a server may have two
    threads building at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent)
    thread = threading.get_native_id()
    temporary = path.with_name(f".{path.name}.t{thread}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)
    return temporary


def writable(temporary: Path) -> sqlite3.Connection:
    db = sqlite3.connect(temporary, check_same_thread=False)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    return db


def open_target(path: Path | None) -> tuple[sqlite3.Connection, Path | None]:
    """A fresh database next to the cache file, or in memory if the cache dir is unusable."""
    if path is not None:
        try:
            temporary = temporary_for(path)
            return writable(temporary), temporary
        except (OSError, sqlite3.Error):
            pass
    return sqlite3.connect(":memory:", check_same_thread=False), None


STALE_AFTER_S = 600


def remove_stale_temporaries(directory: Path) -> None:
    """Remove cache files a killed build left: ``.registry-*.<pid>.tmp`` whose pid is gone
    or that are older than STALE_AFTER_S (a pid may have been reused since)."""
    for temporary in directory.glob(".registry-*.tmp"):
        pid = temporary.name.rsplit(".", 2)[-2]
        try:
            old = time.time() - temporary.stat().st_mtime > STALE_AFTER_S
            if old or not (pid.isdigit() and _alive(int(pid))):
                temporary.unlink()
        except OSError:
            continue  # gone already, or not ours to remove


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
