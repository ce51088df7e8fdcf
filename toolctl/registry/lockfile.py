"""`toolctl.lock`: which file defines each name in force, and a hash of its definition.

First wins follows file order, so a file added later that sorts earlier (``0000.toml``), or
a symlink, can take a name over and still pass `check`. A lock records what was in force
when it was written; `check --locked` (and `check --strict` when a lock exists) reports
every name that moved, changed, appeared or vanished since. The lock is TOML, one table
per name, sorted, so a change to the registry is a readable diff. Its name does not end
in ``.toml``: the registry walk never reads it as a registry file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, NamedTuple

from toolctl.errors import RegistryError
from toolctl.findings import Finding
from toolctl.names import KINDS
from toolctl.registry.index import Registry
from toolctl.registry.loader import Definition
from toolctl.settings import Settings

LOCK_FILE = "toolctl.lock"
LOCK_VERSION = 1
LOCK_CODE = "lock"
_HEADER = (
    "# Written by `toolctl lock`: the names in force, their files and definitions.\n"
    "# `toolctl check --locked` reports every name that moved, changed, appeared or vanished.\n"
)


class Pin(NamedTuple):
    """One name as the lock records it; ``extra`` holds pins known for its runtime."""

    file: str
    definition: str
    extra: dict[str, str]


def definition_hash(data: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a normalised descriptor."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def _extra(definition: Definition) -> dict[str, str]:
    """Pins known without asking anyone: a container image given by digest, an MCP pin."""
    extra: dict[str, str] = {}
    image = (definition.data.get("container") or {}).get("image") or ""
    if "@sha256:" in image:
        extra["image_digest"] = image.split("@", 1)[1]
    pin = (definition.data.get("mcp") or {}).get("pin")
    if isinstance(pin, str):
        extra["mcp_pin"] = pin
    return extra


def current(registry: Registry, base: Path) -> dict[tuple[str, str], Pin]:
    """Every name in force, with its file relative to ``base`` (the lock's directory);
    inside a project, not those of the user registry (see ``personal``)."""
    pins: dict[tuple[str, str], Pin] = {}
    mine = personal(registry.settings)
    for kind in KINDS:
        for definition in registry.winners(kind):
            if mine is not None and definition.file.startswith(mine):
                continue
            file = _stable(os.path.relpath(definition.file, base))
            pins[(kind, definition.name)] = Pin(
                file, definition_hash(definition.data), _extra(definition)
            )
    return pins


def personal(settings: Settings) -> str | None:
    """The user registry's directory (with a trailing separator) when it follows a
    project's: what it holds is one person's, on one machine, so a project's lock neither
    records nor checks it (CI runs without it). It can never take a project's name over:
    it comes after."""
    if "project" in settings.sources and "user" in settings.sources:
        return os.path.join(settings.user_registry, "")
    return None


def lock(settings: Settings) -> tuple[Path, int]:
    """`toolctl lock`: ``write_lock`` into a registry directory that exists."""
    from toolctl.registry.directories import require_directories

    require_directories(settings)
    if settings.announced is not None:  # announced names are pinned as they are now
        from toolctl.registry.announced import refresh
        from toolctl.reporting import Quiet

        refresh(settings, Quiet())
    return write_lock(settings)


def write_lock(settings: Settings) -> tuple[Path, int]:
    """Write the lock into the first writable registry directory; returns it and the count."""
    import tomli_w

    from toolctl.registry.writer import locked, target_directory

    target = target_directory(settings)
    with locked(target):
        registry = Registry.open(settings, full=True)
        if count := registry.error_count(strict=False):
            # an entry an error skips would be left out of the lock without a word, and
            # `check --locked` would then call its return a change
            raise RegistryError(
                f"the registry has {count} error(s); nothing was locked",
                hint="fix them first: 'toolctl check' lists them",
            )
        pins = current(registry, target)
        document: dict[str, Any] = {"version": LOCK_VERSION}
        for (kind, name), pin in sorted(pins.items()):
            table = {"file": pin.file, "definition": pin.definition, **sorted_dict(pin.extra)}
            document.setdefault(kind, {})[name] = table
        path = target / LOCK_FILE
        temporary = target / f".{LOCK_FILE}.{os.getpid()}.tmp"
        try:
            temporary.write_text(_HEADER + tomli_w.dumps(document))
            os.replace(temporary, path)
        except OSError as exc:
            temporary.unlink(missing_ok=True)
            raise RegistryError(
                f"cannot write {path}: {exc.strerror or exc}",
                hint=f"{LOCK_FILE} must be a file toolctl can replace; remove or fix it",
            ) from None
    return path, len(pins)


def sorted_dict(values: dict[str, str]) -> dict[str, str]:
    return dict(sorted(values.items()))


def find_lock(settings: Settings) -> Path | None:
    """The lock of the first registry directory on the search path that has one."""
    for directory in settings.search_path:
        candidate = directory / LOCK_FILE
        if candidate.is_file():
            return candidate
    return None


def read_lock(path: Path) -> dict[tuple[str, str], Pin]:
    import tomllib

    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise RegistryError(f"cannot read {path}: {exc}", hint="run 'toolctl lock' again") from None
    if document.get("version") != LOCK_VERSION:
        raise RegistryError(f"{path}: unknown lock version", hint="run 'toolctl lock' again")
    pins: dict[tuple[str, str], Pin] = {}
    for kind in KINDS:
        tables = document.get(kind, {})
        if not isinstance(tables, dict):
            raise RegistryError(f"{path}: '{kind}' is not a table", hint="run 'toolctl lock' again")
        for name, table in tables.items():
            if not isinstance(table, dict):
                raise RegistryError(
                    f"{path}: [{kind}.{name}] is not a table", hint="run 'toolctl lock' again"
                )
            extra = {k: str(v) for k, v in table.items() if k not in ("file", "definition")}
            pins[(kind, name)] = Pin(str(table.get("file")), str(table.get("definition")), extra)
    return pins


def compare(registry: Registry, lock: Path) -> list[Finding]:
    """Every difference between the names in force and the lock, as errors. A lock that
    cannot be read is one finding (at its line), the registry's others still told."""
    try:
        recorded = read_lock(lock)
    except RegistryError as exc:
        found = re.search(r"at line (\d+)", exc.message)
        line = int(found.group(1)) if found else 1
        message = f"{exc.message}; {exc.hint}".replace(str(lock), LOCK_FILE)
        return [Finding("error", LOCK_CODE, str(lock), line, message)]
    now = current(registry, lock.parent)
    where = {(d.kind, d.name): d for kind in KINDS for d in registry.winners(kind)}
    shown = str(lock)
    problems: list[Finding] = []
    for key in sorted(recorded.keys() | now.keys()):
        kind, name = key
        before, after = recorded.get(key), now.get(key)
        if after is None:
            holder = registry.confusable_with(kind, name)
            if holder is not None and registry.definitions(kind, name):
                # a look-alike (a file that sorts earlier) took the place of a locked name:
                # told at the newcomer, where a review sees it
                message = (
                    f"{kind} '{holder.name}' takes the place of '{name}' of {LOCK_FILE}: a "
                    f"look-alike, so '{name}' is quarantined; rename or remove this one"
                )
                problems.append(Finding("error", LOCK_CODE, holder.file, holder.line, message))
                continue
            message = f"{kind} '{name}' is in {LOCK_FILE} but no longer defined"
            problems.append(
                Finding("error", LOCK_CODE, shown, _pin_line(lock, kind, name), message)
            )
            continue
        definition = where[key]
        if before is None:
            message = f"{kind} '{name}' is new since {LOCK_FILE} was written"
        elif _stable(before.file) != after.file:
            changed = before.definition != after.definition or before.extra != after.extra
            message = (
                f"{kind} '{name}' moved from {_place(before.file)} (as locked)"
                f" to {_place(after.file)}" + (", and changed" if changed else "")
            )
        elif before.definition != after.definition or before.extra != after.extra:
            message = f"{kind} '{name}' changed since {LOCK_FILE} was written"
        else:
            continue
        if _stable(definition.file) == ANNOUNCED:  # not one machine's cache path, in CI
            problems.append(Finding("error", LOCK_CODE, ANNOUNCED, 1, message))
        else:
            problems.append(Finding("error", LOCK_CODE, definition.file, definition.line, message))
    return problems


def _pin_line(lock: Path, kind: str, name: str) -> int:
    """The line of ``[kind.name]`` (or ``[kind."name"]``) in the lock, else 1."""
    try:
        lines = lock.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return 1
    headers = {f"[{kind}.{name}]", f'[{kind}."{name}"]'}
    return next((n for n, line in enumerate(lines, 1) if line.strip() in headers), 1)


ANNOUNCED = "(announced)"
"""The file a lock gives an announced definition: where toolctl keeps it (a cache path,
one machine's and one broker URL's) would make the lock fail everywhere else."""


def _stable(file: str) -> str:
    """``file`` as a lock keeps it: an announcement's kept file is ``ANNOUNCED`` (locks
    written before said its cache path, read as the same)."""
    parts = Path(file).parts
    kept = any(parts[i : i + 2] == ("toolctl", "announced") for i in range(len(parts)))
    return ANNOUNCED if kept else file


def _place(file: str) -> str:
    """Where a pin says a definition is, for a message: an announcement as such."""
    return "an announcement" if _stable(file) == ANNOUNCED else file
