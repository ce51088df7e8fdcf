"""The run history: one SQLite file under the state directory, one row per call.

Many processes write it at once (servers, workers, every `toolctl run`): the file is in
WAL mode (readers never wait for writers, a writer's commit is one append to the log),
each write is one short ``BEGIN IMMEDIATE`` transaction holding a batch of rows, and a
writer that finds the file locked waits at most ``WRITE_BUSY_SECONDS``. A process killed in
the middle of a write leaves a log that the next one to open the file rolls back or
forward: a row is either whole or absent.

Bounded by count and age (``RecordSettings.max_calls``, ``max_days``): every tenth of the
count bound (at most every ``PRUNE_EVERY`` rows) a write also deletes the rows past
either bound, so the table never holds more than ~1.1x the count bound.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import closing
from functools import partial
from itertools import islice, product
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from toolctl.errors import ToolctlError

if TYPE_CHECKING:
    from toolctl.reporting import Reporter

WAL_PAGES = 64
"""Checkpoint the log once it holds this many pages (SQLite's default is 1,000). A
`toolctl run` never closes the file (it ends with os._exit), so the next process to open
it rebuilds the log's index by reading the whole log: a short log keeps that under a
millisecond, at the price of a checkpoint (two fsyncs) every ~16 runs."""
BUSY_SECONDS = 2.0
"""How long a read waits for the file (in WAL mode only while a log is being recovered)."""
BUSY_STEP = 0.1
"""How long SQLite itself waits for a lock before a writer looks again (``_begin``)."""
WRITE_BUSY_SECONDS = 30.0
"""How long a write waits for other writers' transactions before giving up (a warning and
its records lost). A write is off the call's path (after `run` printed its result, on a
server's writer thread), so waiting costs no call anything, where giving up loses records:
2 s lost every record of sixteen runs ending behind a write of ~1 s made slow by a busy
machine (a `history import` of 100,000 calls holds the file ~1 s here)."""
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
_REPLACE = "DELETE FROM calls WHERE session = ? AND caller = 'import'"


Chosen = str | tuple[str, ...] | None
"""What a Filter's field takes: one value, any of several (``--tool a --tool b``), or None
(and the empty tuple) for any."""


class Filter(NamedTuple):
    """Which calls to read: each given field narrows the selection."""

    tool: Chosen = None
    outcome: Chosen = None
    caller: Chosen = None
    session: Chosen = None
    since: float | None = None
    until: float | None = None

    def where(self) -> tuple[str, list[Any]]:
        """The SQL condition and its parameters."""
        terms: list[str] = []
        values: list[Any] = []
        for column in ("tool", "outcome", "caller", "session"):
            chosen = chosen_values(getattr(self, column))
            if chosen:
                terms.append(f"{column} IN ({', '.join('?' * len(chosen))})")
                values += chosen
        if self.since is not None:
            terms.append("time >= ?")
            values.append(self.since)
        if self.until is not None:
            terms.append("time < ?")
            values.append(self.until)
        return (" WHERE " + " AND ".join(terms) if terms else ""), values


def chosen_values(chosen: Chosen) -> tuple[str, ...]:
    """A Filter field's values: none for any."""
    if chosen is None:
        return ()
    return (chosen,) if isinstance(chosen, str) else tuple(chosen)


def history_path(state_dir: Path) -> Path:
    return state_dir / FILE_NAME


def open_for_writing(path: Path) -> sqlite3.Connection:
    """The history file, created (with its directory) on first use; sqlite3.Error or OSError
    when it cannot be (a read-only or full disk)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # XDG: the user's alone
    _regular(path)
    _private(path)
    # the journal's writer thread and the thread that flushes at exit share it, one at a
    # time (Journal._writing): sqlite3's own same-thread check would refuse the second
    db = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA synchronous=NORMAL")  # WAL: a commit is an append, no fsync
        db.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
        foreign = _foreign(db)
        if foreign:  # never written into: another program's, or a newer toolctl's
            raise sqlite3.DatabaseError(foreign)
        if foreign == "":
            _create(db)
        db.execute(f"PRAGMA busy_timeout={int(BUSY_STEP * 1000)}")  # `_begin` waits longer
    except BaseException:
        db.close()
        raise
    return db


def _regular(path: Path) -> None:
    """OSError for a history path that is there and no regular file: SQLite would open a
    FIFO and wait for a writer, past every signal, or fail on a directory with "disk I/O
    error"."""
    import stat

    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "it is not a regular file")


def _foreign(db: sqlite3.Connection) -> str | None:
    """None for a history of this version; "" for an empty database (one to create);
    else why it is not one toolctl reads or writes."""
    # one statement, so one snapshot: read apart, a history being created between the two
    # reads (its first writer's commit) looked like another program's database
    version, tables = db.execute(
        "SELECT user_version, (SELECT count(*) FROM sqlite_master) FROM pragma_user_version"
    ).fetchone()
    if version == VERSION:
        return None
    if version > VERSION:
        return f"written by a newer toolctl (history version {version}, this one reads {VERSION})"
    if tables:
        return "it is not a toolctl history (another program's database)"
    return ""


def _private(path: Path) -> None:
    """The history readable by its owner alone (0600; SQLite gives its -wal and -shm files
    the same mode): it names sessions, and with --record-arguments holds what calls were
    given and answered. A file made readable to others before is made private again."""
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_CREAT, 0o600))
    except PermissionError:  # another user's file: SQLite says what it can do with it
        return
    for part in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):  # the newest rows: -wal
        try:
            if part.stat().st_mode & 0o077:
                os.chmod(part, 0o600)
        except OSError:  # not there (yet), or not ours
            pass


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
    replacing: Sequence[str] = (),
) -> int:
    """Write ``records`` in one transaction, deleting what is past the bounds now and then;
    how many rows the bounds deleted past what these records made room for (a bound
    lowered since: the caller tells it, as nothing else would).

    ``replacing``: sessions whose imported calls (caller ``import``) these records replace,
    deleted in the same transaction, so a write that fails leaves them as they were."""
    if not records and not replacing:
        return 0
    _begin(db)
    pruned = 0
    try:
        if replacing:
            db.executemany(_REPLACE, [(session,) for session in replacing])
        db.executemany(_INSERT, records)
        last = db.execute("SELECT last_insert_rowid()").fetchone()[0]
        every = max(1, min(PRUNE_EVERY, max_calls // 10))
        if last // every != (last - len(records)) // every:
            oldest = (time.time() if now is None else now) - max_days * 86400
            deleted = db.execute(
                "DELETE FROM calls WHERE id <= ? OR time < ?", (last - max_calls, oldest)
            ).rowcount
            pruned = max(deleted - len(records) - every, 0)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return pruned


def _begin(db: sqlite3.Connection) -> None:
    """``BEGIN IMMEDIATE``, waiting up to ``WRITE_BUSY_SECONDS`` for other writers in steps
    of ``BUSY_STEP``: SQLite waits in C, where no signal handler runs, so Ctrl-C while a
    command's records wait for the file ends it within a step, not after the whole wait."""
    deadline = time.monotonic() + WRITE_BUSY_SECONDS
    while True:
        try:
            db.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            busy = getattr(exc, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED")
            if not busy or time.monotonic() >= deadline:
                raise


class HistoryUnusable(ToolctlError):
    """The history file cannot be read or written (not a database, damaged, locked, on a
    failed disk): exit 74, the code for a file toolctl keeps that failed it."""

    error_code = "history_unusable"
    exit_code = 74


def unusable(path: Path, exc: sqlite3.Error | OSError, doing: str = "read") -> HistoryUnusable:
    """The error for a history file SQLite could not ``doing``, naming the file (and, for a
    directory it cannot use, the variable that moves it)."""
    if isinstance(exc, OSError):
        return HistoryUnusable(
            f"cannot {doing} the run history at {path}: {exc.strerror or exc}",
            hint="set XDG_STATE_HOME to a directory toolctl can use",
        )
    reason = str(exc) or type(exc).__name__
    name = getattr(exc, "sqlite_errorname", "")
    hint = None
    if name in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
        hint = "move the file away to start a new history"
    elif name in ("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_FULL", "SQLITE_IOERR"):
        # SQLite's words name neither the cause nor the way out: a directory read-only (a
        # history in WAL mode is read with a file written beside it), full, or failing
        hint = (
            "its directory may be read-only or full; set XDG_STATE_HOME to one toolctl can "
            "use, or TOOLCTL_HISTORY=0"
        )
    return HistoryUnusable(f"cannot {doing} the run history at {path}: {reason}", hint=hint)


class _Reader(sqlite3.Connection):
    """A read-only history connection that knows its file, for the errors that name it."""

    path: Path


def open_for_reading(path: Path) -> sqlite3.Connection | None:
    """The history file read-only, or None when there is none yet; HistoryUnusable when it
    cannot be read."""
    if not path.exists():
        # none yet, unless a file stands where a directory of its path should be: then
        # none can ever be written there (a write says so), and "no calls" would be wrong
        nearest = next((p for p in path.parents if p.exists()), None)
        if nearest is not None and not nearest.is_dir():
            raise unusable(path, NotADirectoryError(errno.ENOTDIR, "Not a directory"))
        if path.is_symlink():  # a link to nothing: no write lands there either
            raise unusable(path, FileNotFoundError(errno.ENOENT, "a symlink to nothing"))
        return None
    try:
        _regular(path)
        db = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, timeout=BUSY_SECONDS, factory=_Reader
        )
    except OSError as exc:
        raise unusable(path, exc) from None
    except sqlite3.Error as exc:
        raise unusable(path, exc) from None
    db.path = path
    try:
        foreign = _foreign(db)
    except sqlite3.Error as exc:
        db.close()
        raise unusable(path, exc) from None
    if foreign is not None:
        db.close()
        if foreign:
            raise HistoryUnusable(
                f"cannot read the run history at {path}: {foreign}",
                hint="move the file away to start a new history",
            )
        return None
    return db


def recent(
    db: sqlite3.Connection, selected: Filter, limit: int, reporter: Reporter | None = None
) -> list[CallRecord]:
    """The ``limit`` most recent calls of the selection, newest first; rows skipped as odd
    are told to ``reporter``."""
    found = []
    # no LIMIT in SQL: a row skipped as odd must not leave the page short
    with closing(_rows(db, COLUMNS, selected, "time DESC, id DESC", reporter)) as rows:
        for row in rows:
            found.append(CallRecord._make(row))
            if len(found) >= limit:
                break
    return found


def by_session(
    db: sqlite3.Connection, selected: Filter, reporter: Reporter | None = None
) -> list[CallRecord]:
    """The calls of the selection by session, each session's in the order they were made."""
    rows = _rows(db, COLUMNS, selected, "session, time, id", reporter)
    return [CallRecord._make(row) for row in rows]


def outcomes(
    db: sqlite3.Connection, selected: Filter, reporter: Reporter | None = None
) -> Iterator[tuple[str, str, float, str]]:
    """(tool, outcome, duration in ms, runtime) of every call of the selection, by tool."""
    # the columns a row cannot go without (judged as `history` judges them), not the rest:
    # reading them all would be half as slow again
    for _, tool, runtime, _, outcome, _, duration, *_ in _rows(
        db, _REQUIRED, selected, "tool, time", reporter
    ):
        yield tool, outcome, duration, runtime


def any_call(db: sqlite3.Connection) -> bool:
    """Whether the history holds any call at all (of any selection)."""
    try:
        return db.execute("SELECT 1 FROM calls LIMIT 1").fetchone() is not None
    except sqlite3.Error as exc:
        raise _unreadable(db, exc) from None


def count(db: sqlite3.Connection, selected: Filter | None = None) -> int:
    where, values = (selected or Filter()).where()
    try:
        found: int = db.execute(f"SELECT count(*) FROM calls{where}", values).fetchone()[0]
    except sqlite3.Error as exc:
        raise _unreadable(db, exc) from None
    return found


def _unreadable(db: sqlite3.Connection, exc: sqlite3.Error) -> HistoryUnusable:
    return unusable(getattr(db, "path", Path("history")), exc)


def _rows(
    db: sqlite3.Connection,
    columns: Sequence[str],
    selected: Filter,
    order: str,
    reporter: Reporter | None,
) -> Generator[tuple[Any, ...], None, None]:
    """The ``columns`` of the selected calls in ``order``, judged (``_Judge``): the one way
    stored rows are read. Rows that are not what toolctl writes are skipped, and counted in
    one warning to ``reporter`` (none without)."""
    where, values = selected.where()
    query = f"SELECT {', '.join(columns)} FROM calls{where} ORDER BY {order}"
    judge = _Judge(columns)
    skipped = read = 0
    try:
        for lenient in (False, True):
            try:
                rows = db.execute(query, values)
                # the rows told before the text that is not UTF-8 are not told again
                for row in islice(rows, read, None) if lenient else rows:
                    read += 1
                    judged = judge(row)
                    if judged is None:
                        skipped += 1
                    else:
                        yield judged
                return
            except sqlite3.OperationalError as exc:
                # text that is not UTF-8 (another program wrote it) ends sqlite3's own
                # decoding: read again, decoding as best it can (slower, so only then)
                if lenient or "UTF-8" not in str(exc):
                    raise
                db.text_factory = partial(str, encoding="utf-8", errors="replace")
    except sqlite3.Error as exc:
        raise _unreadable(db, exc) from None
    finally:
        if skipped and reporter is not None:
            reporter.warn(
                f"skipped {skipped} row(s) of the run history at "
                f"{getattr(db, 'path', 'its file')} with values toolctl does not write"
            )


class _Odd(Exception):
    """A value a NOT NULL column cannot be read as."""


MAX_TIME = 253_402_214_400.0
"""9999-12-31 (UTC), the last day a date can be shown for; toolctl writes time.time()."""


def _text(value: Any) -> str:
    if type(value) is str:
        return value
    if isinstance(value, bytes):  # a BLOB: shown as best it can
        return value.decode("utf-8", errors="replace")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise _Odd


def _integer(value: Any) -> int:
    if type(value) is int:
        return value
    raise _Odd


def _number(value: Any, low: float, high: float) -> float:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if number and low <= value <= high:  # NaN is neither
        return float(value)
    raise _Odd


def _optional(value: Any) -> str | None:
    """A nullable (text) column: a value it cannot be read as is left out, the row kept."""
    try:
        return None if value is None else _text(value)
    except _Odd:
        return None


_NULLABLE = ("session", "trace_id", "span_id", "call_id", "error", "arguments", "output")
_REQUIRED = tuple(column for column in COLUMNS if column not in _NULLABLE)
"""time, tool, runtime, caller, outcome, exit_code, duration_ms, bytes_in, bytes_out,
truncated: what toolctl always writes (NOT NULL)."""
_RANGES = {"time": (0.0, MAX_TIME), "duration_ms": (0.0, sys.float_info.max)}
"""A call must be placed in time (a date that can be shown) and take a finite time."""
_READ: dict[str, Callable[[Any], Any]] = {
    **{column: partial(_number, low=low, high=high) for column, (low, high) in _RANGES.items()},
    **dict.fromkeys(("tool", "runtime", "caller", "outcome"), _text),
    **dict.fromkeys(("exit_code", "bytes_in", "bytes_out", "truncated"), _integer),
    **dict.fromkeys(_NULLABLE, _optional),
}
_KINDS: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(_NULLABLE, (str, type(None))),
    **dict.fromkeys(("tool", "runtime", "caller", "outcome"), (str,)),
    **dict.fromkeys(("time", "duration_ms"), (float,)),
    **dict.fromkeys(("exit_code", "bytes_in", "bytes_out", "truncated"), (int,)),
}
"""The types of what toolctl writes in each column."""


class _Judge:
    """Stored rows of ``columns`` as values toolctl can show: a row is None (skipped) when
    a column toolctl always fills (NOT NULL) holds what it would never write there (text in
    a number, a time no date can show); text stored as a BLOB is decoded as best it can, and
    an odd value in a column it may leave empty is left out (None)."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.reads = [_READ[column] for column in columns]
        # the shapes of rows as toolctl writes them, let through at once: `stats` judges
        # every row of the history
        self.usual = frozenset(product(*(_KINDS[column] for column in columns)))
        self.ranged = [
            (i, _RANGES[column]) for i, column in enumerate(columns) if column in _RANGES
        ]

    def __call__(self, row: tuple[Any, ...]) -> tuple[Any, ...] | None:
        if tuple(map(type, row)) in self.usual:
            for i, (low, high) in self.ranged:
                if not low <= row[i] <= high:
                    break
            else:
                return row
        try:
            return tuple(read(value) for read, value in zip(self.reads, row, strict=True))
        except _Odd:
            return None


def write(path: Path, records: Iterable[CallRecord], *, max_calls: int, max_days: float) -> int:
    """Open, append ``records`` in one transaction, close; the number written."""
    batch = list(records)
    db = open_for_writing(path)
    try:
        append(db, batch, max_calls=max_calls, max_days=max_days)
    finally:
        db.close()
    return len(batch)
