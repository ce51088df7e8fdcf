"""The index file: where it lives, its tables, opening it, and publishing a new one.

A cache file is never changed once it is in place: every build, and every re-index of a
few files, writes a new file beside it and renames it over the old one. A process reading
the old file keeps a consistent index, two processes building at once each publish a whole
one, and a re-index may start from a plain copy.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import zlib
from pathlib import Path

from toolctl.errors import RegistryError
from toolctl.settings import Settings

CACHE_FORMAT = "18"  # 2: confusables quarantined, nan/inf and deep nesting refused; 3: delivery;
# 4: precedence keys, references and attached problems, for a re-index of a few files;
# 5: a service's state, [service.mcp] transport, idle_timeout, tool lists and tool_timeout;
# 6: [[trust]] tables; a search path may end in the announcements' directory (its name is a
# digest of where they are read), so reading them or not is two caches; 7: a url is
# checked whole (its port, brackets and host), so a cached definition may no longer load;
# 8: a $ref that never descends is refused, and what is wrong with a name said in words;
# 9: a header that cannot be sent (a CR/LF, a bad name) is refused where it is written
# 10: an argument's `items` (an array's item type), which a cached error refused
# 11: a finding points at the line of its key (timeout, arguments.0.type), not the header
# 12: files and directories are compared by their stamp (mtime and ctime), not the mtime
# 13: max_output takes a size ("1MiB"), which a cached error refused
# 14: a file starting with a UTF-8 BOM is read (it was a cached syntax error)
# 15: lint findings at the line of what they are about (service, an edge, a group's tools)
# 16: lines counted as TOML counts them (LF only; no header inside a multi-line string)
# 17: a file holding bidi controls or TAG characters is warned about (loader.HIDDEN)
# 18: [tool.mcp] output_schema (an MCP tool's outputSchema), which a cached error refused
RACY_NS = 2_000_000_000
"""A time recorded this close to the scan that read it is not trusted (see ``index``)."""


def stable(mtime_ns: int, stamp: int | None, started: int) -> int | None:
    """What the cache keeps of a file or directory: its ``stamp`` (``loader.stamp``), or
    None when its mtime is too close to the scan (``started``) to be trusted."""
    return None if mtime_ns > started - RACY_NS else stamp


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
an action's tools and next actions, a group's tools); a lint finding keeps the ``def`` it
is on, a parse finding has none. ``seq`` orders the findings of one file and line."""

TABLES = frozenset(statement.strip() for statement in SCHEMA.split(";") if statement.strip())
"""The tables of a cache as SQLite keeps their definitions (another is rebuilt)."""

INDEXES = """
CREATE INDEX defs_by_name ON defs(kind, name, seq);
CREATE INDEX defs_by_folded ON defs(kind, folded, seq);
CREATE INDEX defs_by_file ON defs(file);
CREATE INDEX refs_by_target ON refs(kind, name);
CREATE INDEX refs_by_def ON refs(def);
CREATE INDEX problems_by_file ON problems(file);
CREATE INDEX problems_by_def ON problems(def);
"""  # made after the rows are in: one sort each instead of a b-tree insert per row


def path_key(settings: Settings) -> str:
    """What a cache file is for: its format and the search path, stored in ``meta.key``."""
    return "\0".join([CACHE_FORMAT, *map(str, settings.search_path)])


def cache_path(settings: Settings) -> Path:
    """One cache per search path; `meta.key` holds the path itself against crc collisions."""
    digest = zlib.crc32(path_key(settings).encode()) ^ len(settings.search_path) << 32
    return settings.cache_dir / f"registry-{digest:012x}.sqlite3"


def connect(path: Path, key: str) -> sqlite3.Connection | None:
    """The published cache at ``path`` opened read-only, or None if it is missing, broken
    or for another search path (``key``)."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        tables = {row[0] for row in db.execute("SELECT sql FROM sqlite_master WHERE type='table'")}
        if tables != TABLES or db.execute(
            "SELECT value FROM meta WHERE key = 'key'"
        ).fetchone() != (key,):  # a table dropped or altered: every command was exit 70
            db.close()
            return None
        return db
    except sqlite3.Error:
        return None


def publish(
    target: sqlite3.Connection, temporary: Path | None, path: Path | None, key: str
) -> sqlite3.Connection:
    """Rename a finished temporary over the cache and open it read-only."""
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
    remove_unused_caches(path.parent, keep=path)
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
UNUSED_AFTER_S = 30 * 86400
"""A search path's cache not rebuilt for this long is removed when another one is built
(one cache per search path: every `-r DIR` ever given leaves one). A removed cache that
was still in use is only rebuilt, once."""


def remove_unused_caches(directory: Path, keep: Path) -> None:
    """Remove the caches of other search paths not rebuilt for UNUSED_AFTER_S."""
    for cache in directory.glob("registry-*.sqlite3"):
        try:
            if cache != keep and time.time() - cache.stat().st_mtime > UNUSED_AFTER_S:
                cache.unlink()
        except OSError:
            continue  # gone already, or not ours to remove


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
