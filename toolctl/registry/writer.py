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
import shlex
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from toolctl.errors import NameConflict, NotFound, RegistryError, UsageError
from toolctl.names import fold
from toolctl.registry.index import Registry
from toolctl.registry.loader import Definition, parse_file
from toolctl.settings import Settings
from toolctl.targets import distinct, input_file

LOCK_NAME = ".toolctl.lock"


@dataclass(frozen=True)
class Entry:
    """A descriptor about to be written: its validated definition and its raw table."""

    definition: Definition
    table: dict[str, Any]


@dataclass(frozen=True)
class Written:
    """What `register` did with one entry: ``registered`` it (a new file), ``replaced``
    the definition in ``path``, or left it ``unchanged`` (the same definition is in force)."""

    kind: str
    name: str
    path: Path
    action: str = "registered"

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "file": str(self.path), "action": self.action}

    def describe(self, verb: str = "registered", into: str = "in") -> str:
        """One line saying what was done (``verb`` for a new entry: "imported" for imports)."""
        if self.action == "unchanged":
            return f"unchanged {self.kind} '{self.name}' in {self.path} (already in force)"
        verb = "replaced" if self.action == "replaced" else verb
        return f"{verb} {self.kind} '{self.name}' {into} {self.path}"


def register_files(
    files: Sequence[Path], settings: Settings, *, replace: bool = False
) -> list[Written]:
    """`toolctl register`: every entry of ``files`` (default: the descriptor files of the
    working directory) written, or none (see ``register``)."""
    from toolctl.registry.directories import require_directories

    require_directories(settings)  # a --registry typo must not become a new registry
    chosen = files or descriptor_files(Path.cwd())
    entries = read_entries(distinct(chosen))
    defining = {entry.definition.file for entry in entries}
    for file in files:  # a file named that defines nothing: a mistyped table, likely
        if str(file) not in defining:
            raise UsageError(
                f"{file} defines nothing: no [[tool]], [[service]], [[action]] or [[group]] "
                "table; nothing was registered"
            )
    return register(entries, settings, replace=replace)


def read_entries(files: Sequence[Path]) -> list[Entry]:
    """Validate descriptor files; any problem refuses the whole batch, listing every one."""
    entries: list[Entry] = []
    problems: list[str] = []
    for file in files:
        input_file(file, "descriptor file", regular=True)
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


def descriptor_files(directory: Path) -> list[Path]:
    """The descriptor files of a directory (what `register` takes with no FILE): each
    ``*.toml`` whose tables are all [[tool]], [[service]], [[action]] or [[group]] (or a
    misspelling of one, ``[[sevice]]``: taken, so that reading it says what is wrong
    rather than the file being passed over in silence), so ``toolctl.toml``,
    ``pyproject.toml`` and the like are passed over: a plural (mise's ``[tools]``) is no
    misspelling, nor is a ``[tool]`` holding only tables (``[tool.black]``)."""
    import difflib
    import tomllib

    from toolctl.names import KINDS

    plurals = {f"{kind}s" for kind in KINDS}

    def descriptor_table(key: str, value: object) -> bool:
        if key in KINDS:  # [tool.ruff] alone: another program's settings
            return not (
                isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())
            )
        close = difflib.get_close_matches(key, KINDS, n=1, cutoff=0.8)
        return bool(close) and key not in plurals

    found = []
    for path in sorted(directory.glob("*.toml")):
        try:
            document = tomllib.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            found.append(path)  # read_entries says what is wrong with it
            continue
        if document and all(descriptor_table(key, value) for key, value in document.items()):
            found.append(path)
    if not found:
        raise UsageError(
            f"no descriptor files in {directory}",
            hint="pass FILE..., or make one with `toolctl new tool NAME`",
        )
    return found


def target_directory(settings: Settings) -> Path:
    """The first writable directory on the search path (created if its parent allows);
    never the announcements' directory."""
    why: list[str] = []
    for directory in settings.without_announcements().search_path:
        if directory.is_dir() and os.access(directory, os.W_OK | os.X_OK):
            return directory
        if not directory.exists() and os.access(_existing_parent(directory), os.W_OK):
            return directory
        if directory.is_dir():
            why.append(f"{directory} cannot be written (read-only, or not yours)")
        elif directory.exists() or directory.is_symlink():
            why.append(f"{directory} is not a directory")
        else:
            why.append(
                f"{directory} cannot be made ({_existing_parent(directory)} cannot be written)"
            )
    if settings.explicit_registry:
        hint = "make it writable, or pass another --registry DIR"
    else:
        hint = "pass --registry DIR or set TOOLCTL_REGISTRY"
    raise RegistryError(
        "no writable registry directory on the search path: " + "; ".join(why), hint=hint
    )


def _existing_parent(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def register(
    entries: Sequence[Entry], settings: Settings, *, replace: bool | None = None
) -> list[Written]:
    """Write every entry, or none of them if any name is taken or any target is unusable.

    An entry whose definition is already in force, the same but for how its paths are
    spelt, is left ``unchanged``; with ``replace``, one that differs from the definition
    in the directory register writes to replaces it. Anything else holding the name (an
    earlier or later directory, a look-alike) refuses the batch: first wins decides.
    ``replace`` None: the command offers no --replace (an import), and a refusal's advice
    does not name it.
    """
    settings = settings.without_announcements()  # register never writes announced things
    target = target_directory(settings)
    with locked(target):
        registry = Registry.open(settings, full=True)
        plan = [_plan(target, entry, registry, settings, replace) for entry in _once(entries)]
        done: list[tuple[Written, bytes | None]] = []
        try:
            for entry, written in plan:
                if written.action != "unchanged":
                    done.append(_write(_for_file(entry, written.path, settings), written))
                else:
                    done.append((written, None))
        except OSError as exc:
            _take_back(done)
            raise RegistryError(
                f"cannot write {exc.filename or target}: {exc.strerror or exc}; "
                "nothing was registered"
            ) from None
        return [written for written, _ in done]


def given_again(new: Definition, earlier: Definition) -> bool:
    """Whether ``new`` repeats ``earlier`` of the same batch from another file: the same
    name and definition (real configs copy each other's blocks), kept once. Within one
    file, a name given twice is a clash all the same (the file would shadow itself)."""
    return new.name == earlier.name and new.file != earlier.file and same_definition(new, earlier)


def _once(entries: Sequence[Entry]) -> list[Entry]:
    """The batch with each entry given again (``given_again``) kept once (it would be
    `unchanged` given after); NameConflict naming every other pair that shares a
    name or a look-alike of one: first wins would drop the later one unseen."""
    seen: dict[tuple[str, str], Definition] = {}
    kept: list[Entry] = []
    clashes: list[str] = []
    for entry in entries:
        new = entry.definition
        earlier = seen.setdefault((new.kind, fold(new.name)), new)
        if earlier is new:
            kept.append(entry)
        elif not given_again(new, earlier):
            clashes.append(
                f"{new.kind} '{new.name}' ({new.file}:{new.line}) clashes with "
                f"'{earlier.name}' ({earlier.file}:{earlier.line})"
            )
    if clashes:
        raise NameConflict(
            f"{clashes[0]} in the same batch"
            + (f" (and {len(clashes) - 1} more)" if len(clashes) > 1 else ""),
            details=clashes[1:],
        )
    return kept


def _plan(
    target: Path, entry: Entry, registry: Registry, settings: Settings, replace: bool | None
) -> tuple[Entry, Written]:
    """What to do with an entry; refuses (before anything is written) what cannot be done."""
    new = entry.definition
    taken = registry.definitions(new.kind, new.name)
    similar = registry.confusable_with(new.kind, new.name)
    if taken and similar is None and same_definition(new, taken[0]):
        return entry, Written(new.kind, new.name, Path(taken[0].file), "unchanged")
    if similar is not None:
        raise NameConflict(
            f"{new.kind} '{new.name}' is confusable with '{similar.name}' "
            f"defined in {similar.file}:{similar.line}",
            hint="names that differ only in case or in which of - _ . separates words are refused",
        )
    if taken:
        holder = Path(taken[0].file)
        _refuse_taken(new, taken[0], target, settings, replace)
        return entry, Written(new.kind, new.name, holder, "replaced")
    return entry, Written(new.kind, new.name, _new_path(target, new.kind, new.name))


def same_definition(new: Definition, old: Definition) -> bool:
    """Whether two definitions say the same, their file-relative paths made absolute."""
    from toolctl.registry.paths import absolute

    # what `import mcp` wrote into a service (the pins of its resources and prompts) is
    # no difference from the same server given again without them (`mcp add`, a config)
    pinned = "pins" in (new.data.get("mcp") or {})

    def comparable(definition: Definition) -> dict[str, Any]:
        base = Path(os.path.abspath(definition.file)).parent
        data = absolute(definition.kind, definition.data, base)
        if not pinned and isinstance(data.get("mcp"), dict):
            data = {**data, "mcp": {k: v for k, v in data["mcp"].items() if k != "pins"}}
        return {k: v for k, v in data.items() if k != "runtime"}  # the index resolves it

    return new.kind == old.kind and comparable(new) == comparable(old)


def _refuse_taken(
    new: Definition, holder: Definition, target: Path, settings: Settings, replace: bool | None
) -> None:
    """NameConflict unless ``replace`` may update ``holder``: a file of ``target`` holding
    that one entry."""
    where = f"{holder.file}:{holder.line}"
    if not Path(holder.file).is_relative_to(target):
        before = _index_of(Path(holder.file), settings) < settings.search_path.index(target)
        place = "an earlier" if before else "a later"
        raise NameConflict(
            f"{new.kind} '{new.name}' is already defined in {where}, {place} registry "
            f"directory than {target} (where register writes)",
            hint="first definition wins; pick another name"
            + (" or change it there" if before else ", or unregister that one first"),
        )
    if not replace:
        update = (
            "pass --replace to update it"
            if replace is False
            else f"'toolctl unregister {new.kind} {new.name}"
            + (" --with-tools" if new.kind == "service" else "")
            + "' first to change it"
        )
        raise NameConflict(
            f"{new.kind} '{new.name}' is already defined in {where}, differently",
            hint=f"first definition wins: {update}, or pick another name",
        )
    _only_entry(holder, "replace")


def _index_of(file: Path, settings: Settings) -> int:
    for index, root in enumerate(settings.search_path):
        if file.is_relative_to(root):
            return index
    return len(settings.search_path)


def _new_path(target: Path, kind: str, name: str) -> Path:
    """Where a new entry goes; refuses (before anything is written) what cannot be written."""
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
    return _free_path(directory, name)


def _for_file(entry: Entry, path: Path, settings: Settings) -> Entry:
    """The entry with the paths it gives relative to its file rewritten for ``path``."""
    from toolctl.registry.paths import rewrite

    definition = entry.definition
    source = Path(os.path.abspath(definition.file)).parent
    project = settings.project.root if settings.project else None
    table = rewrite(definition.kind, entry.table, source, path.parent, project)
    return Entry(definition, table)


def _take_back(done: Sequence[tuple[Written, bytes | None]]) -> None:
    """All or nothing: undo what this batch wrote (new files removed, old contents back)."""
    for written, old in done:
        if written.action == "registered":
            written.path.unlink(missing_ok=True)
        elif written.action == "replaced" and old is not None:
            written.path.write_bytes(old)


def _write(entry: Entry, written: Written) -> tuple[Written, bytes | None]:
    """Write one entry's file (a new one, or in place of the one it replaces); returns
    what was there before."""
    from toolctl.registry.dumping import registry_toml

    kind, name, path = written.kind, written.name, written.path
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    content = registry_toml({kind: [entry.table]}).encode()
    old = path.read_bytes() if written.action == "replaced" else None
    temporary = directory / f".{name}.{os.getpid()}.tmp"
    try:
        with open(temporary, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        if old is None:
            os.link(temporary, path)  # never replaces a file, even one written by hand
        else:
            os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    _fsync_directory(directory)
    return written, old


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


class Unregistered(NamedTuple):
    """What `unregister` removed, and the shadowed definition now in force, if any."""

    removed: Definition
    now: Definition | None
    tools: tuple[Definition, ...] = ()
    """With ``with_tools``: the service's tools, removed with it."""


def unregister(
    kind: str, name: str, settings: Settings, *, with_tools: bool = False, force: bool = False
) -> Unregistered:
    """Remove the file that defines (kind, name) (``with_tools``: a service's tools too).

    Only a file holding that one entry is removed: a file with other entries is refused
    rather than rewritten, because rewriting TOML would drop its comments and layout. A
    definition in force that others name (a service its tools, a tool the actions and
    groups naming it) is refused unless ``force``: they would name nothing, and `check`
    and `run` would fail on them. Nothing is removed unless all of it can be.
    """
    from toolctl.registry.directories import require_directories

    if with_tools and kind != "service":
        raise UsageError(f"--with-tools removes a service's tools; {kind} '{name}' is no service")
    from toolctl.registry.index.reader import named

    named(kind, name)
    require_directories(settings)  # a --registry typo is said, not 'not found'
    settings = settings.without_announcements()  # an announced name is no file to remove
    registry = Registry.open(settings, full=True)
    # not resolve(): a look-alike quarantined (never in force) is removed all the same
    defined = registry.definitions(kind, name)
    if not defined:
        raise registry.not_found(kind, name)
    in_force = registry.confusable_with(kind, name) is None
    if in_force:  # (a quarantined look-alike is removed wherever it is)
        _refuse_elsewhere(defined[0], settings)
    root = _root_of(Path(defined[0].file), settings)
    with locked(root):
        registry = Registry.open(settings, full=True)
        found = registry.definitions(kind, name)
        if not found:
            raise NotFound(kind, name)
        tools = tuple(t for t in registry.referrers(kind, name) if t.kind == "tool")
        tools = tools if with_tools else ()
        for tool in tools:
            _refuse_elsewhere(tool, settings)
        gone = [found[0], *tools]
        for definition in gone:
            _only_entry(definition, "remove")
        if in_force and not force:
            _refuse_named(registry, gone, with_tools)
        for definition in gone:
            os.unlink(definition.file)
            _fsync_directory(Path(definition.file).parent)
    return Unregistered(found[0], found[1] if len(found) > 1 else None, tools)


def _only_entry(definition: Definition, doing: str) -> None:
    """RegistryError unless ``definition``'s file holds it alone and reads cleanly: only
    such a file is rewritten or removed (the others, and every comment, would go too)."""
    parsed = parse_file(definition.file)
    others = sum(len(tables) for tables in parsed.raw.values()) - 1
    if others or parsed.problems:
        raise RegistryError(
            f"cannot {doing} {definition.kind} '{definition.name}': {definition.file} "
            f"defines {others} other entr{'y' if others == 1 else 'ies'} besides it",
            hint="edit that file by hand",
        )


def _refuse_named(registry: Registry, gone: list[Definition], with_tools: bool) -> None:
    """RegistryError when a definition in force names one of ``gone`` that no shadowed
    definition replaces: it would name nothing."""
    leaving = {(d.kind, d.name) for d in gone if len(registry.definitions(d.kind, d.name)) == 1}
    named: dict[tuple[str, str], list[str]] = {}
    for kind, name in sorted(leaving):
        for referrer in registry.referrers(kind, name):
            if (referrer.kind, referrer.name) not in leaving:
                named.setdefault((kind, name), []).append(f"{referrer.kind} '{referrer.name}'")
    if not named:
        return
    said = [
        f"{kind} '{name}' is named by "
        + ", ".join(by[:5])
        + (f" and {len(by) - 5} more" if len(by) > 5 else "")
        for (kind, name), by in named.items()
    ]
    first = gone[0]
    tools_only = all(by.startswith("tool ") for each in named.values() for by in each)
    hint = (
        "pass --with-tools to remove its tools too, or --force to leave them naming nothing"
        if first.kind == "service" and tools_only and not with_tools
        else "unregister those first, or pass --force to leave them naming nothing"
    )
    raise RegistryError("; ".join(said) + "; nothing was removed", hint=hint)


def _refuse_elsewhere(definition: Definition, settings: Settings) -> None:
    """unregister removes only from the directory register writes to: a definition in force
    from another one (the user registry, in a project) is refused, its directory named.
    (A quarantined look-alike is removed wherever it is: that is the fix its quarantine
    asks for.)"""
    target = target_directory(settings)
    if Path(definition.file).is_relative_to(target):
        return
    home = next((d for d in settings.search_path if Path(definition.file).is_relative_to(d)), None)
    where = home if home is not None else Path(definition.file).parent
    raise RegistryError(
        f"{definition.kind} '{definition.name}' is defined in {definition.file}, not in "
        f"{target} where register writes; nothing was removed",
        hint=f"to remove it there: toolctl unregister {definition.kind} "
        f"{shlex.quote(definition.name)} -r {shlex.quote(str(where))}",
    )


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
    path = directory / LOCK_NAME
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        from toolctl.settings import own_file_unusable

        unusable = own_file_unusable(exc)  # the user registry under an unusable XDG_DATA_HOME
        if unusable is not None:
            raise unusable from None
        raise RegistryError(
            f"cannot make the registry directory {directory}: {exc.strerror or exc}",
            hint="make its parent a writable directory, or use another registry",
        ) from None
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise RegistryError(
            f"cannot take the write lock {path}: {exc.strerror or exc}",
            hint=f"{LOCK_NAME} must be a file toolctl can write; remove or fix it",
        ) from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        for stale in [*directory.glob(".*.tmp"), *directory.glob("*/.*.tmp")]:
            stale.unlink(missing_ok=True)
        yield
    finally:
        os.close(descriptor)
