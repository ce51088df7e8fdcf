"""The records of this process on their way to the run history, written off the call's path.

A call's record is appended to a list in memory (no I/O, no SQLite). A writer thread,
started by the first record, writes what has gathered every ``PERIOD`` seconds (or once
``BATCH`` records wait) in one transaction; ``flush_all`` writes the rest synchronously,
and the command line calls it once its output is out, so a single `toolctl run` opens
SQLite after the result is printed, never between the call and its result.

Writing never fails a call: the first error (a read-only or full disk, a file another
program locked for too long) is reported once, through ``warn`` or by ``flush_all``, and
the records of the next ``RETRY_AFTER`` seconds are dropped (counted); then a
long-running process (a server, a worker) tries again, and says so when the history is
written once more. A program using toolctl as a library gets what is left written at its
normal exit (``atexit``).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from toolctl.records.history import CallRecord

if TYPE_CHECKING:
    from toolctl.settings import Settings

PERIOD = 1.0
"""Seconds between the writer thread's writes: a server's calls go in batches."""
BATCH = 512
"""Records that wake the writer before its period is over."""
IDLE_PERIODS = 30
"""Periods without a record after which the writer thread ends (the next record starts one)."""
MAX_PENDING = 100_000
"""Records held while writes fail or lag; past this, new ones are dropped (and counted)."""
RETRY_AFTER = 60.0
"""Seconds after a failed write during which records are dropped; the next one is tried.
A full disk freed, a lock let go: a server's history was off until it restarted."""

Warn = Callable[[str], None]


class Journal:
    """Records waiting to be written to one history file."""

    def __init__(self, path: Path, max_calls: int, max_days: float) -> None:
        self.path = path
        self.max_calls, self.max_days = max_calls, max_days
        self.warn: Warn | None = None
        self.failure: str | None = None
        self._reason = ""
        self._failed_at = 0.0
        self._retrying = False
        self._reported = False
        self._pending: list[CallRecord] = []
        # re-entrant: a signal handler that flushes may interrupt this very thread
        self._lock = threading.RLock()  # the pending list
        self._writing = threading.RLock()  # the connection: one write at a time
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._db: sqlite3.Connection | None = None
        self.dropped = 0
        self.in_write = 0
        """Records of the write under way (a signal ending it loses them)."""

    def add(self, record: CallRecord) -> None:
        """Queue one record (never blocks on I/O, never raises)."""
        with self._lock:
            if self.failure is not None and time.monotonic() - self._failed_at >= RETRY_AFTER:
                self.failure, self._retrying = None, True  # this record is the next try
            if self.failure is not None or len(self._pending) >= MAX_PENDING:
                self.dropped += 1
                return
            self._pending.append(record)
            waiting = len(self._pending)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="toolctl-history", daemon=True
                )
                self._thread.start()
        if waiting >= BATCH:
            self._wake.set()

    def flush(self) -> None:
        """Write every record queued so far (on the caller's thread)."""
        with self._writing:
            with self._lock:
                batch, self._pending = self._pending, []
            if not batch or self.failure is not None:
                return
            try:
                from toolctl.records import history

                self.in_write = len(batch)
                if self._db is None:
                    self._db = history.open_for_writing(self.path)
                pruned = history.append(
                    self._db, batch, max_calls=self.max_calls, max_days=self.max_days
                )
                self.in_write = 0
            except (sqlite3.Error, OSError) as exc:
                self.in_write = 0
                self._fail(exc, len(batch))
                return
            if self._retrying:
                self._recovered()
            if pruned:
                defer_warning(
                    f"the run history keeps {self.max_calls:,} calls of {self.max_days:g} days "
                    f"at most (TOOLCTL_HISTORY_MAX_CALLS, _MAX_DAYS): at least {pruned:,} older "
                    "calls were removed from it"
                )

    def close(self) -> None:
        """Write what is queued and close the file (the writer thread ends by itself)."""
        self.flush()
        with self._writing:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _fail(self, exc: BaseException, lost: int) -> None:
        # an OSError in its own words, not "[Errno 17] File exists: '...'"
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        if self._db is not None:  # (under _writing) the next try opens the file afresh
            self._db.close()
            self._db = None
        with self._lock:
            self.failure = f"the run history at {self.path} cannot be written ({reason})"
            self._reason = reason
            self._failed_at, self._retrying = time.monotonic(), False
            self.dropped += lost + len(self._pending)  # the failed batch, and those queued
            self._pending.clear()
        if self.warn is not None:
            self.report(self.warn)

    def _recovered(self) -> None:
        """A try after a failure wrote: said, with the failure (told or not yet) and the
        records lost meanwhile; a later failure is reported again."""
        with self._lock:
            lost, self.dropped = self.dropped, 0
            self._reported = self._retrying = False
            message = (
                f"the run history at {self.path} is written again; it could not be "
                f"({self._reason}), and {lost:,} call record(s) were lost meanwhile"
            )
        if self.warn is not None:
            self.warn(message)
        else:
            defer_warning(message)

    def report(self, warn: Warn) -> None:
        """Tell ``warn`` of the failure, or of records dropped for want of room (more than
        MAX_PENDING waiting), once per process, with every record lost until then: it
        counted the failed batch alone (31 lost, said of 1,385)."""
        with self._lock:
            if self._reported or (self.failure is None and not self.dropped):
                return
            self._reported = True
            why = self.failure or f"the run history at {self.path} could not keep up"
            message = (
                f"{why}; {self.dropped:,} call record(s) lost, the calls themselves went on; "
                "TOOLCTL_HISTORY=0 turns the history off"
            )
        warn(message)

    def _run(self) -> None:
        idle = 0
        while self.failure is None and idle < IDLE_PERIODS:
            self._wake.wait(PERIOD)
            self._wake.clear()
            with self._lock:
                idle = 0 if self._pending else idle + 1
            self.flush()
        with self._lock:  # the next record starts a new thread
            self._thread = None
            if self._pending:  # one came in as this thread decided to end
                self._wake.set()
                self._thread = threading.Thread(
                    target=self._run, name="toolctl-history", daemon=True
                )
                self._thread.start()


_deferred: list[str] = []
"""Warnings of this process's records that nobody was there to hear yet (flush_all tells)."""


def defer_warning(message: str) -> None:
    """Keep ``message`` for the next ``flush_all`` that has someone to tell."""
    if message not in _deferred:
        _deferred.append(message)


_journals: dict[Path, Journal] = {}
_journals_lock = threading.Lock()


def journal_for(settings: Settings, warn: Warn | None = None) -> Journal | None:
    """This process's journal of the settings' history, or None when the history is off."""
    options = settings.records
    if not options.history:
        return None
    from toolctl.records.history import history_path

    path = history_path(settings.state_dir)
    with _journals_lock:
        journal = _journals.get(path)
        if journal is None:
            if not _journals:  # a library user's process: write what is left at exit
                import atexit

                atexit.register(flush_all)
            journal = _journals[path] = Journal(path, options.max_calls, options.max_days)
    if warn is not None:
        journal.warn = warn
    return journal


def unwritten() -> int:
    """Records not in their history file yet: queued, or in the write under way (read
    from a signal handler: no lock taken)."""
    return sum(len(j._pending) + j.in_write for j in list(_journals.values()))


def flush_all(warn: Warn | None = None) -> None:
    """Write every journal's queued records; ``warn`` hears of a history that failed."""
    with _journals_lock:
        journals = list(_journals.values())
    for journal in journals:
        journal.flush()
        if warn is not None:
            journal.report(warn)
    while warn is not None and _deferred:
        warn(_deferred.pop(0))
