"""The run history: one SQLite file under the state directory, one row per call.

Many processes write it at once (servers, workers, every `toolctl run`): the file is in
WAL mode (readers never wait for writers, a writer's commit is one append to the log),
each write is one short ``BEGIN IMMEDIATE`` transaction holding a batch of rows, and a
writer that finds the file locked waits at most ``BUSY_SECONDS``. A process killed in
the middle of a write leaves a log that the next one to open the file rolls back or
forward: a row is either whole or absent.

Bounded by count and age (``RecordSettings.max_calls``, ``max_days``): every tenth of the
count bound (at most every ``PRUNE_EVERY`` rows) a write also deletes the rows past
either bound, so the table never holds more than ~1.1x the count bound.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

WAL_PAGES = 64
"""Checkpoint the log once it holds this many pages (SQLite's default is 1,000). A
`toolctl run` never closes the file (it ends with os._exit), so the next process to open
it rebuilds the log's index by reading the whole log: a short log keeps that under a
millisecond, at the price of a checkpoint (two fsyncs) every ~16 runs."""
BUSY_SECONDS = 2.0
"""How long a write waits for another writer's transaction before giving up (a warning)."""
PRUNE_EVERY = 1000
FILE_NAME = "history.sqlite3"
VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls(
    id INTEGER PRIMARY KEY,
    time REAL NOT NULL,
    tool TEXT NOT NULL,
    runtime TEXT NOT NULL,
    caller TEXT NOT NULL,
    session TEXT,
    outcome TEXT NOT NULL,
    exit_code INTEGER NOT NULL,
    duration_ms REAL NOT NULL,
    bytes_in INTEGER NOT NULL,
    bytes_out INTEGER NOT NULL,
    truncated INTEGER NOT NULL,
    trace_id TEXT,
    span_id TEXT,
    call_id TEXT,
    error TEXT,
    arguments TEXT,
    output TEXT
);
CREATE INDEX IF NOT EXISTS calls_by_time ON calls(time);
CREATE INDEX IF NOT EXISTS calls_by_tool ON calls(tool, time);
CREATE INDEX IF NOT EXISTS calls_by_session ON calls(session, time);
"""


class CallRecord(NamedTuple):
    """One call as the history keeps it (``arguments`` and ``output`` only when asked for,
    masked; ``error`` is the kind of failure, its message only with them)."""

    time: float
    """When the call started, in seconds since the epoch."""
    tool: str
    runtime: str
    caller: str
    session: str | None
    outcome: str
    exit_code: int
    duration_ms: float
    bytes_in: int = 0
    bytes_out: int = 0
    truncated: int = 0
    trace_id: str | None = None
    span_id: str | None = None
    call_id: str | None = None
    error: str | None = None
    arguments: str | None = None
    output: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The record as JSON: fields that are empty (None) are left out."""
        return {key: value for key, value in self._asdict().items() if value is not None}


COLUMNS = CallRecord._fields
_INSERT = f"INSERT INTO calls({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"


class Filter(NamedTuple):
    """Which calls to read: each given field narrows the selection."""

    tool: str | None = None
    outcome: str | None = None
    caller: str | None = None
    session: str | None = None
    since: float | None = None
    until: float | None = None

    def where(self) -> tuple[str, list[Any]]:
        """The SQL condition and its parameters."""
        terms, values = [], []
        for column in ("tool", "outcome", "caller", "session"):
            value = getattr(self, column)
            if value is not None:
                terms.append(f"{column} = ?")
                values.append(value)
        if self.since is not None:
            terms.append("time >= ?")
            values.append(self.since)
        if self.until is not None:
            terms.append("time < ?")
            values.append(self.until)
        return (" WHERE " + " AND ".join(terms) if terms else ""), values


def history_path(state_dir: Path) -> Path:
    return state_dir / FILE_NAME


def open_for_writing(path: Path) -> sqlite3.Connection:
    """The history file, created (with its directory) on first use; sqlite3.Error or OSError
    when it cannot be (a read-only or full disk)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # the journal's writer thread and the thread that flushes at exit share it, one at a
    # time (Journal._writing): sqlite3's own same-thread check would refuse the second
    db = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA synchronous=NORMAL")  # WAL: a commit is an append, no fsync
        db.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
        if db.execute("PRAGMA user_version").fetchone()[0] != VERSION:
            _create(db)
    except BaseException:
        db.close()
        raise
    return db


def _create(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA journal_mode=WAL")  # kept in the file: set once, for every opener
    db.execute("BEGIN IMMEDIATE")
    try:
        for statement in SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
        db.execute(f"PRAGMA user_version={VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def append(
    db: sqlite3.Connection,
    records: Sequence[CallRecord],
    *,
    max_calls: int,
    max_days: float,
    now: float | None = None,
) -> None:
    """Write ``records`` in one transaction, deleting what is past the bounds now and then."""
    if not records:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        db.executemany(_INSERT, records)
        last = db.execute("SELECT last_insert_rowid()").fetchone()[0]
        every = max(1, min(PRUNE_EVERY, max_calls // 10))
        if last // every != (last - len(records)) // every:
            oldest = (time.time() if now is None else now) - max_days * 86400
            db.execute("DELETE FROM calls WHERE id <= ? OR time < ?", (last - max_calls, oldest))
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def open_for_reading(path: Path) -> sqlite3.Connection | None:
    """The history file read-only, or None when there is none yet."""
    if not path.exists():
        return None
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_SECONDS)
    try:
        if db.execute("PRAGMA user_version").fetchone()[0] != VERSION:
            db.close()
            return None
    except sqlite3.Error:
        db.close()
        raise
    return db


def recent(db: sqlite3.Connection, selected: Filter, limit: int) -> list[CallRecord]:
    """The ``limit`` most recent calls of the selection, newest first."""
    where, values = selected.where()
    rows = db.execute(
        f"SELECT {', '.join(COLUMNS)} FROM calls{where} ORDER BY time DESC, id DESC LIMIT ?",
        [*values, limit],
    )
    return [CallRecord(*row) for row in rows]


def outcomes(db: sqlite3.Connection, selected: Filter) -> Iterator[tuple[str, str, float, str]]:
    """(tool, outcome, duration in ms, runtime) of every call of the selection, by tool."""
    where, values = selected.where()
    yield from db.execute(
        f"SELECT tool, outcome, duration_ms, runtime FROM calls{where} ORDER BY tool, time",
        values,
    )


def count(db: sqlite3.Connection, selected: Filter | None = None) -> int:
    where, values = (selected or Filter()).where()
    found: int = db.execute(f"SELECT count(*) FROM calls{where}", values).fetchone()[0]
    return found


def write(path: Path, records: Iterable[CallRecord], *, max_calls: int, max_days: float) -> int:
    """Open, append ``records`` in one transaction, close; the number written."""
    batch = list(records)
    db = open_for_writing(path)
    try:
        append(db, batch, max_calls=max_calls, max_days=max_days)
    finally:
        db.close()
    return len(batch)
