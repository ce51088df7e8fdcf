"""Re-indexing the files whose stat changed, on a copy of the cache, in one transaction.

The rows of each changed (added, edited, removed) file are deleted and its new rows
inserted; then what a cold build decides for the whole registry is decided again for the
few definitions the change can reach:

* the winner of every name whose folded form (``names.fold``) a changed definition has:
  the first definition of the group in precedence order is in force, every other name
  of the group is quarantined, every later definition of a name is shadowed;
* the names whose definition in force changed (``moved``): every definition that refers
  to one of them (a tool to its service, an action to its tools and next actions, a group
  to its tools) has its runtime and problems computed again, and so has every action an
  old or new definition of a moved action leads to (whether it is isolated);
* the problems of all of those, with the same rules (``lint``) and the same order keys as
  a cold build, so the result is the index a cold build of the same tree writes.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from toolctl.registry.index.build import (
    Rows,
    collector_paused,
    insert,
    insert_problems,
    lint_rows,
    write_dirs,
)
from toolctl.registry.index.database import publish, temporary_for, writable
from toolctl.registry.loader import Definition, FileStat, stamp

REINDEX_UP_TO = 0.25
"""Above this share of changed files, a cold build is cheaper than re-indexing."""

Key = tuple[str, str]


def reindex(
    path: Path,
    key: str,
    files: list[FileStat],
    dirs: list[tuple[str, int | None]],
    started: int,
    unreadable: list[str] | None = None,
) -> sqlite3.Connection | None:
    """A copy of the cache at ``path`` brought up to ``files`` and published; None when
    there is no cache to copy or so much changed that a cold build is the better way."""
    return _on_copy(path, key, lambda db: _apply(db, key, files, dirs, started, unreadable or []))


def reindex_only(path: Path, key: str, paths: set[str], started: int) -> sqlite3.Connection | None:
    """Re-index ``paths``, every other file and directory taken as the cache has them;
    None if one of them is gone (a walk must find what else changed) or as ``reindex``."""

    def apply(db: sqlite3.Connection) -> bool:
        files = []
        for file, seq, root, size, mtime in db.execute(
            "SELECT path, seq, root, size, mtime_ns FROM files ORDER BY seq"
        ):
            if file in paths:
                try:
                    st = os.stat(file)
                except OSError:
                    return False
                size, mtime, now = st.st_size, st.st_mtime_ns, stamp(st)
            else:
                now = mtime  # as the cache has it (None: too recent to have been trusted)
            files.append(FileStat(file, root, size, mtime or 0, os.fsdecode(seq[4:]), now))
        dirs = db.execute("SELECT path, mtime_ns FROM dirs").fetchall()
        return _apply(db, key, files, dirs, started)

    return _on_copy(path, key, apply)


@collector_paused()
def _on_copy(
    path: Path, key: str, apply: Callable[[sqlite3.Connection], bool]
) -> sqlite3.Connection | None:
    """Run ``apply`` in one transaction on a copy of the cache; publish it if it says so."""
    try:
        temporary = temporary_for(path)
        shutil.copyfile(path, temporary)  # published caches never change: a plain copy
        target = writable(temporary)
    except (OSError, sqlite3.Error):
        return None
    applied = False
    try:
        with target:
            applied = apply(target)
    finally:
        if not applied:
            target.close()
            temporary.unlink(missing_ok=True)
    return publish(target, temporary, path, key) if applied else None


def _apply(
    db: sqlite3.Connection,
    key: str,
    files: list[FileStat],
    dirs: Sequence[tuple[str, int | None]],
    started: int,
    unreadable: list[str] | None = None,
) -> bool:
    from toolctl.registry.index.parsing import parse_many

    if db.execute("SELECT value FROM meta WHERE key = 'key'").fetchone() != (key,):
        return False
    known = {
        path: (root, size, mtime)
        for path, root, size, mtime in db.execute("SELECT path, root, size, mtime_ns FROM files")
    }
    changed = [f for f in files if known.get(f.path) != (f.root, f.size, f.stamp)]
    present = {f.path for f in files}
    gone = [path for path in known if path not in present]
    if len(changed) + len(gone) > max(1, len(files)) * REINDEX_UP_TO:
        return False
    touched = [f.path for f in changed] + gone
    db.execute("CREATE TEMP TABLE touched(path TEXT PRIMARY KEY)")
    db.executemany("INSERT INTO touched VALUES (?)", [(p,) for p in touched])
    old = db.execute(
        "SELECT id, kind, folded FROM defs WHERE file IN (SELECT path FROM touched)"
    ).fetchall()

    rows = Rows.empty()
    next_id = int(db.execute("SELECT coalesce(max(id), 0) + 1 FROM defs").fetchone()[0])
    for stat, parsed in zip(
        changed,
        parse_many([f.path for f in changed], size=sum(f.size for f in changed)),
        strict=True,
    ):
        next_id = rows.add(stat, parsed, started, next_id)
    groups = {(kind, folded) for _, kind, folded in old}
    groups |= {(row[2], row[4]) for row in rows.defs}
    db.execute("CREATE TEMP TABLE groups(kind TEXT, folded TEXT, PRIMARY KEY(kind, folded))")
    db.executemany("INSERT INTO groups VALUES (?, ?)", sorted(groups))
    before = _in_force(db)
    leads = _leads(db, before.values())

    old_ids = [(row[0],) for row in old]
    db.executemany("DELETE FROM refs WHERE def = ?", old_ids)
    db.executemany("DELETE FROM problems WHERE def = ?", old_ids)
    for table in ("defs", "problems", "files"):
        column = "path" if table == "files" else "file"
        db.execute(f"DELETE FROM {table} WHERE {column} IN (SELECT path FROM touched)")
    insert(db, rows)
    for kind, folded in groups:  # the first of a folded name is in force, no other
        holder = db.execute(
            "SELECT id FROM defs WHERE kind = ? AND folded = ? ORDER BY seq LIMIT 1",
            (kind, folded),
        ).fetchone()
        db.execute(
            "UPDATE defs SET winner = (id = ?) WHERE kind = ? AND folded = ?",
            (holder[0] if holder else None, kind, folded),
        )
    after = _in_force(db)
    moved = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    leads |= _leads(db, after.values())
    _relint(db, _reached(db, moved, leads))
    write_dirs(db, dirs, unreadable)
    return True


def _in_force(db: sqlite3.Connection) -> dict[Key, int]:
    """The definition in force of each name of the changed groups: (kind, name) -> id."""
    rows = db.execute(
        "SELECT d.kind, d.name, d.id FROM groups g CROSS JOIN defs d "
        "ON d.kind = g.kind AND d.folded = g.folded WHERE d.winner = 1"
    )
    return {(kind, name): row_id for kind, name, row_id in rows}


def _leads(db: sqlite3.Connection, ids: Iterable[int]) -> set[str]:
    """The actions that the actions among ``ids`` lead to."""
    found: set[str] = set()
    for row_id in ids:
        rows = db.execute("SELECT name FROM refs WHERE def = ? AND kind = 'action'", (row_id,))
        found.update(name for (name,) in rows)
    return found


def _reached(db: sqlite3.Connection, moved: set[Key], leads: set[str]) -> list[int]:
    """Every definition whose runtime or problems the change may have changed."""
    ids = {
        row_id
        for (row_id,) in db.execute(
            "SELECT d.id FROM groups g CROSS JOIN defs d ON d.kind = g.kind AND d.folded = g.folded"
        )
    }
    for kind, name in moved:
        rows = db.execute("SELECT def FROM refs WHERE kind = ? AND name = ?", (kind, name))
        ids.update(row_id for (row_id,) in rows)
    for name in leads:
        rows = db.execute(
            "SELECT id FROM defs WHERE kind = 'action' AND name = ? AND winner = 1", (name,)
        )
        ids.update(row_id for (row_id,) in rows)
    return sorted(ids)


class _Lookup:
    """What is in force, asked of the index one name at a time (and remembered)."""

    def __init__(self, db: sqlite3.Connection, kind: str) -> None:
        self._db = db
        self._kind = kind
        self._found: dict[str, Definition | None] = {}

    def get(self, name: str, /) -> Definition | None:
        if name not in self._found:
            row = self._db.execute(
                "SELECT kind, name, file, line, data FROM defs "
                "WHERE kind = ? AND name = ? AND winner = 1",
                (self._kind, name),
            ).fetchone()
            self._found[name] = _decoded(*row) if row else None
        return self._found[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __getitem__(self, name: str) -> Definition:
        found = self.get(name)
        if found is None:
            raise KeyError(name)
        return found


def _decoded(kind: str, name: str, file: str, line: int, text: str) -> Definition:
    data: dict[str, Any] = json.loads(text)
    return Definition(kind, name, file, line, data)


def _relint(db: sqlite3.Connection, ids: list[int]) -> None:
    """Runtime and problems of the definitions ``ids``, as a cold build finds them."""
    from toolctl.registry.lint import (
        CONFUSABLES,
        SHADOWS,
        Attached,
        confusable,
        in_force_problems,
        isolated,
        resolve_runtime,
        shadow,
    )

    services, tools, actions = (_Lookup(db, kind) for kind in ("service", "tool", "action"))
    firsts: dict[tuple[str, str, str], tuple[int, Definition]] = {}

    def first(kind: str, column: str, value: str) -> tuple[int, Definition]:
        """The first definition of a name, or of a folded name (its holder)."""
        if (kind, column, value) not in firsts:
            row_id, name, file, line = db.execute(
                f"SELECT id, name, file, line FROM defs WHERE kind = ? AND {column} = ? "
                "ORDER BY seq LIMIT 1",
                (kind, value),
            ).fetchone()
            firsts[(kind, column, value)] = (row_id, Definition(kind, name, file, line, {}))
        return firsts[(kind, column, value)]

    found: list[Attached] = []
    by_object: dict[int, tuple[int, bytes]] = {}
    updates = []
    for row_id in ids:
        seq, kind, name, folded, file, line, winner, runtime, text = db.execute(
            "SELECT seq, kind, name, folded, file, line, winner, runtime, data FROM defs "
            "WHERE id = ?",
            (row_id,),
        ).fetchone()
        definition = _decoded(kind, name, file, line, text)
        by_object[id(definition)] = (row_id, seq)
        if kind == "tool":
            resolved = resolve_runtime(definition.data, services)
            if resolved != runtime:
                updates.append((resolved, row_id))
        (head_id, head), (holder_id, holder) = (
            first(kind, "name", name),
            first(kind, "folded", folded),
        )
        if head_id != row_id:
            found.append(Attached(SHADOWS, definition, shadow(definition, head)))
        elif holder_id != row_id:
            found.append(Attached(CONFUSABLES, definition, confusable(definition, holder)))
        if winner:
            found += in_force_problems(definition, services, tools, actions)
            if kind == "action":
                found += isolated(definition, _linked(db, name))
    db.executemany("UPDATE defs SET runtime = ? WHERE id = ?", updates)
    db.executemany("DELETE FROM problems WHERE def = ?", [(i,) for i in ids])
    found.sort(key=lambda attached: attached.category)
    insert_problems(db, lint_rows(found, by_object))


def _linked(db: sqlite3.Connection, name: str) -> bool:
    """Whether an action in force other than ``name`` leads to action ``name``."""
    row = db.execute(
        "SELECT 1 FROM refs r JOIN defs d ON d.id = r.def WHERE r.kind = 'action' "
        "AND r.name = ? AND d.kind = 'action' AND d.winner = 1 AND d.name != ? LIMIT 1",
        (name, name),
    ).fetchone()
    return row is not None
