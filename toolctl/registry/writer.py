"""Registry writes: `register` and `unregister`, atomic and safe with many writers.

Every write holds an exclusive lock on ``<registry dir>/.toolctl.lock`` while it checks the
name against the whole search path and writes. An entry goes to
``<dir>/<kind>s/<name>.toml`` through a temporary file, fsync and a no-clobber link, so a
crash leaves either the old registry or the new one, plus at worst a hidden ``.tmp`` file
that the next writer removes. The lock file itself stays (it is empty and hidden).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolctl.errors import NameConflict, NotFound, RegistryError, UsageError
from toolctl.names import fold
from toolctl.registry.index import Registry
from toolctl.registry.loader import Definition, parse_file
from toolctl.settings import Settings

LOCK_NAME = ".toolctl.lock"


@dataclass(frozen=True)
class Entry:
    """A descriptor about to be written: its validated definition and its raw table."""

    definition: Definition
    table: dict[str, Any]


@dataclass(frozen=True)
class Written:
    kind: str
    name: str
    path: Path


def register_files(files: Sequence[Path], settings: Settings) -> list[Written]:
    """`toolctl register`: every entry of ``files`` written, or none (see ``register``)."""
    from toolctl.registry import require_directories

    require_directories(settings)  # a --registry typo must not become a new registry
    return register(read_entries(files), settings)


def read_entries(files: Sequence[Path]) -> list[Entry]:
    """Validate descriptor files; any problem refuses the whole batch, listing every one."""
    entries: list[Entry] = []
    problems: list[str] = []
    for file in files:
        if not file.is_file():
            raise UsageError(f"no such descriptor file: {file}")
        parsed = parse_file(str(file))
        problems += [f"{p.file}:{p.line}: {p.message}" for p in parsed.problems]
        counters: dict[str, int] = {}
        for definition in parsed.definitions:
            position = counters.get(definition.kind, 0)
            counters[definition.kind] = position + 1
            # Any problem refuses the batch, so valid entries line up with the raw tables.
            entries.append(Entry(definition, parsed.raw[definition.kind][position]))
    if problems:
        raise RegistryError(
            f"{len(problems)} problem(s) in the descriptors; nothing was registered",
            details=problems,
        )
    return entries


def target_directory(settings: Settings) -> Path:
    """The first writable directory on the search path (created if its parent allows)."""
    for directory in settings.search_path:
        if directory.is_dir() and os.access(directory, os.W_OK | os.X_OK):
            return directory
        if not directory.exists() and os.access(_existing_parent(directory), os.W_OK):
            return directory
    raise RegistryError(
        "no writable registry directory on the search path",
        hint="pass --registry DIR or set TOOLCTL_REGISTRY",
    )


def _existing_parent(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def register(entries: Sequence[Entry], settings: Settings) -> list[Written]:
    """Write every entry, or none of them if any name is taken or any target is unusable."""
    target = target_directory(settings)
    with locked(target):
        registry = Registry.open(settings, full=True)
        _refuse_conflicts(entries, registry)
        plan = [_plan(target, entry) for entry in entries]
        written: list[Written] = []
        try:
            for entry, path in plan:
                written.append(_write(entry, path))
        except OSError as exc:
            for done in written:  # all or nothing: take back what this batch wrote
                done.path.unlink(missing_ok=True)
            raise RegistryError(
                f"cannot write {exc.filename or target}: {exc.strerror or exc}; "
                "nothing was registered"
            ) from None
        return written


def _refuse_conflicts(entries: Sequence[Entry], registry: Registry) -> None:
    seen: dict[tuple[str, str], Definition] = {}
    for entry in entries:
        new = entry.definition
        taken = registry.definitions(new.kind, new.name)
        if taken:
            holder = taken[0]
            raise NameConflict(
                f"{new.kind} '{new.name}' is already defined in {holder.file}:{holder.line}",
                hint="first definition wins; pick another name",
            )
        similar = registry.confusable_with(new.kind, new.name)
        if similar is not None:
            raise NameConflict(
                f"{new.kind} '{new.name}' is confusable with '{similar.name}' "
                f"defined in {similar.file}:{similar.line}",
                hint="names equal up to case and - _ . are refused",
            )
        earlier = seen.setdefault((new.kind, fold(new.name)), new)
        if earlier is not new:
            raise NameConflict(
                f"{new.kind} '{new.name}' ({new.file}:{new.line}) clashes with "
                f"'{earlier.name}' ({earlier.file}:{earlier.line}) in the same batch"
            )


def _plan(target: Path, entry: Entry) -> tuple[Entry, Path]:
    """Where an entry goes; refuses (before anything is written) what cannot be written."""
    kind, name = entry.definition.kind, entry.definition.name
    directory = target / f"{kind}s"
    if os.path.lexists(directory) and not directory.is_dir():
        raise RegistryError(
            f"cannot register {kind} '{name}': {directory} is not a directory",
            hint="move it away; nothing was registered",
        )
    path = directory / f"{name}.toml"
    if path.is_symlink() and not path.exists():
        raise RegistryError(
            f"cannot register {kind} '{name}': {path} is a dangling symlink",
            hint="remove it; nothing was registered",
        )
    return entry, _free_path(directory, name)


def _write(entry: Entry, path: Path) -> Written:
    import tomli_w

    kind, name = entry.definition.kind, entry.definition.name
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    content = tomli_w.dumps({kind: [entry.table]}).encode()
    temporary = directory / f".{name}.{os.getpid()}.tmp"
    try:
        with open(temporary, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(temporary, path)  # never replaces a file, even one written by hand
    finally:
        temporary.unlink(missing_ok=True)
    _fsync_directory(directory)
    return Written(kind, name, path)


def _free_path(directory: Path, name: str) -> Path:
    path = directory / f"{name}.toml"
    counter = 2
    while os.path.lexists(path):
        path = directory / f"{name}~{counter}.toml"
        counter += 1
    return path


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def unregister(kind: str, name: str, settings: Settings) -> tuple[Definition, Definition | None]:
    """Remove the file that defines (kind, name); returns it and the definition now in force.

    Only a file holding that one entry is removed: a file with other entries is refused
    rather than rewritten, because rewriting TOML would drop its comments and layout.
    """
    registry = Registry.open(settings, full=True)
    winner = registry.resolve(kind, name)
    root = _root_of(Path(winner.file), settings)
    with locked(root):
        registry = Registry.open(settings, full=True)
        found = registry.definitions(kind, name)
        if not found:
            raise NotFound(kind, name)
        winner = found[0]
        parsed = parse_file(winner.file)
        others = sum(len(tables) for tables in parsed.raw.values()) - 1
        if others or parsed.problems:
            raise RegistryError(
                f"{winner.file} defines {others} other entr{'y' if others == 1 else 'ies'} "
                f"besides {kind} '{name}'",
                hint="remove it from that file by hand",
            )
        os.unlink(winner.file)
        _fsync_directory(Path(winner.file).parent)
    return winner, (found[1] if len(found) > 1 else None)


def _root_of(file: Path, settings: Settings) -> Path:
    for root in settings.search_path:
        if file.is_relative_to(root):
            if not os.access(file.parent, os.W_OK):
                break
            return root
    raise RegistryError(f"{file} is not in a writable registry directory")


@contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold the registry directory's write lock; stale temporary files go once we have it."""
    directory.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        for stale in [*directory.glob(".*.tmp"), *directory.glob("*/.*.tmp")]:
            stale.unlink(missing_ok=True)
        yield
    finally:
        os.close(descriptor)
