"""The run history file: rows in and out, bounds, many writers at once, a writer killed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from toolctl.records import history
from toolctl.records.history import CallRecord, Filter
from toolctl.records.journal import Journal, flush_all, journal_for
from toolctl.settings import Settings


def record(tool: str = "echo", when: float = 1_000_000.0, **fields: object) -> CallRecord:
    base = CallRecord(when, tool, "local", "cli", None, "ok", 0, 12.5)
    return base._replace(**fields)  # type: ignore[arg-type]


def test_rows_come_back_newest_first_and_filtered(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    rows = [
        record("a", 10.0),
        record("b", 20.0, outcome="failed", exit_code=1, caller="serve"),
        record("a", 30.0, session="s1", trace_id="ab" * 16),
    ]
    assert history.write(path, rows, max_calls=100, max_days=1e6) == 3
    db = history.open_for_reading(path)
    assert db is not None
    assert [r.time for r in history.recent(db, Filter(), 10)] == [30.0, 20.0, 10.0]
    assert history.recent(db, Filter(tool="a"), 1) == [rows[2]]
    assert history.recent(db, Filter(outcome="failed"), 10) == [rows[1]]
    assert history.recent(db, Filter(caller="serve", since=15.0, until=25.0), 10) == [rows[1]]
    assert history.recent(db, Filter(session="s1"), 10) == [rows[2]]
    assert rows[2].to_json()["trace_id"] == "ab" * 16 and "arguments" not in rows[2].to_json()
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_no_history_file_reads_as_no_calls(tmp_path: Path) -> None:
    assert history.open_for_reading(tmp_path / "none.sqlite3") is None
    assert not (tmp_path / "none.sqlite3").exists()


def test_the_count_bound_keeps_the_newest(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    for start in range(0, 300, 7):  # batches that cross the pruning points at odd places
        batch = [record("t", float(n)) for n in range(start, min(start + 7, 300))]
        history.write(path, batch, max_calls=50, max_days=1e6)
    db = history.open_for_reading(path)
    assert db is not None
    kept = [r.time for r in history.recent(db, Filter(), 1000)]
    assert 50 <= len(kept) <= 55  # pruned every 5 rows: never more than 1.1x the bound
    assert kept[0] == 299.0 and kept == sorted(kept, reverse=True)
    assert min(kept) >= 300 - len(kept)


def test_the_age_bound_drops_old_calls(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    now = time.time()
    old = [record("old", now - 40 * 86400) for _ in range(9)]
    db = history.open_for_writing(path)
    history.append(db, old, max_calls=100, max_days=30, now=now)
    history.append(db, [record("new", now)], max_calls=100, max_days=30, now=now)  # 10th row
    assert history.count(db) == 1 and history.recent(db, Filter(), 5)[0].tool == "new"


WRITER = """
import sys, time
from pathlib import Path

import pytest
from toolctl.records.history import CallRecord
from toolctl.records.journal import Journal
path, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
journal = Journal(path, 1_000_000, 365.0)
for n in range(count):
    journal.add(CallRecord(time.time(), name, "local", "cli", None, "ok", 0, float(n)))
    if n % 25 == 24:
        journal.flush()  # many short transactions, interleaved with the other writers
journal.close()
assert journal.failure is None, journal.failure
"""


def test_eight_processes_write_at_once(tmp_path: Path) -> None:
    path = tmp_path / "state" / "history.sqlite3"
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{n}", "250"])
        for n in range(8)
    ]
    assert [w.wait(timeout=120) for w in writers] == [0] * 8
    db = history.open_for_reading(path)
    assert db is not None
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    per_writer = dict(db.execute("SELECT tool, count(*) FROM calls GROUP BY tool").fetchall())
    assert per_writer == {f"w{n}": 250 for n in range(8)}


KILLED = """
import sys, time
from pathlib import Path

import pytest
from toolctl.records import history
from toolctl.records.history import CallRecord
db = history.open_for_writing(Path(sys.argv[1]))
batch = 0
while True:  # big transactions: a SIGKILL lands inside one most of the time
    rows = [CallRecord(time.time(), f"b{batch}", "local", "cli", None, "ok", 0, 1.0,
                       output="x" * 2000) for _ in range(200)]
    history.append(db, rows, max_calls=10_000_000, max_days=365.0)
    batch += 1
"""


def test_a_writer_killed_mid_write_leaves_whole_batches(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    writer = subprocess.Popen([sys.executable, "-c", KILLED, str(path)])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            db = history.open_for_reading(path) if path.exists() else None
            rows = history.count(db) if db is not None else 0
            if db is not None:
                db.close()
            if rows >= 1000:
                break
            time.sleep(0.05)
        os.kill(writer.pid, signal.SIGKILL)
    finally:
        writer.kill()
        writer.wait()
    db = history.open_for_writing(path)  # recovers the log the killed writer left
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    sizes = db.execute("SELECT count(*) FROM calls GROUP BY tool").fetchall()
    assert sizes and {n for (n,) in sizes} == {200}  # each batch whole or absent
    history.append(db, [record("after")], max_calls=10_000_000, max_days=365.0)
    assert history.recent(db, Filter(tool="after"), 1)[0].tool == "after"


def test_a_reader_during_the_first_write_never_takes_the_history_for_another_programs(
    tmp_path: Path,
) -> None:
    """`toolctl history` while the first call ever creates the file: the version and the
    tables were read in two snapshots, the creation committed between them, and the new
    history was "another program's database" (about a third of the rounds, before)."""
    for n in range(100):
        path = tmp_path / f"history-{n}.sqlite3"
        path.touch()  # there, empty: as the writer leaves it before its schema commits
        created = threading.Event()

        def create(path: Path = path, created: threading.Event = created) -> None:
            history.open_for_writing(path).close()
            created.set()

        writer = threading.Thread(target=create)
        writer.start()
        try:
            while not created.is_set():
                db = history.open_for_reading(path)  # HistoryUnusable fails the test
                if db is not None:
                    db.close()
        finally:
            writer.join()


def test_a_history_that_cannot_be_written_warns_once(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    path.mkdir()  # a directory where the file belongs: SQLite cannot open it
    journal = Journal(path, 100, 30.0)
    warnings: list[str] = []
    journal.warn = warnings.append
    for _ in range(3):
        journal.add(record())
        journal.flush()
    assert len(warnings) == 1 and "cannot be written" in warnings[0]
    assert "TOOLCTL_HISTORY=0" in warnings[0] and journal.dropped == 3


def test_the_warning_told_at_the_end_counts_every_record_lost(tmp_path: Path) -> None:
    """A command tells the failure once its output is out: it counted the batch that failed
    alone ("31 call record(s) lost" of 1,385), not those queued then or dropped after."""
    path = tmp_path / "history.sqlite3"
    path.mkdir()
    journal = Journal(path, 100, 30.0)
    for _ in range(5):
        journal.add(record())
    journal.flush()  # fails: the five are lost
    for _ in range(7):
        journal.add(record())  # dropped: the history is known broken
    told: list[str] = []
    journal.report(told.append)
    journal.report(told.append)
    assert len(told) == 1 and "; 12 call record(s) lost, the calls themselves went on" in told[0]


def test_the_writer_thread_writes_without_a_flush(tmp_path: Path) -> None:
    settings = Settings.load(environ={"XDG_STATE_HOME": str(tmp_path), "HOME": str(tmp_path)})
    journal = journal_for(settings)
    assert journal is not None
    journal.add(record("threaded"))
    deadline = time.monotonic() + 30
    path = tmp_path / "toolctl" / "history.sqlite3"
    while time.monotonic() < deadline:
        try:
            db = history.open_for_reading(path)
            if db is not None and history.count(db, Filter(tool="threaded")):
                break
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    else:
        raise AssertionError("the writer thread wrote nothing")
    flush_all()


def test_history_off_gives_no_journal(tmp_path: Path) -> None:
    settings = Settings.load(environ={"HOME": str(tmp_path), "TOOLCTL_HISTORY": "0"})
    assert journal_for(settings) is None


def test_a_history_sqlite_cannot_open_says_what_may_be_wrong(tmp_path: Path) -> None:
    """ "unable to open database file" (a read-only directory: a history in WAL mode is read
    with a file written beside it; a full disk) named neither cause nor way out."""
    import sqlite3

    from toolctl.records.history import unusable

    path = tmp_path / "gone" / "history.sqlite3"
    try:
        sqlite3.connect(f"file:{path}?mode=ro", uri=True).execute("SELECT 1")
    except sqlite3.OperationalError as exc:
        told = unusable(path, exc)
    else:
        raise AssertionError("SQLite opened a file that is not there")
    assert "unable to open database file" in str(told)
    assert told.hint is not None and "read-only or full" in told.hint
    assert "XDG_STATE_HOME" in told.hint and told.exit_code == 74


def test_a_history_that_failed_is_tried_again_and_says_it_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One failed write turned a server's history off until it restarted: a full disk
    freed, a lock let go, and nothing more was recorded. After RETRY_AFTER seconds the
    next record is tried; written, the loss is told, and a later failure is told again."""
    from toolctl.records import journal as journals

    monkeypatch.setattr(journals, "RETRY_AFTER", 0.2)
    path = tmp_path / "history.sqlite3"
    path.mkdir()  # a directory where the file belongs: it cannot be written
    journal = Journal(path, 100, 30.0)
    told: list[str] = []
    journal.warn = told.append
    journal.add(record("first"))
    journal.flush()
    journal.add(record("dropped"))  # within RETRY_AFTER: dropped, not tried
    assert len(told) == 1 and "cannot be written" in told[0]
    path.rmdir()  # the cause is gone
    time.sleep(0.3)
    journal.add(record("again", when=time.time()))
    journal.flush()
    journal.close()
    assert len(told) == 2, told
    assert told[1].endswith(
        "is written again; it could not be (it is not a regular file), and 2 call record(s) "
        "were lost meanwhile"
    ), told[1]
    db = history.open_for_reading(path)
    assert db is not None
    assert [row[0] for row in db.execute("SELECT tool FROM calls")] == ["again"]
    db.close()
    path.unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.mkdir()  # broken once more: told once more
    journal.add(record("later"))
    journal.flush()
    assert len(told) == 3 and "cannot be written" in told[2], told
