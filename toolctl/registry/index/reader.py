"""Read access to the index (``Registry``), and keeping it fresh: what is looked at before
a lookup trusts the cache, and what is rebuilt when it cannot.

Freshness (a deliberate deviation from "stat every file on every call", which alone costs
~40 ms per 10,000 files): commands that touch a single name (``show``, ``run``) compare the
mtime of every *directory* of the registry, which changes whenever a file is added, removed
or renamed (editors and toolctl's own writer save by rename), then stat the files that
define the name they resolve, so an in-place edit of that tool is seen too. When at most
EARLIER_FILES files come before the first of those on the search path (a project's
registry ahead of the user's, say), those are statted as well: an in-place edit that
gives one of them the name, or a look-alike of it, is seen and that definition wins.
Beyond that, only a command that reads everything sees such an edit. Commands that
read everything (``list``, ``check``, ``register``) stat every file. Anything recorded
within two seconds of the scan is treated as unknown next time ("racy", as git calls it),
because a coarse filesystem clock can give two quick writes the same mtime.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from toolctl.errors import NameConflict, NotFound, RegistryError, UsageError
from toolctl.findings import Finding
from toolctl.names import KINDS, fold
from toolctl.registry.index.database import cache_path, connect, path_key, stable
from toolctl.registry.loader import Definition, FileStat, stamp, walk
from toolctl.settings import Settings

if TYPE_CHECKING:
    from toolctl.reporting import Reporter


EARLIER_FILES = 256
"""How many files ahead of a name's a single-name lookup stats at most (256: ~3 ms here)."""


COMPLETE_FOR = 1.0
"""Seconds a sweep of every file answers for a name found nowhere (``Registry._stale``)."""


class _Closed:
    """A closed Registry's database: every lookup says so, as a closed Caller does."""

    def execute(self, *args: object) -> Any:
        raise RuntimeError("this Registry is closed; open another")

    def close(self) -> None:
        pass


class Registry:
    """Read access to the index: lookups by name, the winners of a kind, the problems."""

    def __init__(self, db: sqlite3.Connection, settings: Settings, *, complete: bool) -> None:
        self._db = db
        self._retired: list[sqlite3.Connection] = []
        self.settings = settings
        self.strictly_usable = False
        """`registry.check.ensure_strictly_usable` found nothing to refuse (asked once)."""
        # when every file was last statted (nothing could hide from a lookup then); None:
        # not since it was opened
        self._complete_at = time.monotonic() if complete else None
        self._opened_at = time.monotonic()

    @classmethod
    def open(
        cls, settings: Settings, *, full: bool = False, reporter: Reporter | None = None
    ) -> Registry:
        """Open the index, rebuilding what changed. ``full`` stats every file first;
        ``reporter`` is told of a (re)build, a wait of seconds on a large registry."""
        path = cache_path(settings)
        db = connect(path, path_key(settings))
        if db is not None and not full and _dirs_unchanged(db):
            return cls(db, settings, complete=False)
        return cls(_refresh(path, db, settings, reporter=reporter), settings, complete=True)

    def close(self) -> None:
        """Close the index's database (a Registry is also a context manager); a lookup
        after it is an error."""
        for db in (*self._retired, self._db):
            db.close()
        self._retired = []
        self._db = cast(sqlite3.Connection, _Closed())  # not sqlite3's ProgrammingError

    def _swap(self, fresh: sqlite3.Connection) -> None:
        """Read ``fresh`` (a re-index) from now on. The connection it replaces is closed
        one swap later (a lookup on another thread may still be reading it): left to the
        garbage collector, each held a file descriptor on a deleted file, 200 of them in a
        loop of edits, unbounded where the collector is off."""
        if fresh is self._db:
            return
        for old in self._retired:
            old.close()
        self._retired, self._db = [self._db], fresh

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- lookups -----------------------------------------------------------------------

    def definitions(self, kind: str, name: str) -> list[Definition]:
        """Every definition of (kind, name): the winner first, then what it shadows."""
        return self.find(name, (kind,))

    def find(self, name: str, kinds: Sequence[str] = KINDS) -> list[Definition]:
        """Every definition named ``name`` in any of ``kinds``, in precedence order.

        The files that define the name are statted, and the files before the first of them
        when they are few (see the module docstring); a name not found at all makes every
        file statted (an in-place edit may have added it) before it is called missing.
        """
        where = f"WHERE name = ? AND kind IN ({', '.join('?' * len(kinds))}) ORDER BY seq"
        rows = self._query(where, (name, *kinds))
        files = {r.file for r in rows} | (self._files_before(rows[0].file) if rows else set())
        if rows and not self._files_unchanged(files):
            self._swap(_refresh(cache_path(self.settings), self._db, self.settings, only=files))
            rows = self._query(where, (name, *kinds))
        if not rows and self._stale():
            self._swap(_refresh(cache_path(self.settings), self._db, self.settings))
            self._complete_at = time.monotonic()
            rows = self._query(where, (name, *kinds))
        return rows

    def _current(self) -> None:
        """For a Registry held open (an agent, a server): what every file says now, at most
        once a COMPLETE_FOR (a walk that stats every file). A listing of winners read the
        index as it was: a tool another process added was never offered (an agent cannot
        look up a name it was never shown), an edit only one listing late. A command reads
        its registry within that second of opening it, and pays nothing."""
        now = time.monotonic()
        if now - self._opened_at < COMPLETE_FOR:
            return
        if self._complete_at is not None and now - self._complete_at < COMPLETE_FOR:
            return
        self._swap(_refresh(cache_path(self.settings), self._db, self.settings))
        self._complete_at = time.monotonic()

    def _stale(self) -> bool:
        """Whether a name found nowhere is worth statting every file for: not since this
        Registry was opened, or not for ``COMPLETE_FOR`` seconds (one held by a server or
        an agent sees a file restored in place; a stream of unknown names costs one sweep
        a second at most)."""
        done = self._complete_at
        return done is None or time.monotonic() - done >= COMPLETE_FOR

    def resolve(self, kind: str, name: str) -> Definition:
        """The definition in force for (kind, name), or NotFound with close matches."""
        named(kind, name)
        found = self.definitions(kind, name)
        if not found:
            raise self.not_found(kind, name)
        holder = self.confusable_with(kind, name)
        if holder is not None:  # only the holder of a folded name is in force
            raise NameConflict(
                f"{kind} '{name}' ({found[0].file}:{found[0].line}) is confusable with "
                f"'{holder.name}' defined earlier in {holder.file}:{holder.line}, so it is "
                "quarantined",
                hint=f"rename one of them, or remove this one (toolctl unregister {kind} {name})",
            )
        return found[0]

    def not_found(self, kind: str, name: str) -> NotFound:
        """The error for a name nothing defines: close matches, and where toolctl looked."""
        searched = self.settings.search_path
        error = NotFound(kind, name, self.suggest(kind, name), searched=searched)
        other = next((d.kind for d in self.find(name) if d.kind != kind), None)
        if other is not None:  # `run joke-service`: a service of that name
            error.hint = f"'{name}' is a{'n' if other[0] in 'aeiou' else ''} {other}, not a {kind}"
            if (kind, other) == ("service", "tool"):
                error.hint += (
                    f": it runs by name (toolctl run {name}); "
                    f"'toolctl worker --tool {name}' hosts one tool on Pulsar"
                )
            return error
        here = Path(os.path.abspath("registry"))
        if self.settings.project is None and here not in searched and here.is_dir():
            # ./registry was read by default before projects: say how to read it again
            error.hint = f"{error.hint}; ./registry is read in a project: `toolctl init` makes one"
        return error

    def suggest(self, kind: str, name: str, limit: int = 3) -> list[str]:
        import difflib

        same = self._query("WHERE kind = ? AND folded = ? AND winner = 1", (kind, fold(name)))
        names = [
            r[0]
            for r in self._db.execute(
                "SELECT name FROM defs WHERE kind = ? AND winner = 1", (kind,)
            )
        ]
        close = difflib.get_close_matches(name, names, n=limit, cutoff=0.6)
        return list(dict.fromkeys([d.name for d in same] + close))[:limit]

    def by_function_name(self, name: str) -> Definition | None:
        """The tool in force whose function name (``names.function_name``: what an OpenAI
        export calls it) is ``name``, so a model's function call resolves; else None."""
        from toolctl.names import function_name

        holder = self.confusable_with("tool", name)
        if holder is not None and holder.name != name and function_name(holder.name) == name:
            return holder
        return None

    def confusable_with(self, kind: str, name: str) -> Definition | None:
        """A winning definition whose name a reader could mistake for ``name``."""
        for definition in self._query(
            "WHERE kind = ? AND folded = ? AND winner = 1 ORDER BY seq", (kind, fold(name))
        ):
            if definition.name != name:
                return definition
        return None

    def runtimes_in_force(self) -> set[str]:
        """The runtimes the tools in force run on (a plugin's among them)."""
        rows = self._db.execute(
            "SELECT DISTINCT runtime FROM defs WHERE kind = 'tool' AND winner = 1"
        )
        return {str(runtime) for (runtime,) in rows if runtime}

    def referrers(self, kind: str, name: str) -> list[Definition]:
        """The definitions in force that name (kind, name): a tool its service, an action
        its tools and next actions, a group its tools."""
        return self._query(
            "WHERE winner = 1 AND id IN (SELECT def FROM refs WHERE kind = ? AND name = ?) "
            "ORDER BY kind, name",
            (kind, name),
        )

    def winners(self, kind: str) -> list[Definition]:
        """The definitions in force of one kind, sorted by name."""
        self._current()
        return self._query("WHERE kind = ? AND winner = 1 ORDER BY name", (kind,))

    def iter_winners(self, kind: str) -> Iterator[Definition]:
        """``winners`` one at a time, decoded as they are read: a listing of 100,000 tools
        never holds them all (the (kind, name) index gives the order without a sort)."""
        self._current()
        rows = self._db.execute(
            "SELECT kind, name, file, line, runtime, data FROM defs "
            "WHERE kind = ? AND winner = 1 ORDER BY name",
            (kind,),
        )
        for row in rows:
            yield _definition(*row)

    def iter_winner_fields(
        self, kind: str, fields: Sequence[str], *, strings: bool = False
    ) -> Iterator[tuple[str, str | None, list[Any]]]:
        """``iter_winners`` cut down to (name, runtime, [the values of ``fields``]), None for
        a field the data lacks. SQLite picks the fields out of the stored JSON, so a table
        or an export of 100,000 tools decodes a few values a row, not whole descriptors.
        With ``strings`` (fields whose values are strings), each comes back as SQLite's own
        value: nothing is decoded in Python at all."""
        paths = ["$." + field for field in fields]
        if strings:
            picked = ", ".join(["json_extract(data, ?)"] * len(paths))
        else:  # two paths or more: one JSON array a row
            paths.append("$.name")
            picked = f"json_extract(data, {', '.join('?' * len(paths))})"
        try:
            rows = self._db.execute(
                f"SELECT name, runtime, {picked} "
                "FROM defs WHERE kind = ? AND winner = 1 ORDER BY name",
                (*paths, kind),
            )
        except sqlite3.OperationalError:  # an SQLite built without its JSON functions
            for d in self.iter_winners(kind):
                yield d.name, d.data.get("runtime"), [d.data.get(f) for f in fields]
            return
        if strings:
            for name, runtime, *values in rows:
                yield name, runtime, values
            return
        loads = json.loads
        for name, runtime, values in rows:
            yield name, runtime, loads(values)[:-1]

    # -- findings ----------------------------------------------------------------------

    def findings(self) -> list[Finding]:
        """Every finding, in search-path order of files, then by line."""
        rows = self._db.execute(
            "SELECT p.severity, p.code, p.file, p.line, p.message, p.skipped FROM problems p "
            "LEFT JOIN files f ON f.path = p.file ORDER BY f.seq, p.line, p.seq"
        )
        return [
            Finding(severity, code, file, line, message, bool(skipped))
            for severity, code, file, line, message, skipped in rows
        ]

    def unreadable(self) -> list[tuple[str, str]]:
        """(path, why) of the files and directories the walk left out: a name that is not
        UTF-8, a symlink to nothing."""
        return _unreadable(self._db)

    def skipped(self) -> list[Finding]:
        """Findings that made toolctl skip a file or entry; every command warns about them."""
        return [finding for finding in self.findings() if finding.skipped]

    def counts(self) -> tuple[int, int]:
        """How many files and definitions the index holds."""
        files = self._db.execute("SELECT count(*) FROM files").fetchone()[0]
        defs = self._db.execute("SELECT count(*) FROM defs").fetchone()[0]
        return int(files), int(defs)

    def files(self) -> list[tuple[str, int]]:
        """Every registry file read, with the index of its root on the search path."""
        rows = self._db.execute("SELECT path, root FROM files ORDER BY seq")
        return [(path, int(root)) for path, root in rows]

    def error_count(self, strict: bool) -> int:
        query = "SELECT count(*) FROM problems WHERE severity = 'error'"
        if strict:
            query += f" OR code IN ({', '.join('?' * len(_STRICT_CODES))})"
        return int(self._db.execute(query, _STRICT_CODES if strict else ()).fetchone()[0])

    def ensure_usable(self) -> None:
        """Under --strict, refuse a registry with errors (shadows and text that hides or
        reorders itself count as errors then, as in `check --strict`), saying the first (a
        project's `check` leaves the user registry's out: the message must show what
        refused the command wherever it is)."""
        if self.settings.strict and (count := self.error_count(strict=True)):
            file, line, message = self._db.execute(
                "SELECT p.file, p.line, p.message FROM problems p LEFT JOIN files f"
                " ON f.path = p.file WHERE p.severity = 'error'"
                f" OR p.code IN ({', '.join('?' * len(_STRICT_CODES))})"
                " ORDER BY f.seq, p.line, p.seq LIMIT 1",  # check's order
                _STRICT_CODES,
            ).fetchone()
            refuse_strictly(count, file, line, message)

    # -- internals ---------------------------------------------------------------------

    def _query(self, where: str, params: tuple[Any, ...]) -> list[Definition]:
        rows = self._db.execute(
            f"SELECT kind, name, file, line, runtime, data FROM defs {where}", params
        )
        return [_definition(*row) for row in rows]

    def _files_before(self, file: str) -> set[str]:
        """The registry's files ahead of ``file`` on the search path, if at most
        EARLIER_FILES (else none: statting them all would cost a lookup more than it does)."""
        rows = self._db.execute(
            "SELECT path FROM files WHERE seq < (SELECT seq FROM files WHERE path = ?) LIMIT ?",
            (file, EARLIER_FILES + 1),
        ).fetchall()
        return {path for (path,) in rows} if len(rows) <= EARLIER_FILES else set()

    def _files_unchanged(self, files: Iterable[str]) -> bool:
        for file in files:
            row = self._db.execute(
                "SELECT size, mtime_ns FROM files WHERE path = ?", (file,)
            ).fetchone()
            try:
                st = os.stat(file)
            except OSError:
                return False
            if row is None or row[1] is None or (st.st_size, stamp(st)) != tuple(row):
                return False
        return True

    # -- narrow reads for the toolkit graph ----------------------------------------------

    def check_kind(self, kind: str) -> None:
        """Stat the files that define ``kind`` and refresh the index if one changed.

        For a command that reads a whole kind (``recommend`` may read any action) without
        statting every file of the registry; an in-place edit of such a file is still seen.
        """
        files = [
            f for (f,) in self._db.execute("SELECT DISTINCT file FROM defs WHERE kind = ?", (kind,))
        ]
        if not self._files_unchanged(files):
            self._swap(_refresh(cache_path(self.settings), self._db, self.settings))

    def names_of(self, kind: str) -> set[str]:
        """The names in force of one kind, without decoding any descriptor."""
        rows = self._db.execute("SELECT name FROM defs WHERE kind = ? AND winner = 1", (kind,))
        return {name for (name,) in rows}

    def data_of(self, kind: str, names: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The descriptor data in force of those ``names`` that exist, in batched queries."""
        wanted = list(dict.fromkeys(names))
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(wanted), 500):  # below SQLite's bound-parameter limit
            chunk = wanted[start : start + 500]
            rows = self._db.execute(
                "SELECT kind, name, file, line, runtime, data FROM defs WHERE kind = ? "
                f"AND winner = 1 AND name IN ({', '.join('?' * len(chunk))})",
                (kind, *chunk),
            )
            found.update((row[1], _definition(*row).data) for row in rows)
        return found

    def tool_runtimes(self) -> dict[str, str | None]:
        """Every tool in force and its runtime, without decoding descriptors (cheap at 50,000)."""
        rows = self._db.execute("SELECT name, runtime FROM defs WHERE kind = 'tool' AND winner = 1")
        return {name: runtime for name, runtime in rows}


def _definition(
    kind: str, name: str, file: str, line: int, runtime: str | None, data: str
) -> Definition:
    parsed = json.loads(data)
    if kind == "tool":
        parsed["runtime"] = runtime
    return Definition(kind, name, file, line, parsed)


def _dirs_unchanged(db: sqlite3.Connection) -> bool:
    for path, mtime in db.execute("SELECT path, mtime_ns FROM dirs"):
        if mtime is None:
            return False
        try:
            current = stamp(os.stat(path))
        except OSError:
            current = -1
        if current != mtime:
            return False
    return True


def _refresh(
    path: Path,
    old: sqlite3.Connection | None,
    settings: Settings,
    only: set[str] | None = None,
    *,
    reporter: Reporter | None = None,
) -> sqlite3.Connection:
    """Walk everything; reuse the cache if nothing changed, re-index the files that did
    (``reindex``), or build it all again (``build``). ``only``: re-index just those
    files, taking the rest as the cache has them (a lookup whose directory times say that
    no file was added or removed); a walk if one of them is gone."""
    started = time.time_ns()
    if only is not None and old is not None:
        from toolctl.registry.index.reindex import reindex_only

        fresh = reindex_only(path, path_key(settings), only, started)
        if fresh is not None:
            return fresh
    unreadable: list[str] = []
    files, walked = walk(settings.search_path, unreadable)
    dirs = [(p, stable(mtime, s, started)) for p, mtime, s in walked]
    if old is not None:
        recorded = old.execute("SELECT path, mtime_ns FROM dirs ORDER BY path").fetchall()
        if recorded == sorted(dirs) and _same_files(old, files):
            return old
        from toolctl.registry.index.reindex import reindex

        with _progress(reporter, f"re-indexing the registry ({len(files)} files)…"):
            fresh = reindex(path, path_key(settings), files, dirs, started, unreadable)
        if fresh is not None:
            return fresh
        if _same_files(old, files) and _unreadable(old) == _pairs(unreadable):
            return old  # only directory times moved and the cache cannot be rewritten
    from toolctl.registry.index.build import build

    with _progress(reporter, f"indexing the registry ({len(files)} files)…"):
        return build(path, path_key(settings), files, dirs, started, unreadable)


def _unreadable(db: sqlite3.Connection) -> list[tuple[str, str]]:
    row = db.execute("SELECT value FROM meta WHERE key = 'unreadable'").fetchone()
    return _pairs(row[0].split("\n") if row and row[0] else [])


def _pairs(entries: list[str]) -> list[tuple[str, str]]:
    """The walk's ``PATH\tWHY`` entries as (path, why)."""
    return [(path, why) for path, _, why in (entry.rpartition("\t") for entry in entries)]


def _progress(reporter: Reporter | None, message: str) -> AbstractContextManager[object]:
    return reporter.progress(message) if reporter is not None else nullcontext()


def _same_files(db: sqlite3.Connection, files: list[FileStat]) -> bool:
    cached = db.execute("SELECT path, root, size, mtime_ns FROM files ORDER BY seq").fetchall()
    current = [(f.path, f.root, f.size, f.stamp) for f in files]
    return cached == current


_STRICT_CODES = ("shadow", "hidden")
"""The codes of warnings --strict makes errors in the index (``registry.lint.SHADOW``,
``registry.loader.HIDDEN``; checked by tests/registry/test_strict.py)."""


def refuse_strictly(count: int, file: str, line: int, message: str) -> None:
    """RegistryError: --strict refuses ``count`` problems, the first said."""
    more = f" (and {count - 1} more)" if count > 1 else ""
    raise RegistryError(
        f"--strict is on and the registry has {count} problem(s): {file}:{line}: {message}{more}",
        hint="run 'toolctl check' to see them",
    )


def named(kind: str, name: str) -> None:
    """UsageError for an empty name (`run ''`, a variable that was not set): a mistake on
    the command line, not a name looked up in vain through every file."""
    if not name.strip():
        what = f"{kind} " if kind else ""
        raise UsageError(f"the {what}name is empty", hint="give a name (`toolctl list` lists them)")
